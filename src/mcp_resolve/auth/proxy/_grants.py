"""The proxy's own tokens: a grant per approval, JWT access tokens, rotating refresh tokens.

A `Grant` is one person's approval of one client (the scopes, the resource,
the identity claims the operator chose); every token is issued from one and
dies with it. Access tokens are JWTs (RFC 9068: `typ: at+jwt`, ES256, signed
with the current `SigningKeys` key, `aud` = the MCP resource) carrying the
grant's id (`gid`), and verifying one reads the grant: revoking a grant ends
its access tokens at once, on every worker, not when they expire.

Refresh tokens rotate: each use spends the token presented and issues the
next. The tokens of one grant's refresh family are `FAMILY.GENERATION.MAC`:
the family's random id, the token's generation (0, 1, 2 ...) and an
HMAC-SHA256 of both under the family's own random key, so the store keeps ONE
sealed record per family (its key, its current generation), never one per
token, however often a busy client refreshes. Presenting a genuine token of an
older generation means a copy is in other hands (a stolen token raced against
its owner): the whole grant is revoked, every access and refresh token of it
stops working, and the caller gets `invalid_grant` (RFC 9700 §4.14.2).

Rotation is one atomic claim (an `only_new` put naming the family and the
generation presented), then one write of the family's record at the next
generation: of two workers handed one token at once exactly one rotates, and
the other, once the family has moved on, revokes. A store failure before the
write undoes the claim, so the client's retry of the same token works instead
of counting as reuse; a claim that could not be undone (the store down) ends by
itself within a minute, and until then the retry is answered "try again".

Verification fails closed: a store that does not answer means the grant
cannot be shown to be alive, so the token is refused (logged with the reason,
never with the token).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from joserfc import jwt
from joserfc.errors import JoseError

from ...errors import MCPError
from ..provider import OAuthToken, RefreshToken, TemporarilyUnavailable, TokenError
from ..tokens import DEFAULT_LEEWAY_S, AccessToken, check_leeway, lifetime_refusal, matching_audience
from ._keys import SigningKeys
from ._vault import SealedStore, secret_name

__all__ = ["RESERVED_CLAIMS", "Grant", "Grants"]

logger = logging.getLogger("mcp_resolve.auth")

RESERVED_CLAIMS = frozenset(
    {"iss", "aud", "sub", "client_id", "scope", "iat", "exp", "nbf", "jti", "gid", "azp", "typ", "cnf"}
)
"""Claims the proxy writes itself; a grant's own `claims` may not use these names."""
_MAX_TOKEN_BYTES = 16 * 1024
_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_ALGORITHMS = ["ES256"]
_REFRESH_TOKEN = re.compile(r"([A-Za-z0-9_-]{22})\.(0|[1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})")
"""A refresh token of ours: family id, generation, MAC (never a JWT: its middle part is digits)."""
_CLAIM_TTL_S = 60.0
"""How long a rotation's claim lives: far longer than a rotation takes (a few store operations)."""
_CLAIM_WAIT_S = 5.0
"""How long a refresh waits for a rotation of the same token under way elsewhere to end."""

UpstreamCheck = Callable[["Grant"], Awaitable[None]]
"""Called with the grant before a refresh token is spent: raise to refuse (the token stays usable)."""


class _Refused(Exception):
    """Why a token was refused, for the log (never the token)."""


@dataclass(frozen=True)
class Grant:
    """One person's approval of one client: what tokens are issued from, and what ends them."""

    grant_id: str
    client_id: str
    subject: str
    scopes: tuple[str, ...]
    resource: str | None
    claims: dict[str, Any] = field(hash=False)
    """The identity claims the operator selected; they go into each access token under these names."""
    expires_at: float
    """The grant's own end: no token of it lives longer."""

    def to_json(self) -> dict[str, Any]:
        return {
            "grant_id": self.grant_id,
            "client_id": self.client_id,
            "subject": self.subject,
            "scopes": list(self.scopes),
            "resource": self.resource,
            "claims": self.claims,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant | None:
        try:
            grant = cls(
                grant_id=str(data["grant_id"]),
                client_id=str(data["client_id"]),
                subject=str(data["subject"]),
                scopes=tuple(str(s) for s in data["scopes"]),
                resource=None if data["resource"] is None else str(data["resource"]),
                claims=dict(data["claims"]),
                expires_at=float(data["expires_at"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return grant


class Grants:
    """Grants and the tokens issued from them, kept sealed in a `SealedStore` every worker shares.

    `issuer` is the `iss` of every access token (this server's authorization
    server URL). `audience` is the `aud` of tokens whose grant names no
    resource. `keys.keep_s` must be at least `access_token_ttl_s`, so a token
    verifies for its whole life after its key rotates out.
    """

    def __init__(
        self,
        store: SealedStore,
        keys: SigningKeys,
        *,
        issuer: str,
        access_token_ttl_s: float = 3600,
        refresh_token_ttl_s: float = 30 * 86400,
        audience: str | None = None,
        leeway_s: float = DEFAULT_LEEWAY_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not issuer:
            raise ValueError("issuer must be this authorization server's URL")
        if not 0 < access_token_ttl_s <= refresh_token_ttl_s:
            raise ValueError("token lifetimes must be positive, the refresh token's no shorter")
        if keys.keep_s < access_token_ttl_s:
            raise ValueError("SigningKeys(keep_s=...) must be at least access_token_ttl_s")
        self.store = store
        self.keys = keys
        self.issuer = issuer
        self.access_token_ttl_s = float(access_token_ttl_s)
        self.refresh_token_ttl_s = float(refresh_token_ttl_s)
        self.audience = audience
        self.leeway_s = check_leeway(leeway_s)
        self._clock = clock

    # -- grants ---------------------------------------------------------------------------------

    async def create(self, grant: Grant) -> None:
        """Keep `grant` until its `expires_at`. ValueError if it already ended or uses a reserved claim."""
        reserved = sorted(RESERVED_CLAIMS & set(grant.claims))
        if reserved:
            raise ValueError(
                f"a grant's claims may not be named {', '.join(reserved)}: the proxy writes those"
            )
        ttl = grant.expires_at - float(self._clock())
        if ttl <= 0:
            raise ValueError("the grant has already ended")
        await self.store.put(_grant_name(grant.grant_id), grant.to_json(), ttl=ttl)

    async def get(self, grant_id: str) -> Grant | None:
        """The grant, while it is alive (neither revoked nor ended)."""
        data = await self.store.get(_grant_name(grant_id))
        grant = None if data is None else Grant.from_json(data)
        if grant is None or grant.grant_id != grant_id or grant.expires_at <= float(self._clock()):
            return None
        return grant

    async def revoke(self, grant_id: str) -> None:
        """End the grant: every access and refresh token issued from it stops working, on every worker."""
        await self.store.delete(_grant_name(grant_id))

    # -- issuing --------------------------------------------------------------------------------

    async def issue(self, grant_id: str, scopes: Sequence[str] | None = None) -> OAuthToken:
        """An access token and a new refresh family for the grant (an authorization code's exchange).

        `scopes` within the grant's (None: all of them). `TokenError`
        `invalid_grant` when the grant ended, `invalid_scope` beyond it.
        """
        grant = await self.get(grant_id)
        if grant is None:
            raise TokenError("invalid_grant", "the grant has ended or was revoked")
        chosen = _within(scopes, grant.scopes)
        return await self._tokens(grant, chosen, chosen, float(self._clock()))

    async def refresh(
        self,
        client_id: str,
        refresh_token: str,
        scopes: Sequence[str],
        *,
        check: UpstreamCheck | None = None,
    ) -> OAuthToken:
        """Rotate: spend `refresh_token`, return a new access token (for `scopes`, empty: all the
        refresh token's) and a new refresh token. A token presented after it was spent revokes its grant.

        `check` (the proxy asking the upstream whether the person is still signed in) runs once the
        token is known good and before it is spent: what it raises refuses the refresh and leaves
        the token as it was.
        """
        found = await self._family(refresh_token)
        if found is None:
            raise TokenError("invalid_grant", "unknown or expired refresh token")
        fid, generation, record = found
        gid, own = str(record.get("gid")), tuple(record.get("scopes") or ())
        if generation < record["generation"]:
            await self._revoke_reused(gid)
            raise TokenError("invalid_grant", "the refresh token was already used; the grant is revoked")
        if record.get("client_id") != client_id:
            raise TokenError("invalid_grant", "the refresh token was issued to another client")
        chosen = _within(scopes or None, own)
        grant = await self.get(gid)
        if grant is None:
            await self.store.delete(_family_name(fid))
            raise TokenError("invalid_grant", "the grant has ended or was revoked")
        if check is not None:
            await check(grant)
        claim = secret_name("refresh-claim", f"{fid}.{generation}")
        await self._claim(claim, fid, generation, gid)
        try:
            current = await self.store.get(_family_name(fid))
            if current is None:
                raise TokenError("invalid_grant", "unknown or expired refresh token")
            if current.get("generation") != generation:  # rotated by another request in between
                await self._revoke_reused(gid)
                raise TokenError("invalid_grant", "the refresh token was already used; the grant is revoked")
            tokens = await self._tokens(
                grant, chosen, own, float(self._clock()), family=(fid, str(record["key"]), generation + 1)
            )
        except BaseException:
            # Nothing was rotated: undo the claim, so the client's retry of this token is not reuse.
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await self.store.delete(claim)
            raise
        with contextlib.suppress(MCPError):  # it ends by itself; the family has moved on anyway
            await self.store.delete(claim)
        return tokens

    async def _claim(self, claim: str, fid: str, generation: int, gid: str) -> None:
        """Win the rotation of generation `generation` of the family, or learn why not.

        Another request holding the claim is rotating the same token: wait for it. The family
        moving on means that request spent it (reuse: the grant is revoked); the claim let go
        means it failed (try again); still held after `_CLAIM_WAIT_S`, a failed rotation's claim
        could not be undone: `TemporarilyUnavailable`, until it ends by itself.
        """
        deadline = anyio.current_time() + _CLAIM_WAIT_S
        while not await self.store.put(claim, {"gid": gid}, ttl=_CLAIM_TTL_S, only_new=True):
            current = await self.store.get(_family_name(fid))
            if current is None:
                raise TokenError("invalid_grant", "unknown or expired refresh token")
            if current.get("generation") != generation:
                await self._revoke_reused(gid)
                raise TokenError("invalid_grant", "the refresh token was already used; the grant is revoked")
            if anyio.current_time() > deadline:
                raise TemporarilyUnavailable("this refresh token is being used by another request; try again")
            await anyio.sleep(0.05)

    async def load_refresh(self, client_id: str, refresh_token: str) -> RefreshToken | None:
        """The refresh token as issued, if it is alive and `client_id`'s; a spent one revokes its grant."""
        found = await self._family(refresh_token)
        if found is None:
            return None
        _fid, generation, record = found
        if generation < record["generation"]:
            await self._revoke_reused(str(record.get("gid")))  # a spent one: its grant is revoked now
            return None
        if record.get("client_id") != client_id:
            return None
        grant = await self.get(str(record.get("gid")))
        if grant is None:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=client_id,
            scopes=[str(s) for s in record.get("scopes") or ()],
            expires_at=int(record.get("expires_at", 0)),
            resource=grant.resource,
            subject=grant.subject,
        )

    async def revoke_token(self, token: str, *, client_id: str | None = None) -> None:
        """RFC 7009: an access or refresh token of ours ends its grant; anything else is ignored.

        With `client_id`, only a token issued to that client does anything.
        """
        try:
            if _REFRESH_TOKEN.fullmatch(token):
                found = await self._family(token)  # any generation: a spent token ends its grant too
                if found is None:
                    return
                gid, owner = found[2].get("gid"), found[2].get("client_id")
            elif _COMPACT_JWS.fullmatch(token) and len(token) <= _MAX_TOKEN_BYTES:
                claims = await self._signed_claims(token)
                gid, owner = claims.get("gid"), claims.get("client_id")
            else:
                return
        except _Refused as exc:
            logger.info("revocation ignored a token: %s", exc)
            return
        if not isinstance(gid, str) or (client_id is not None and owner not in (None, client_id)):
            return
        await self.revoke(gid)

    # -- verifying ------------------------------------------------------------------------------

    async def verify(self, token: str, *, audience: str) -> AccessToken | None:
        """The access token's meaning if it is ours, for `audience`, unexpired, and its grant alive; else None."""
        try:
            return await self._verify(token, audience)
        except _Refused as exc:
            logger.info("refused an access token: %s", exc)
        except MCPError:
            logger.warning(
                "refused an access token: the store did not answer, so its grant could not be checked"
            )
        except Exception as exc:  # a token that breaks the parser is still just a refused token
            logger.warning("refused an access token: it could not be checked (%s)", type(exc).__name__)
        return None

    async def _verify(self, token: str, audience: str) -> AccessToken:
        if len(token) > _MAX_TOKEN_BYTES or not _COMPACT_JWS.fullmatch(token):
            raise _Refused("not one of this server's access tokens")
        claims = await self._signed_claims(token)
        outside = lifetime_refusal(claims, self.leeway_s, require_exp=True, now=float(self._clock()))
        if outside is not None:
            raise _Refused(outside)
        found, _ = matching_audience(claims.get("aud"), (audience,))
        if found is None:
            raise _Refused("issued for another audience")
        gid, sub, client_id = claims.get("gid"), claims.get("sub"), claims.get("client_id")
        if not isinstance(gid, str) or not isinstance(sub, str) or not isinstance(client_id, str):
            raise _Refused("missing gid, sub or client_id")
        grant = await self.get(gid)
        if grant is None:
            raise _Refused("its grant has ended or was revoked")
        if grant.client_id != client_id or grant.subject != sub:
            raise _Refused("it does not match its grant")
        scope = claims.get("scope")
        return AccessToken(
            token=token,
            client_id=client_id,
            scopes=tuple(scope.split()) if isinstance(scope, str) else (),
            expires_at=int(claims["exp"]),
            resource=found,
            subject=sub,
            claims=claims,
        )

    async def _signed_claims(self, token: str) -> dict[str, Any]:
        """The claims of a token this issuer signed (signature, key, `typ`, `iss`); lifetime unchecked."""
        header = _header(token)
        if header.get("alg") != "ES256":
            raise _Refused(f"algorithm {str(header.get('alg'))[:20]!r} is not this server's")
        if header.get("typ") != "at+jwt":
            raise _Refused("not an access token (typ is not at+jwt)")
        kid = header.get("kid")
        if not isinstance(kid, str) or len(kid) > 100:
            raise _Refused("malformed key id")
        key = await self.keys.verification_key(kid)
        if key is None:
            raise _Refused("signed with a key this server does not have, or no longer keeps")
        try:
            claims = jwt.decode(token, key, algorithms=_ALGORITHMS).claims
        except JoseError as exc:
            raise _Refused(f"bad signature or structure ({exc.error})") from None
        if claims.get("iss") != self.issuer:
            raise _Refused("issued by another issuer")
        return claims

    # -- inside ---------------------------------------------------------------------------------

    async def _tokens(
        self,
        grant: Grant,
        scopes: tuple[str, ...],
        family_scopes: tuple[str, ...],
        now: float,
        *,
        family: tuple[str, str, int] | None = None,
    ) -> OAuthToken:
        """An access token, and the refresh token of generation `family` = (id, key, generation)
        (None: a new family, generation 0), written as the family's current one last of all."""
        expires_at = min(now + self.access_token_ttl_s, grant.expires_at)
        if expires_at - now < 1:
            raise TokenError("invalid_grant", "the grant has ended")
        kid, key = await self.keys.current()
        claims = {
            **grant.claims,
            "iss": self.issuer,
            "sub": grant.subject,
            "client_id": grant.client_id,
            "scope": " ".join(scopes),
            "iat": int(now),
            "exp": int(expires_at),
            "jti": secrets.token_urlsafe(16),
            "gid": grant.grant_id,
        }
        audience = grant.resource or self.audience
        if audience is not None:
            claims["aud"] = audience
        access = jwt.encode(
            {"alg": "ES256", "kid": kid, "typ": "at+jwt"}, claims, key, algorithms=_ALGORITHMS
        )
        refresh_until = min(now + self.refresh_token_ttl_s, grant.expires_at)
        refresh: str | None = None
        if refresh_until - now >= 1:
            fid, key, generation = family or (secrets.token_urlsafe(16), secrets.token_urlsafe(32), 0)
            record = {
                "gid": grant.grant_id,
                "client_id": grant.client_id,
                "scopes": list(family_scopes),
                "expires_at": refresh_until,
                "key": key,
                "generation": generation,
            }
            await self.store.put(_family_name(fid), record, ttl=refresh_until - now, only_new=family is None)
            refresh = f"{fid}.{generation}.{_mac(key, fid, generation)}"
        return OAuthToken(
            access_token=access,
            expires_in=int(expires_at) - int(now),
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def _family(self, refresh_token: str) -> tuple[str, int, dict[str, Any]] | None:
        """(family id, generation, family record) of a genuine refresh token of a live family; else None."""
        match = _REFRESH_TOKEN.fullmatch(refresh_token)
        if match is None:
            return None
        fid, generation, mac = match.group(1), int(match.group(2)), match.group(3)
        record = await self.store.get(_family_name(fid))
        if record is None or not isinstance(record.get("key"), str):
            return None
        current = record.get("generation")
        if not isinstance(current, int) or generation > current:
            return None
        if not hmac.compare_digest(mac, _mac(record["key"], fid, generation)):
            return None
        return fid, generation, record

    async def _revoke_reused(self, gid: str) -> None:
        logger.warning("a refresh token was presented a second time: its grant is revoked")
        await self.revoke(gid)


def _grant_name(grant_id: str) -> str:
    return f"grant:{grant_id}"


def _family_name(fid: str) -> str:
    return secret_name("refresh-family", fid)


def _mac(key: str, fid: str, generation: int) -> str:
    digest = hmac.new(key.encode(), f"{fid}.{generation}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _within(scopes: Sequence[str] | None, granted: tuple[str, ...]) -> tuple[str, ...]:
    if scopes is None:
        return granted
    beyond = [s for s in scopes if s not in granted]
    if beyond:
        raise TokenError("invalid_scope", f"scope {beyond[0][:60]} was not granted")
    return tuple(dict.fromkeys(scopes))


def _header(token: str) -> dict[str, Any]:
    """The JOSE header, read only to choose the key; nothing in it is trusted before the signature is."""
    segment = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _Refused("malformed header") from None
    if not isinstance(header, dict):
        raise _Refused("malformed header")
    return header
