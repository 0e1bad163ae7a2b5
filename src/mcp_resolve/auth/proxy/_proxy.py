"""`OAuthProxy`: the authorization server MCP clients see, signing the person in at an upstream provider.

MCP clients expect an authorization server that registers them on the fly
(DCR or a Client ID Metadata Document) and issues tokens for the MCP server's
own URL. GitHub and Google do neither. The proxy is that server, on the MCP
server's origin, and sends the person upstream to sign in:

    client ── /authorize ─▶ proxy ── /consent ─▶ person approves ─▶ upstream login
    client ◀─ code ─────── proxy ◀─ /auth/callback (upstream code) ───────┘
    client ── /token ─────▶ proxy: its own JWT and refresh token; the upstream's stay here

Everything between those steps lives in the store, sealed (AES-GCM), under
names that are hashes of any secret they hold, so a fleet serves each step on
any worker and a store dump holds no token. The upstream's tokens never leave:
a tool that needs one asks for it with the `upstream_token` resolver. They
also say whether the person is still signed in upstream: a refresh of our
tokens asks (at most once per `upstream_check_s`), and a person the upstream
no longer accepts loses the grant.

The pieces each have a module: `_grants` (our tokens), `_keys` (their signing
keys), `_vault` (sealing), `_upstream` (the upstream's endpoints), `_consent`
(the page's rules). This module is the sequence.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import anyio
from pydantic import AnyUrl, PrivateAttr

from ...errors import MCPError
from ..provider import (
    AuthorizationCode,
    AuthorizationParams,
    ClientRegistrationOptions,
    OAuthClientInformationFull,
    OAuthToken,
    ProviderTokenVerifier,
    RefreshToken,
    RevocationOptions,
    TemporarilyUnavailable,
    TokenError,
    code_challenge_s256,
    construct_redirect_uri,
)
from ..tokens import AccessToken, AuthSettings, TokenVerifier, check_scope
from ._consent import ConsentGuard, ConsentView
from ._grants import Grant, Grants
from ._keys import SigningKeys
from ._upstream import UpstreamClient, UpstreamConfig, UpstreamError, UpstreamTokens
from ._vault import SealedStore, Vault, derive_key, secret_name
from .identity import UpstreamIdentity
from .pages import PageError

if TYPE_CHECKING:
    from ...stores.keyvalue import KeyValueStore

__all__ = ["OAuthProxy", "ProxiedAccessToken", "UpstreamToken"]

logger = logging.getLogger("mcp_resolve.auth.proxy")

DEFAULT_CLAIMS = ("login", "email", "name", "groups")
"""The identity claims the proxy's tokens carry unless the operator chooses others."""

_CLIENT_TTL_S = 90 * 86400
"""How long a client someone signed in with is kept, from its last sign-in."""
_NEW_CLIENT_TTL_S = 86400
"""How long a registration nobody has signed in with yet is kept. Anyone may register, so one that
is never used must not hold the store for months: a peer's registrations (capped per hour at
`/register`) then hold at most a day's worth of entries."""
_REFRESH_MARGIN_S = 60
"""An upstream token this close to its expiry is refreshed before it is handed to a tool."""
_LOCK_MARGIN_S = 15
"""The upstream refresh lock outlives the upstream's deadline by this much (the store writes after it)."""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class UpstreamToken:
    """A fresh upstream access token, for a tool calling the upstream's API on the person's behalf.

    Never in a schema (it comes from a resolver), never in `repr` or logs; pass
    `headers()` to your HTTP client. It is the person's token at the upstream,
    not ours: do not hand it to anyone else.
    """

    __slots__ = ("expires_at", "scope", "token")

    def __init__(self, token: str, expires_at: float | None, scope: str | None) -> None:
        self.token = token
        self.expires_at = expires_at
        self.scope = scope

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def __repr__(self) -> str:
        return f"UpstreamToken(expires_at={self.expires_at!r}, scope={self.scope!r})"


class ProxiedAccessToken(AccessToken):
    """An access token this proxy issued: it knows its way back to the upstream tokens of its grant."""

    _proxy: OAuthProxy | None = PrivateAttr(default=None)

    @property
    def grant_id(self) -> str | None:
        gid = (self.claims or {}).get("gid")
        return gid if isinstance(gid, str) else None

    @property
    def proxy(self) -> OAuthProxy | None:
        return self._proxy

    def bound_to(self, proxy: OAuthProxy) -> ProxiedAccessToken:
        self._proxy = proxy
        return self


class OAuthProxy:
    """An authorization server in front of the MCP server that signs the person in upstream.

    `MCPServer("desk", auth_server_provider=GitHubProvider(client_id=..., client_secret=...,
    base_url="https://desk.example.com"))` is the whole set-up: the proxy knows its own token
    verifier and settings (`protection()`), so no `auth=` is needed.

    `base_url` is the public origin of the MCP server (what clients and the person's browser
    reach); `mcp_path` where the MCP endpoint is; `scopes` the scopes this server's tools use
    (what clients may ask for; `required_scopes` must be held for every request); `claims` the
    upstream identity fields the tokens carry (`UpstreamIdentity`); `store` where the proxy's
    state lives (a `KeyValueStore`, a `redis://` URL or a SQLite path; by default Redis when
    MCP_RESOLVE_REDIS_URL is set, else memory, which serves one process only); `encryption_key`
    the secret that seals it (default: derived from the upstream client secret, which every worker
    shares), with `previous_encryption_keys` still opening what older keys sealed while you rotate
    it; `consent` shows the consent page (keep it on: it is the confused-deputy protection MCP
    requires of a proxy); `remember_consent` skips it when this browser gave this client the same
    approval before. `upstream_check_s` is how often, at most, a refresh of the proxy's tokens asks
    the upstream whether the person is still signed in there (a person disabled upstream loses
    access at their client's next refresh after that, not when the grant ends).
    """

    callback_path = "/auth/callback"
    authorization_response_iss_parameter_supported = True
    """Every redirect back to a client carries `iss` (RFC 9207), and the metadata says so."""

    def __init__(
        self,
        *,
        upstream: UpstreamConfig,
        base_url: str,
        mcp_path: str = "/mcp",
        scopes: Sequence[str] = (),
        required_scopes: Sequence[str] | None = None,
        claims: Sequence[str] = DEFAULT_CLAIMS,
        store: KeyValueStore | str | os.PathLike[str] | None = None,
        encryption_key: str | bytes | None = None,
        previous_encryption_keys: Sequence[str | bytes] = (),
        consent: bool = True,
        remember_consent: bool = True,
        client_registration: bool = True,
        client_id_metadata_documents: bool = True,
        access_token_ttl_s: float = 3600,
        refresh_token_ttl_s: float = 30 * 86400,
        transaction_ttl_s: float = 600,
        code_ttl_s: float = 60,
        key_rotation_s: float = 86400,
        upstream_check_s: float = 3600,
        allow: Callable[[UpstreamIdentity], bool | Awaitable[bool]] | None = None,
    ) -> None:
        if not consent and (client_registration or client_id_metadata_documents):
            raise ValueError(
                "OAuthProxy(consent=False) lets any client that registers itself sign people in as "
                "themselves without their knowing (the confused deputy): turn it off only with "
                "client_registration=False and client_id_metadata_documents=False (clients you register)"
            )
        self.upstream_config = upstream
        self.base_url = base_url.rstrip("/")
        self.issuer = self.base_url
        self.resource = self.base_url + "/" + mcp_path.strip("/")
        self.scopes = tuple(check_scope(s) for s in scopes)
        self.required_scopes = tuple(required_scopes) if required_scopes is not None else None
        self.offered = self.scopes or self.required_scopes or ()
        """The scopes a token of this proxy can carry: `scopes`, else `required_scopes`, else none."""
        self.allow = allow
        """Who may sign in (None: anyone the upstream signs in): checked when the upstream sends them back."""
        self.claims = tuple(claims)
        self.show_consent = consent
        self.client_registration = client_registration
        self.access_token_ttl_s = access_token_ttl_s
        self.transaction_ttl_s = transaction_ttl_s
        self.code_ttl_s = code_ttl_s
        self.refresh_token_ttl_s = refresh_token_ttl_s
        if not 0 <= upstream_check_s <= refresh_token_ttl_s:
            raise ValueError("upstream_check_s must be between 0 and refresh_token_ttl_s")
        self.upstream_check_s = upstream_check_s
        self.upstream_lock_s = upstream.timeout_s + _LOCK_MARGIN_S
        """How long one worker's upstream refresh holds the others off: longer than the upstream's deadline."""
        kept = _store(store, self.issuer)
        secret = self._secret(encryption_key, kept)
        purpose = "mcp-resolve proxy state"
        vault = Vault(
            derive_key(secret, purpose),
            previous=[derive_key(key, purpose) for key in previous_encryption_keys],
        )
        self.state = SealedStore(kept, vault)
        self.consent = ConsentGuard(
            derive_key(secret, "mcp-resolve proxy consent"), remember=remember_consent
        )
        self.keys = SigningKeys(
            self.state, rotation_s=key_rotation_s, keep_s=key_rotation_s + access_token_ttl_s
        )
        self.grants = Grants(
            self.state,
            self.keys,
            issuer=self.issuer,
            access_token_ttl_s=access_token_ttl_s,
            refresh_token_ttl_s=refresh_token_ttl_s,
        )
        self.upstream = UpstreamClient(upstream)
        self.client_id_metadata_documents = client_id_metadata_documents

    @staticmethod
    def _secret(key: str | bytes | None, store: KeyValueStore) -> str | bytes:
        """The secret the proxy's state is sealed with: the operator's; in memory, a random one.

        A shared store needs a key every worker knows, and one that nobody else
        does (not the upstream client secret, which the provider knows too), so it
        is refused without one rather than sealed with a key of this process only.
        """
        from ...stores.keyvalue import MemoryKeyValueStore

        if key:
            return key
        if isinstance(store, MemoryKeyValueStore):
            return secrets.token_bytes(32)  # one process: nothing outlives it, nothing to share
        raise ValueError(
            "OAuthProxy(encryption_key=...) is needed with a shared store: every worker must seal "
            "with the same secret (at least 32 bytes; python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))' makes one)"
        )

    # -- what MCPServer asks -----------------------------------------------------------------

    def protection(self) -> tuple[TokenVerifier, AuthSettings]:
        """The verifier of the tokens this proxy issues, and the settings that announce it."""
        settings = AuthSettings(
            issuer_url=self.issuer,
            resource_server_url=self.resource,
            required_scopes=self.required_scopes,
            client_registration_options=ClientRegistrationOptions(
                enabled=self.client_registration, valid_scopes=list(self.offered) or None
            ),
            revocation_options=RevocationOptions(enabled=True),
            client_id_metadata_documents=self.client_id_metadata_documents,
        )
        return ProviderTokenVerifier(self), settings

    # -- clients ---------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """A client registered here (a CIMD client's document is fetched by the endpoints)."""
        record = await self.state.get(secret_name("client", client_id))
        return OAuthClientInformationFull.model_validate(record) if record is not None else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await self.state.put(
            secret_name("client", client_info.client_id),
            client_info.model_dump(mode="json", exclude_none=True),
            ttl=_NEW_CLIENT_TTL_S,
        )

    async def _keep_client(self, client_id: str) -> None:
        """A client someone signed in with: kept `_CLIENT_TTL_S` from now (best effort; a CIMD
        client is not stored here)."""
        name = secret_name("client", client_id)
        try:
            record = await self.state.get(name)
            if record is not None:
                await self.state.put(name, record, ttl=_CLIENT_TTL_S)
        except MCPError as exc:
            logger.warning("the proxy could not extend a client's registration (%s)", type(exc).__name__)

    # -- the person's way through: authorize, consent, upstream, callback ---------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Keep the request as a transaction; send the person to the consent page (or straight upstream)."""
        txn = secrets.token_urlsafe(32)
        record = {
            "client_id": client.client_id,
            "client_name": client.client_name,
            "redirect_uri": str(params.redirect_uri),
            "explicit": params.redirect_uri_provided_explicitly,
            "state": params.state,
            "scopes": self._granted(client, params.scopes),
            "code_challenge": params.code_challenge,
            "resource": params.resource,
            "verifier": secrets.token_urlsafe(48),
            "nonce": secrets.token_urlsafe(24),
            "approved": not self.show_consent,
        }
        await self.state.put(secret_name("txn", txn), record, ttl=self.transaction_ttl_s)
        if not self.show_consent:
            return await self._upstream_url(txn, record)
        return f"{self.base_url}/consent?{_query(txn=txn)}"

    def _granted(self, client: OAuthClientInformationFull, asked: list[str] | None) -> list[str]:
        """The scopes a sign-in asks the person for: those asked that this server offers (an
        authorization server may grant fewer than asked, RFC 6749 §3.3), else the least a client
        gets, `required_scopes`. Never a scope the server does not offer: with none declared, none."""
        offered = set(self.offered)
        kept = [scope for scope in dict.fromkeys(asked or ()) if scope in offered]
        return kept or list(self.required_scopes or ())

    async def consent_view(self, txn: str) -> ConsentView | None:
        record = await self.state.get(secret_name("txn", txn))
        if record is None:
            return None
        return ConsentView(
            client_id=record["client_id"],
            client_name=record.get("client_name"),
            redirect_uri=record["redirect_uri"],
            scopes=tuple(record["scopes"]),
            resource=record.get("resource"),
            upstream=self.upstream_config.label,
        )

    async def decide(self, txn: str, approve: bool, *, browser: str | None = None) -> str:
        """Approve: on to the upstream's login. Deny: back to the client with `access_denied`.

        The approving browser is written into the transaction: the upstream's answer is accepted
        only through it, so an approval cannot be carried to someone else's browser (a person
        signed in at the upstream who follows a link to it would otherwise sign the link's author
        in as themselves)."""
        name = secret_name("txn", txn)
        if not approve:
            record = await self.state.take(name)
            if record is None:
                raise PageError(
                    "Sign-in expired", "This sign-in request is no longer valid. Start again from your app."
                )
            return self._client_redirect(
                record, error="access_denied", error_description="the person declined"
            )
        record = await self.state.get(name)
        if record is None:
            raise PageError(
                "Sign-in expired", "This sign-in request is no longer valid. Start again from your app."
            )
        binding = _digest(browser) if browser else None
        if record.get("approved") and record.get("browser") not in (None, binding):
            raise PageError(
                "Sign-in refused",
                "This sign-in was already approved in another browser. Start again from your app.",
                status=403,
            )
        record["approved"] = True
        record["browser"] = binding
        await self.state.put(name, record, ttl=self.transaction_ttl_s)
        return await self._upstream_url(txn, record)

    async def _upstream_url(self, txn: str, record: dict[str, Any]) -> str:
        try:
            return await self.upstream.authorization_url(
                state=txn,
                code_challenge=code_challenge_s256(record["verifier"]),
                redirect_uri=self.base_url + self.callback_path,
                nonce=record["nonce"],
            )
        except UpstreamError as exc:
            logger.warning("upstream unavailable at authorization: %s", exc)
            raise PageError(
                "Sign-in unavailable",
                f"{self.upstream_config.label} cannot be reached right now. Try again later.",
                status=503,
            ) from None

    async def upstream_returned(
        self,
        *,
        state: str | None,
        code: str | None,
        error: str | None,
        error_description: str | None,
        browser: str | None = None,
    ) -> str:
        """The upstream sent the person back: make our code for the client, or pass the refusal on."""
        record = await self.state.take(secret_name("txn", state)) if state else None
        if record is not None and record.get("browser") and record["browser"] != _digest(browser or ""):
            logger.warning("an upstream answer came back through another browser than the one that approved")
            raise PageError(
                "Sign-in refused",
                "This sign-in was approved in another browser. Start again from your app, in this browser.",
                status=403,
            )
        if record is None or not record.get("approved"):
            raise PageError(
                "Sign-in expired",
                "This sign-in request is unknown or no longer valid. Start again from your app.",
            )
        if error or not code:
            logger.info("upstream refused the sign-in: %r", (error or "no code")[:64])
            return self._client_redirect(
                record, error="access_denied", error_description="the sign-in was not completed"
            )
        try:
            tokens = await self.upstream.exchange_code(
                code=code, code_verifier=record["verifier"], redirect_uri=self.base_url + self.callback_path
            )
            identity = await self.upstream.identity(tokens, nonce=record["nonce"])
        except UpstreamError as exc:
            logger.warning("upstream sign-in failed: %s", exc)
            return self._client_redirect(
                record,
                error="temporarily_unavailable" if exc.kind == "unreachable" else "access_denied",
                error_description=f"{self.upstream_config.label} sign-in failed",
            )
        if not await self._allowed(identity):
            logger.info("a sign-in was refused by the proxy's allow= policy (%s)", identity.provider)
            return self._client_redirect(
                record, error="access_denied", error_description="this account may not use this server"
            )
        try:
            code_value = await self._signed_in(record, identity, tokens)
        except MCPError as exc:  # the store is full or down: fail closed, and tell the client why
            logger.warning("the proxy could not keep a sign-in (%s)", type(exc).__name__)
            return self._client_redirect(
                record,
                error="temporarily_unavailable",
                error_description="the sign-in could not be kept; try again later",
            )
        return self._client_redirect(record, code=code_value)

    async def _signed_in(
        self, record: dict[str, Any], identity: UpstreamIdentity, tokens: UpstreamTokens
    ) -> str:
        """Keep the grant, the upstream's tokens and our code for the client; the code.

        A store failure half-way revokes the grant (best effort) and raises: no code, no grant left behind.
        """
        grant = Grant(
            grant_id=secrets.token_urlsafe(16),
            client_id=record["client_id"],
            subject=identity.subject,
            scopes=tuple(record["scopes"]),
            resource=record.get("resource") or self.resource,
            claims=self._selected_claims(identity),
            expires_at=time.time() + self.refresh_token_ttl_s,
        )
        await self.grants.create(grant)
        code_value = secrets.token_urlsafe(32)
        try:
            await self._keep_upstream(grant, tokens, checked_at=time.time())
            await self.state.put(
                secret_name("code", code_value),
                {
                    "grant_id": grant.grant_id,
                    "client_id": grant.client_id,
                    "scopes": list(grant.scopes),
                    "code_challenge": record["code_challenge"],
                    "redirect_uri": record["redirect_uri"],
                    "explicit": record["explicit"],
                    "resource": record.get("resource"),
                    "subject": identity.subject,
                    "expires_at": time.time() + self.code_ttl_s,
                },
                ttl=self.code_ttl_s,
            )
        except MCPError:
            with contextlib.suppress(MCPError):
                await self.grants.revoke(grant.grant_id)
            raise
        return code_value

    async def _allowed(self, identity: UpstreamIdentity) -> bool:
        if self.allow is None:
            return True
        verdict = self.allow(identity)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    def _selected_claims(self, identity: UpstreamIdentity) -> dict[str, Any]:
        kept = {"upstream", "upstream_sub", *self.claims}
        return {name: value for name, value in identity.to_claims().items() if name in kept}

    def _client_redirect(self, record: dict[str, Any], **params: str | None) -> str:
        return construct_redirect_uri(
            record["redirect_uri"], **params, state=record.get("state"), iss=self.issuer
        )

    async def jwks(self) -> dict[str, Any]:
        return await self.keys.jwks()

    # -- codes and tokens ------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> ProxyAuthorizationCode | None:
        name = secret_name("code", authorization_code)
        record = await self.state.get(name)
        if record is None:
            await self._revoke_if_replayed(authorization_code)
            return None
        return ProxyAuthorizationCode(
            code=authorization_code,
            scopes=record["scopes"],
            expires_at=record["expires_at"],
            client_id=record["client_id"],
            code_challenge=record["code_challenge"],
            redirect_uri=AnyUrl(record["redirect_uri"]),
            redirect_uri_provided_explicitly=record["explicit"],
            resource=record.get("resource"),
            subject=record.get("subject"),
            grant_id=record["grant_id"],
        )

    async def _revoke_if_replayed(self, code: str) -> None:
        """A code presented after it was used: revoke every token issued from it (RFC 6749 §4.1.2)."""
        used = await self.state.get(secret_name("used-code", code))
        if used is not None:
            logger.warning("an authorization code was presented twice: its grant is revoked")
            await self.grants.revoke(used["grant_id"])

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: ProxyAuthorizationCode
    ) -> OAuthToken:
        """Tokens for the code, once. The used-code marker is written first (`only_new`), then the
        code taken: of two exchanges at once, the one that finds the marker revokes the grant,
        whatever the other got (RFC 6749 §4.1.2)."""
        gid = authorization_code.grant_id
        first = await self.state.put(
            secret_name("used-code", authorization_code.code),
            {"grant_id": gid},
            ttl=self.refresh_token_ttl_s,
            only_new=True,
        )
        if not first:  # another request exchanged it, or is exchanging it now: a replay
            await self._revoke_if_replayed(authorization_code.code)
            raise TokenError("invalid_grant", "the authorization code was already used")
        record = await self.state.take(secret_name("code", authorization_code.code))
        if record is None or record.get("grant_id") != gid:  # it expired since it was loaded
            await self.grants.revoke(gid)
            raise TokenError("invalid_grant", "the authorization code has expired")
        tokens = await self.grants.issue(gid, authorization_code.scopes)
        await self._keep_client(client.client_id)
        return tokens

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return await self.grants.load_refresh(client.client_id, refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        return await self.grants.refresh(
            client.client_id, refresh_token.token, scopes, check=self._still_signed_in
        )

    async def load_access_token(self, token: str) -> ProxiedAccessToken | None:
        verified = await self.grants.verify(token, audience=self.resource)
        if verified is None:
            return None
        return ProxiedAccessToken.model_validate(verified.model_dump()).bound_to(self)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await self.grants.revoke_token(token.token)

    # -- the upstream's tokens, for tools ----------------------------------------------------

    async def _keep_upstream(
        self, grant: Grant, tokens: UpstreamTokens | dict[str, Any], *, checked_at: float
    ) -> dict[str, Any]:
        """Keep the grant's upstream tokens (and when the person was last seen signed in upstream)
        until the grant ends, or `refresh_token_ttl_s` from now if sooner; the record kept."""
        if isinstance(tokens, UpstreamTokens):
            tokens = {
                "access_token": tokens.access_token,
                "refresh_token": tokens.refresh_token,
                "expires_at": tokens.expires_at,
                "scope": tokens.scope,
            }
        record = {**tokens, "checked_at": checked_at}
        ttl = min(self.refresh_token_ttl_s, grant.expires_at - time.time())
        await self.state.put(f"upstream:{grant.grant_id}", record, ttl=max(ttl, 1.0))
        return record

    async def _upstream_tokens(self, grant: Grant, due: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The grant's upstream tokens, first refreshed at the upstream when `due` says so and there is
        a refresh token. One worker refreshes (the upstream may rotate its refresh token, so a second
        refresh would spend it again); the others wait for its result, at most as long as its lock lives.

        `UpstreamError`: `refused` (the tokens are gone, or the upstream said no), or `unreachable`.
        """
        name, lock = f"upstream:{grant.grant_id}", f"refreshing:{grant.grant_id}"
        waited_until = anyio.current_time() + self.upstream_lock_s
        while True:
            record = await self.state.get(name)
            if record is None:
                raise UpstreamError("refused", "the upstream tokens of this grant are gone")
            if not record.get("refresh_token") or not due(record):
                return record
            if await self.state.put(lock, {}, ttl=self.upstream_lock_s, only_new=True):
                try:
                    started = time.time()
                    fresh = await self.upstream.refresh(record["refresh_token"])
                    return await self._keep_upstream(grant, fresh, checked_at=started)
                finally:
                    await self.state.delete(lock)
            if anyio.current_time() > waited_until:
                raise UpstreamError(
                    "unreachable", "the upstream token is being refreshed elsewhere and did not arrive"
                )
            await anyio.sleep(0.1)

    async def upstream_token(self, token: AccessToken) -> UpstreamToken:
        """A fresh upstream access token for the grant `token` belongs to, refreshed upstream when due."""
        gid = (token.claims or {}).get("gid")
        grant = await self.grants.get(gid) if isinstance(gid, str) else None
        if grant is None:
            raise UpstreamError("refused", "this access token has no live grant at the proxy")

        def expiring(record: dict[str, Any]) -> bool:
            expires_at = record.get("expires_at")
            return expires_at is not None and expires_at - _REFRESH_MARGIN_S <= time.time()

        record = await self._upstream_tokens(grant, expiring)
        return UpstreamToken(record["access_token"], record.get("expires_at"), record.get("scope"))

    # -- is the person still signed in upstream? ---------------------------------------------

    async def _still_signed_in(self, grant: Grant) -> None:
        """Before a refresh token of `grant` is spent: the person must still be signed in upstream.

        Asked at most once per `upstream_check_s`. The upstream saying no (the person disabled or
        signed out, the tokens revoked) revokes the grant: `invalid_grant`, sign in again. The
        upstream unreachable fails closed with `TemporarilyUnavailable` (503), the refresh token
        left as it was, so the client's retry works once the upstream is back.
        """
        label = self.upstream_config.label
        try:
            await self._check_upstream(grant)
        except UpstreamError as exc:
            if exc.kind == "unreachable":
                logger.warning("a refresh could not confirm the sign-in upstream: %s", exc)
                raise TemporarilyUnavailable(
                    f"{label} cannot be reached to confirm the sign-in; try again shortly"
                ) from None
            logger.warning("the upstream no longer accepts a sign-in, so its grant is revoked: %s", exc)
            await self.grants.revoke(grant.grant_id)
            await self.state.delete(f"upstream:{grant.grant_id}")
            raise TokenError("invalid_grant", f"the sign-in at {label} has ended; sign in again") from None

    async def _check_upstream(self, grant: Grant) -> None:
        """Refresh upstream if it gave a refresh token; else ask user-info (when the identity comes from
        there) with the access token; else (an ID token and no refresh token) there is nothing to ask."""

        def due(record: dict[str, Any]) -> bool:
            return time.time() - float(record.get("checked_at") or 0) >= self.upstream_check_s

        record = await self._upstream_tokens(grant, due)
        if record.get("refresh_token") or not due(record):
            return
        if self.upstream_config.identity_source != "userinfo":
            return
        started = time.time()
        identity = await self.upstream.identity(
            UpstreamTokens(access_token=record["access_token"]), nonce=None
        )
        if identity.subject != grant.subject:
            raise UpstreamError("refused", f"{self.upstream_config.label} user-info names another person")
        await self._keep_upstream(grant, record, checked_at=started)

    async def aclose(self) -> None:
        await self.upstream.aclose()


class ProxyAuthorizationCode(AuthorizationCode):
    grant_id: str


def _store(store: KeyValueStore | str | os.PathLike[str] | None, issuer: str) -> KeyValueStore:
    """The store `OAuthProxy(store=...)` names: one given, a Redis URL, a SQLite file; else Redis when
    MCP_RESOLVE_REDIS_URL is set (the fleet's one switch moves the proxy's state too), else memory.
    Redis keys are under a prefix of their own per issuer, so two proxies on one Redis never meet."""
    if store is None:
        from ...settings import load_settings

        configured = load_settings().redis_url
        if configured is None:
            from ...stores.keyvalue import MemoryKeyValueStore

            return MemoryKeyValueStore()
        store = configured.get_secret_value()
    if isinstance(store, str) and store.startswith(("redis://", "rediss://", "unix://")):
        from ...stores import RedisConnection, RedisKeyValueStore

        namespace = re.sub(r"[^A-Za-z0-9._-]", "-", urlsplit(issuer).netloc + urlsplit(issuer).path)[:64]
        return RedisKeyValueStore(
            RedisConnection(store, prefix=f"mcp-resolve:oauth-proxy:{namespace}"), name="proxy"
        )
    if isinstance(store, (str, os.PathLike)):
        from ...stores import SqliteKeyValueStore

        return SqliteKeyValueStore(store)
    return store


def _query(**params: str) -> str:
    return urlencode(params)
