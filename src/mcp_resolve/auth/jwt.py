"""JWTVerifier: self-contained access tokens (RFC 9068 style JWTs) checked against the issuer's keys.

Built on joserfc (by the author of Authlib): typed, maintained, with JWK sets
and algorithm allow-lists of its own, so the cryptography and the JOSE
parsing are not ours to get wrong. What is ours is policy, and it fails
closed: asymmetric algorithms only (`alg: none` and HS256 signed with the
public key are refused before any key is looked at), `exp` required, `nbf`,
`iat`, `iss` and `aud` checked, the audience being this server's resource
URL (RFC 8707). Every refusal is logged with its reason at INFO, never with
the token.

A token accepted once is remembered by its SHA-256 (never the token itself as
a key), so the next request that carries it skips the signature check, the
costly part. A remembered token is refused again as soon as its lifetime ends
(`lifetime_refusal`, the same rule), and is only reused while the key that
signed it is still the one the key set gives for its `kid` (a key retired
from the JWKS, or a JWKS past its TTL and unreachable, refuses it like a
fresh token). The memory is bounded by entries and by bytes, oldest first.
The remembered AccessToken is returned as is; the HTTP transport hands each
request its own copy of its claims (`request_copy`), so no request changes
what the next one with the same token reads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jws import JWSRegistry

from .jwks import JWKSKeys, KeyUnavailable, StaticKey, load_public_key
from .tokens import (
    DEFAULT_LEEWAY_S,
    AccessToken,
    check_leeway,
    check_scope,
    lifetime_refusal,
    matching_audience,
)

if TYPE_CHECKING:
    from .tokens import AuthSettings

__all__ = ["DEFAULT_ALGORITHMS", "MAX_TOKEN_BYTES", "JWTVerifier", "jose_header"]

logger = logging.getLogger("mcp_resolve.auth")

DEFAULT_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "Ed25519",
)
"""Asymmetric signatures only. `EdDSA` (deprecated by RFC 9864) may be allowed explicitly."""
_ALLOWED = frozenset({*DEFAULT_ALGORITHMS, "EdDSA", "Ed448"})
MAX_TOKEN_BYTES = 16 * 1024
"""Longer tokens are refused unread (real access tokens are one or two kilobytes)."""
DEFAULT_TOKEN_CACHE_SIZE = 10_000
DEFAULT_TOKEN_CACHE_BYTES = 16 * 1024 * 1024
_ENTRY_OVERHEAD = 2048
"""What an accepted token costs in memory beyond its text: the decoded claims (at most the payload,
which is part of the token), the AccessToken and the cache entry. Counted at three times the token
length plus this, a generous estimate, so the byte bound holds whatever the claims look like."""
_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


class _Refused(Exception):
    """Why a token was refused, for the log."""


class _NotAJWT(_Refused):
    """The token is not a JWS at all: most often an opaque token from a provider that issues those."""


_NOT_A_JWT = (
    "not a signed JWT (three base64url segments): if your authorization server issues opaque access "
    "tokens, verify them with IntrospectionVerifier, or have it issue JWT access tokens for this resource"
)


class _ClaimsNoClock(jwt.JWTClaimsRegistry):
    """joserfc's claim checks (`iss`, the types of `sub`, `jti`, `aud`) without its clock.

    `exp`, `nbf` and `iat` go by `lifetime_refusal`, the skew rule every
    verifier and the bearer check share, so `leeway_s` means one thing.
    """

    def validate_exp(self, value: object) -> None:
        pass

    def validate_nbf(self, value: object) -> None:
        pass

    def validate_iat(self, value: object) -> None:
        pass


def jose_header(token: str) -> dict[str, Any] | None:
    """The JOSE header of a compact JWS (three segments), or None when it is not one. Read only to
    choose the key and the algorithm: nothing in it is trusted before the signature is checked."""
    if token.count(".") != 2:
        return None
    segment = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return header if isinstance(header, dict) else None


def _header(token: str) -> dict[str, Any]:
    header = jose_header(token)
    if header is None:
        raise _Refused("malformed header")
    return header


def _scopes(claims: dict[str, Any]) -> tuple[str, ...]:
    """`scope` (RFC 9068: space-separated) or `scp` (a list, or a string, as some providers write it)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        return tuple(s for s in value if isinstance(s, str))
    return ()


class _Accepted:
    """A verified token, kept by the hash of its text until it expires or the cache drops it."""

    __slots__ = ("access", "alg", "key", "kid", "size")

    def __init__(self, access: AccessToken, kid: str | None, alg: str, key: Any, size: int) -> None:
        self.access, self.kid, self.alg, self.key, self.size = access, kid, alg, key, size


class JWTVerifier:
    """Verify JWT access tokens with a JWKS (`jwks_uri`, cached and rotated) or a fixed `public_key`.

    `issuer` and `audience` default to the `AuthSettings` of the server this
    verifier protects (`issuer_url` and `resource_server_url`): a token must
    have been issued by that authorization server for this very server.
    `audience` may list several accepted values. `required_scopes` are needed
    by every token (a token without them is refused as invalid). `leeway_s`
    absorbs clock skew on `exp`, `nbf` and `iat` alike (`lifetime_refusal`). The JWKS is kept
    `jwks_cache_ttl_s`; an unknown key id refetches it at most once every
    `jwks_refetch_interval_s`; `timeout_s` bounds each fetch as a whole.
    Accepted tokens are remembered (by hash) for their lifetime, at most
    `token_cache_size` of them and `token_cache_bytes` in all (0 turns it off).
    The authorization server must issue JWT access tokens: an opaque one is
    refused (use `IntrospectionVerifier` for those).
    """

    def __init__(
        self,
        *,
        jwks_uri: str | None = None,
        public_key: Any = None,
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        algorithms: Sequence[str] | None = None,
        required_scopes: Sequence[str] | None = None,
        leeway_s: float = DEFAULT_LEEWAY_S,
        jwks_cache_ttl_s: float = 3600.0,
        jwks_refetch_interval_s: float = 30.0,
        timeout_s: float = 5.0,
        http_client: httpx.AsyncClient | None = None,
        token_cache_size: int = DEFAULT_TOKEN_CACHE_SIZE,
        token_cache_bytes: int = DEFAULT_TOKEN_CACHE_BYTES,
    ) -> None:
        if (jwks_uri is None) == (public_key is None):
            raise ValueError("JWTVerifier needs exactly one of jwks_uri= and public_key=")
        chosen = tuple(algorithms or DEFAULT_ALGORITHMS)
        refused = [alg for alg in chosen if alg not in _ALLOWED]
        if refused:
            raise ValueError(
                f"JWTVerifier accepts asymmetric signature algorithms only, not {', '.join(refused)}: "
                f"'none' is no signature, and an HMAC key would have to be shared ({', '.join(sorted(_ALLOWED))})"
            )
        self.algorithms = chosen
        self.issuer = issuer
        self.audience: tuple[str, ...] | None = (
            None if audience is None else (audience,) if isinstance(audience, str) else tuple(audience)
        )
        self.required_scopes = tuple(check_scope(s) for s in required_scopes or ())
        self.leeway_s = check_leeway(leeway_s)
        self._told_not_a_jwt = False
        if token_cache_size < 0 or token_cache_bytes < 0:
            raise ValueError("token_cache_size and token_cache_bytes must not be negative")
        self.token_cache_size = token_cache_size
        self.token_cache_bytes = token_cache_bytes
        self._accepted: OrderedDict[bytes, _Accepted] = OrderedDict()
        self._accepted_bytes = 0
        self.signature_checks = 0
        """Signatures checked so far (for operators and tests: the token cache at work)."""
        self._registry = JWSRegistry(algorithms=list(chosen), strict_check_header=False)
        self.keys: StaticKey | JWKSKeys = (
            StaticKey(load_public_key(public_key))
            if public_key is not None
            else JWKSKeys(
                str(jwks_uri),
                cache_ttl_s=jwks_cache_ttl_s,
                refetch_interval_s=jwks_refetch_interval_s,
                timeout_s=timeout_s,
                http_client=http_client,
            )
        )

    def bind_auth_settings(self, settings: AuthSettings) -> None:
        """Take the protected server's issuer and resource URL where none were given (MCPServer calls this)."""
        if self.issuer is None:
            self.issuer = settings.issuer_url
        if self.audience is None:
            self.audience = (settings.resource_server_url,)
        self._forget_all()  # what was accepted under the old issuer and audience is not evidence now

    @property
    def cached_tokens(self) -> tuple[int, int]:
        """(entries, estimated bytes) of the accepted-token cache."""
        return len(self._accepted), self._accepted_bytes

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self._verify(token)
        except _NotAJWT as exc:  # said once as a warning: it is usually a configuration to fix
            level = logging.INFO if self._told_not_a_jwt else logging.WARNING
            logger.log(level, "refused an access token: %s", exc)
            self._told_not_a_jwt = True
        except _Refused as exc:
            logger.info("refused a JWT access token: %s", exc)
        except KeyUnavailable as exc:  # an outage was logged as an error where it happened
            logger.info("refused a JWT access token: %s", exc)
        except Exception as exc:  # a token that breaks the parser is still just a refused token
            logger.warning("refused a JWT access token: it could not be checked (%s)", type(exc).__name__)
        return None

    async def _verify(self, token: str) -> AccessToken:
        if len(token) > MAX_TOKEN_BYTES:
            raise _Refused(f"longer than {MAX_TOKEN_BYTES} bytes")
        digest = hashlib.sha256(token.encode()).digest()
        known = self._accepted.get(digest)
        if known is not None:
            access = await self._still_good(digest, known)
            if access is not None:
                return access
        access, kid, alg, key = await self._check(token)
        self._remember(digest, _Accepted(access, kid, alg, key, 3 * len(token) + _ENTRY_OVERHEAD))
        return access

    async def _still_good(self, digest: bytes, known: _Accepted) -> AccessToken | None:
        """The remembered AccessToken if its lifetime and its key still hold; None to check it afresh.

        An expired token is refused here (and forgotten). The key set is asked for
        the key again, so a JWKS past its TTL refetches (and fails closed when it
        cannot) and a key rotated out is no longer accepted from memory.
        """
        outside = lifetime_refusal(known.access.claims or {}, self.leeway_s, require_exp=True)
        if outside is not None:
            self._forget(digest)
            raise _Refused(outside)
        try:
            key = await self.keys.key_for(known.kid, known.alg)
        except KeyUnavailable:
            self._forget(digest)
            raise
        if key is known.key:
            self._accepted.move_to_end(digest)
            return known.access
        self._forget(digest)
        return None

    def _remember(self, digest: bytes, entry: _Accepted) -> None:
        if entry.size > self.token_cache_bytes or self.token_cache_size == 0:
            return
        self._forget(digest)
        self._accepted[digest] = entry
        self._accepted_bytes += entry.size
        while len(self._accepted) > self.token_cache_size or self._accepted_bytes > self.token_cache_bytes:
            _, oldest = self._accepted.popitem(last=False)
            self._accepted_bytes -= oldest.size

    def _forget(self, digest: bytes) -> None:
        entry = self._accepted.pop(digest, None)
        if entry is not None:
            self._accepted_bytes -= entry.size

    def _forget_all(self) -> None:
        self._accepted.clear()
        self._accepted_bytes = 0

    async def _check(self, token: str) -> tuple[AccessToken, str | None, str, Any]:
        """Check the token in full: header, key, signature, claims. Returns it with what signed it."""
        if not _COMPACT_JWS.fullmatch(token):
            raise _NotAJWT(_NOT_A_JWT)
        header = _header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise _Refused(f"algorithm {str(alg)[:20]!r} is not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise _Refused("malformed key id")
        key = await self.keys.key_for(kid, alg)
        self.signature_checks += 1
        try:
            decoded = jwt.decode(token, key, algorithms=list(self.algorithms), registry=self._registry)
        except JoseError as exc:
            raise _Refused(f"bad signature or structure ({exc.error})") from None
        claims = decoded.claims
        self._check_claims(claims)
        access = AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or ""),
            scopes=_scopes(claims),
            expires_at=int(claims["exp"]),
            resource=self._matching_audience(claims),
            subject=claims.get("sub") if isinstance(claims.get("sub"), str) else None,
            claims=claims,
        )
        return access, kid, alg, key

    def _check_claims(self, claims: dict[str, Any]) -> None:
        outside = lifetime_refusal(claims, self.leeway_s, require_exp=True)
        if outside is not None:
            raise _Refused(outside)
        options: dict[str, Any] = {}
        if self.issuer is not None:
            options["iss"] = {"essential": True, "value": self.issuer}
        try:
            _ClaimsNoClock(**options).validate(claims)
        except JoseError as exc:
            raise _Refused(f"claims rejected: {exc.description or exc.error}") from None
        if self.required_scopes:
            missing = set(self.required_scopes) - set(_scopes(claims))
            if missing:
                raise _Refused(f"missing required scope(s) {' '.join(sorted(missing))}")

    def _matching_audience(self, claims: dict[str, Any]) -> str:
        if self.audience is None:
            raise _Refused(
                "no audience configured: give JWTVerifier(audience=...) or protect an MCPServer with "
                "AuthSettings(resource_server_url=...)"
            )
        found, named_any = matching_audience(claims.get("aud"), self.audience)
        if found is not None:
            return found
        raise _Refused("issued for another audience" if named_any else "no audience (aud) claim")
