"""The MCP authorization flow, client side, as an `httpx.Auth`: `OAuth` (a person logs in) and `ClientCredentials`.

Both sit on the client's HTTP connection and act on what the server answers:

* **401**: read the challenge, re-read the server's protected resource
  metadata (so a move to another authorization server is noticed), then
  refresh the token if there is a refresh token from that same server, else
  obtain a new one; retry the request once with it.
* **403 `insufficient_scope`**: ask again for the union of the scopes asked
  for before and the scopes the challenge names (step-up), at most
  `max_step_ups` times per request, and not at all when the token already
  holds every challenged scope (asking again cannot help; the server is
  refusing for another reason).

The pieces of OAuth itself come from Authlib (PKCE S256, authorization and
token request encoding, client authentication including `private_key_jwt`
signed with joserfc, metadata validation, token expiry); this module only
decides what to ask for and checks what comes back: the `state`, the `iss`
of the authorization response (RFC 9207, compared as plain strings), the
resource in the metadata, the size and shape of every response.

All traffic to authorization servers goes through a client of its own,
never the MCP connection's, so headers meant for the MCP server (an API key,
say) never reach an authorization server. Requests to one endpoint are
serialized while a token is being obtained: concurrent 401s share one login.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import anyio
import httpx

from .browser import CallbackHandler, LoopbackCallback, RedirectHandler, open_browser
from .challenge import BearerChallenge, parse_bearer_challenge
from .discovery import (
    ProtectedResource,
    discover_authorization_server,
    discover_protected_resource,
    endpoint_url,
    is_secure_url,
    read_json,
)
from .errors import AuthorizationError
from .storage import MemoryTokenStorage, TokenStorage

__all__ = ["ClientCredentials", "OAuth"]

T = TypeVar("T")

logger = logging.getLogger("mcp_resolve.client.auth")

MAX_TOKEN_RESPONSE_BYTES = 64 * 1024
MAX_ACCESS_TOKEN_CHARS = 16 * 1024
"""It travels in a header on every request; a bigger one is not a token we can use."""
METADATA_TTL = 3600.0
_UNRESERVED = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
_HTTP_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")


def _authlib() -> Any:
    try:
        import authlib
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("OAuth for the MCP client needs Authlib: pip install 'mcp-resolve[auth]'") from None
    return authlib


def _union(*groups: Iterable[str]) -> list[str]:
    """Scopes in first-seen order, each once (so the request stays readable and stable)."""
    seen: dict[str, None] = {}
    for group in groups:
        for scope in group:
            seen.setdefault(scope, None)
    return list(seen)


def _expiring(tokens: dict[str, Any]) -> bool:
    """Whether the access token is expired or about to be: within 30 s, or a quarter of a short lifetime."""
    expires_at, lifetime = tokens.get("expires_at"), tokens.get("expires_in")
    if not isinstance(expires_at, (int, float)):
        return False
    leeway = min(30.0, lifetime / 4) if isinstance(lifetime, (int, float)) and lifetime > 0 else 30.0
    return expires_at - leeway < time.time()


def _short(text: Any, limit: int = 300) -> str:
    """A server-provided string fit for an error message: printable, bounded."""
    value = "".join(c if c.isprintable() else "?" for c in str(text))
    return value if len(value) <= limit else value[:limit] + "..."


@dataclass
class _Registration:
    """The client identity used at one authorization server."""

    client_id: str
    client_secret: str | None = None
    method: str = "none"
    redirect_uris: tuple[str, ...] = ()
    secret_expires_at: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.method,
            "redirect_uris": list(self.redirect_uris),
            "client_secret_expires_at": self.secret_expires_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Registration | None:
        client_id = data.get("client_id")
        if not isinstance(client_id, str):
            return None
        return cls(
            client_id,
            data.get("client_secret") if isinstance(data.get("client_secret"), str) else None,
            str(data.get("token_endpoint_auth_method") or "none"),
            tuple(u for u in data.get("redirect_uris") or () if isinstance(u, str)),
            int(data.get("client_secret_expires_at") or 0),
        )


@dataclass
class _Attempts:
    """What one request has already tried, so no request loops on a server that keeps refusing."""

    renewals: int = 0
    refreshed: bool = False
    authorized: bool = False
    step_ups: int = 0


class _OAuthBase(httpx.Auth):
    """What both grants share: discovery, token storage, refresh, the 401/403 handling."""

    grant_type = "authorization_code"

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None,
        storage: TokenStorage | None,
        max_step_ups: int,
        http_client: Callable[[], httpx.AsyncClient] | None,
    ) -> None:
        _authlib()
        if max_step_ups < 0:
            raise ValueError("max_step_ups must be 0 or more")
        self.scopes = list(scopes or ())
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self.max_step_ups = max_step_ups
        self._http_client = http_client
        self._tokens: dict[str, dict[str, Any] | None] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self._metadata: dict[str, tuple[float, dict[str, Any]]] = {}
        self._person_seconds = 0.0
        self._person_since: float | None = None

    # -- the httpx side ----------------------------------------------------------------------
    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        raise RuntimeError(f"{type(self).__name__} works with httpx.AsyncClient only")
        yield request  # pragma: no cover

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        server = endpoint_url(request.url)
        tokens = await self._guarded(self._usable_tokens(server))
        self._sign(request, tokens)
        response = yield request
        attempts = _Attempts()
        while response.status_code in (401, 403):
            challenge = parse_bearer_challenge(response.headers.get_list("www-authenticate"))
            if response.status_code == 401:
                renewed = await self._guarded(self._renew(server, challenge, tokens, attempts))
            elif challenge is not None and challenge.error == "insufficient_scope":
                renewed = await self._guarded(self._step_up(server, challenge, tokens, attempts))
            else:
                renewed = None  # a 403 for a reason new scopes cannot fix
            if renewed is None:
                return  # the caller sees the refusal as it came
            tokens = renewed
            self._sign(request, tokens)
            response = yield request

    @staticmethod
    async def _guarded(step: Awaitable[T]) -> T:
        """A step of the flow, any failure of which is an AuthorizationError (or an httpx error).

        The transport that sent the request expects those two; anything else
        (an unreadable token file, a library's surprise) would end the whole
        connection instead of failing one request.
        """
        try:
            return await step
        except (AuthorizationError, httpx.HTTPError):
            raise
        except Exception as exc:
            logger.debug("the authorization flow failed", exc_info=True)
            raise AuthorizationError("client_error", f"{type(exc).__name__}: {_short(exc, 200)}") from exc

    @staticmethod
    def _sign(request: httpx.Request, tokens: dict[str, Any] | None) -> None:
        if tokens is not None:
            request.headers["Authorization"] = f"Bearer {tokens['access_token']}"
        else:
            request.headers.pop("Authorization", None)

    def time_with_person(self) -> float:
        """Seconds spent waiting for a person to log in, the current wait included.

        The Client does not count them against its own timeouts: a person
        reading a consent page is not a server that stopped answering.
        """
        ongoing = time.monotonic() - self._person_since if self._person_since is not None else 0.0
        return self._person_seconds + ongoing

    @asynccontextmanager
    async def _with_person(self) -> AsyncIterator[None]:
        self._person_since = time.monotonic()
        try:
            yield
        finally:
            self._person_seconds += time.monotonic() - self._person_since
            self._person_since = None

    @asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http_client is not None:
            async with self._http_client() as http:
                yield http
            return
        from ..http import _tls_context

        async with httpx.AsyncClient(
            timeout=httpx.Timeout(30.0), follow_redirects=False, verify=_tls_context()
        ) as http:
            yield http

    # -- tokens ----------------------------------------------------------------------------------
    def _lock(self, server: str) -> anyio.Lock:
        return self._locks.setdefault(server, anyio.Lock())

    async def _load(self, server: str) -> dict[str, Any] | None:
        if server not in self._tokens:
            stored = await self.storage.get(f"tokens {server}")
            self._tokens[server] = stored if stored and isinstance(stored.get("access_token"), str) else None
        return self._tokens[server]

    async def _save(self, server: str, tokens: dict[str, Any]) -> dict[str, Any]:
        self._tokens[server] = tokens
        await self.storage.set(f"tokens {server}", tokens)
        return tokens

    async def _usable_tokens(self, server: str) -> dict[str, Any] | None:
        """The stored tokens, refreshed first when they have expired and can be refreshed."""
        tokens = await self._load(server)
        if tokens is None or not _expiring(tokens):
            return tokens
        if not tokens.get("refresh_token") or not isinstance(tokens.get("issuer"), str):
            return tokens  # the server will say 401 and the flow takes over
        async with self._lock(server):
            current = await self._load(server)
            if current is not tokens:
                return current
            try:
                async with self._http() as http:
                    metadata = await self._authorization_server(http, tokens["issuer"])
                    return await self._refresh(http, server, tokens, metadata)
            except (AuthorizationError, httpx.HTTPError) as exc:
                logger.info("could not refresh the access token for %s: %s", server, exc)
                return tokens

    async def _authorization_server(self, http: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
        cached = self._metadata.get(issuer)
        if cached is not None and time.monotonic() - cached[0] < METADATA_TTL:
            return cached[1]
        metadata = await discover_authorization_server(http, issuer)
        self._metadata[issuer] = (time.monotonic(), metadata)
        return metadata

    async def _discover(
        self,
        http: httpx.AsyncClient,
        server: str,
        challenge: BearerChallenge | None,
        previous_issuer: str | None,
    ) -> tuple[ProtectedResource, str, dict[str, Any]]:
        resource = await discover_protected_resource(http, server, challenge)
        usable = [url for url in resource.authorization_servers if is_secure_url(url)]
        if not usable:
            raise AuthorizationError(
                "insecure_url", f"no https authorization server among {list(resource.authorization_servers)}"
            )
        issuer = previous_issuer if previous_issuer in usable else usable[0]
        return resource, issuer, await self._authorization_server(http, issuer)

    async def _renew(
        self, server: str, challenge: BearerChallenge | None, sent: dict[str, Any] | None, attempts: _Attempts
    ) -> dict[str, Any] | None:
        """After a 401: a refreshed or new token to retry with, or None to give up."""
        attempts.renewals += 1
        if attempts.renewals > 3:
            return None
        async with self._lock(server):
            current = await self._load(server)
            if current is not None and current is not sent:
                return current  # another request renewed it while this one waited
            async with self._http() as http:
                previous_issuer = current.get("issuer") if current else None
                resource, issuer, metadata = await self._discover(http, server, challenge, previous_issuer)
                if (
                    current is not None
                    and current.get("refresh_token")
                    and current.get("issuer") == issuer
                    and not attempts.refreshed
                ):
                    attempts.refreshed = True
                    try:
                        return await self._refresh(http, server, current, metadata)
                    except AuthorizationError as exc:
                        logger.info("refreshing the token failed (%s); authorizing again", exc.error)
                if attempts.authorized:
                    return None  # a fresh token was refused too: more logins will not help
                attempts.authorized = True
                if issuer != previous_issuer and previous_issuer is not None:
                    logger.info("%s moved to the authorization server %s", server, issuer)
                base = (
                    challenge.scopes
                    if challenge is not None and challenge.scopes
                    else resource.scopes_supported
                )
                previous = current.get("requested_scope", []) if current else []
                scopes = self._with_extras(_union(previous, base or (), self.scopes), metadata)
                return await self._save(server, await self._obtain(http, resource, issuer, metadata, scopes))

    async def _step_up(
        self, server: str, challenge: BearerChallenge, sent: dict[str, Any] | None, attempts: _Attempts
    ) -> dict[str, Any] | None:
        """After a 403 insufficient_scope: a token with the wider scope set, or None to give up."""
        challenged = challenge.scopes or []
        async with self._lock(server):
            current = await self._load(server)
            if current is None:
                return None
            if current is not sent:
                attempts.renewals += 1
                return current if attempts.renewals <= 3 else None
            requested = list(current.get("requested_scope") or [])
            granted = (
                set(str(current["scope"]).split()) if current.get("scope") is not None else set(requested)
            )
            if not challenged or set(challenged) <= granted:
                logger.warning("the server refuses scopes %s although the token holds them", challenged)
                return None
            if attempts.step_ups >= self.max_step_ups:
                return None
            attempts.step_ups += 1
            async with self._http() as http:
                resource, issuer, metadata = await self._discover(
                    http, server, challenge, current.get("issuer")
                )
                scopes = self._with_extras(_union(requested, challenged), metadata)
                return await self._save(server, await self._obtain(http, resource, issuer, metadata, scopes))

    def _with_extras(self, scopes: list[str], metadata: dict[str, Any]) -> list[str]:
        return scopes

    # -- the token endpoint ---------------------------------------------------------------------------
    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> _Registration:
        raise NotImplementedError

    def _client_auth(self, registration: _Registration, issuer: str) -> Any:
        from authlib.oauth2.auth import ClientAuth

        if registration.method == "client_secret_basic":
            # RFC 6749 §2.3.1: form-encode both before Basic (Authlib's server decodes them so).
            return ClientAuth(
                quote(registration.client_id, safe=""),
                quote(registration.client_secret or "", safe=""),
                "client_secret_basic",
            )
        return ClientAuth(registration.client_id, registration.client_secret, registration.method)

    async def _token_request(
        self,
        http: httpx.AsyncClient,
        metadata: dict[str, Any],
        registration: _Registration,
        issuer: str,
        grant_type: str,
        form: dict[str, Any],
    ) -> dict[str, Any]:
        from authlib.oauth2.rfc6749 import OAuth2Token
        from authlib.oauth2.rfc6749.parameters import prepare_token_request

        endpoint = metadata.get("token_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError("metadata_invalid", f"{issuer} has no token_endpoint")
        body = prepare_token_request(grant_type, **form)
        headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
        _url, headers, body = self._client_auth(registration, issuer).prepare("POST", endpoint, headers, body)
        async with http.stream("POST", endpoint, content=body, headers=headers) as response:
            payload = await read_json(response, MAX_TOKEN_RESPONSE_BYTES)
            status = response.status_code
        if status != 200 or not isinstance(payload, dict):
            error = payload.get("error") if isinstance(payload, dict) else None
            description = payload.get("error_description") if isinstance(payload, dict) else None
            raise AuthorizationError(
                _short(error or "token_request_failed", 80),
                _short(description or f"the token endpoint answered HTTP {status}"),
            )
        access_token = payload.get("access_token")
        token_type = payload.get("token_type", "Bearer")
        if (
            not isinstance(access_token, str)
            or not access_token
            or len(access_token) > MAX_ACCESS_TOKEN_CHARS
            or not access_token.isprintable()
        ):
            raise AuthorizationError(
                "invalid_token_response", "the token endpoint sent no usable access_token"
            )
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise AuthorizationError(
                "invalid_token_response", f"unsupported token_type {_short(token_type, 40)!r} (Bearer only)"
            )
        if payload.get("scope") is not None and not isinstance(payload.get("scope"), str):
            raise AuthorizationError("invalid_token_response", "scope must be a string")
        refresh_token = payload.get("refresh_token")
        try:
            token = OAuth2Token(
                {
                    "access_token": access_token,
                    "token_type": "Bearer",
                    "expires_in": payload.get("expires_in"),
                    "scope": payload.get("scope"),
                    "refresh_token": refresh_token if isinstance(refresh_token, str) else None,
                }
            )
        except (TypeError, ValueError):
            raise AuthorizationError("invalid_token_response", "expires_in is not a number") from None
        return {key: value for key, value in token.items() if value is not None}

    async def _refresh(
        self, http: httpx.AsyncClient, server: str, tokens: dict[str, Any], metadata: dict[str, Any]
    ) -> dict[str, Any]:
        issuer = str(tokens["issuer"])
        registration = await self._registration_for(http, issuer, metadata, refreshing=True)
        form = {"refresh_token": tokens["refresh_token"], "resource": tokens.get("resource")}
        fresh = await self._token_request(http, metadata, registration, issuer, "refresh_token", form)
        fresh.setdefault("refresh_token", tokens["refresh_token"])  # RFC 6749 §6: the old one stays valid
        if "scope" not in fresh and tokens.get("scope") is not None:
            fresh["scope"] = tokens["scope"]
        kept: dict[str, Any] = {
            k: tokens[k] for k in ("issuer", "resource", "requested_scope") if k in tokens
        }
        record = {**fresh, **kept}
        logger.info("refreshed the access token for %s", server)
        return await self._save(server, record)

    @staticmethod
    def _record(
        tokens: dict[str, Any], issuer: str, resource: ProtectedResource, scopes: list[str]
    ) -> dict[str, Any]:
        return {**tokens, "issuer": issuer, "resource": resource.resource, "requested_scope": scopes}

    def _choose_method(self, metadata: dict[str, Any], has_secret: bool) -> str:
        supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        preference = ("client_secret_basic", "client_secret_post") if has_secret else ("none",)
        for method in preference:
            if method in supported:
                return method
        return preference[0]


class OAuth(_OAuthBase):
    """The authorization code flow with PKCE: a person logs in once, the client keeps the tokens fresh.

    `Client(url, auth=OAuth())` (or `auth="oauth"`) logs in the first time
    the server answers 401, in the system browser with a listener on
    127.0.0.1 for the redirect back. The client identity comes from, in the
    spec's order of preference:

    1. `client_id` (and `client_secret`) registered in advance: pass `issuer`
       too and they are never offered to another authorization server;
    2. `client_metadata_url`, an https URL where this client's metadata
       document is published (Client ID Metadata Documents), when the
       authorization server supports them;
    3. dynamic client registration (RFC 7591), remembered per authorization
       server in `storage`.

    Tokens are kept in `storage` (memory by default; `FileTokenStorage` for
    command-line tools), refreshed when they expire, and widened when the
    server asks for more scope. `offline_access` is requested when the
    authorization server lists it, so that a refresh token is issued.
    """

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None = None,
        client_name: str = "mcp-resolve client",
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"]
        | None = None,
        issuer: str | None = None,
        client_metadata_url: str | None = None,
        redirect_handler: RedirectHandler | None = None,
        callback_handler: CallbackHandler | None = None,
        storage: TokenStorage | None = None,
        offline_access: bool = True,
        max_step_ups: int = 2,
        login_timeout: float = 300.0,
        client_metadata: dict[str, Any] | None = None,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        super().__init__(scopes=scopes, storage=storage, max_step_ups=max_step_ups, http_client=http_client)
        if client_metadata_url is not None and not _valid_metadata_url(client_metadata_url):
            raise ValueError(
                "client_metadata_url must be an https URL with a path, e.g. https://app.example/client.json"
            )
        if token_endpoint_auth_method is not None and token_endpoint_auth_method not in _HTTP_AUTH_METHODS:
            raise ValueError(f"token_endpoint_auth_method must be one of {_HTTP_AUTH_METHODS}")
        self.client_name = client_name
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.issuer = issuer
        self.client_metadata_url = client_metadata_url
        self.redirect_handler: RedirectHandler = redirect_handler or open_browser
        self.callback_handler: CallbackHandler = callback_handler or LoopbackCallback()
        self.offline_access = offline_access
        self.login_timeout = login_timeout
        self.client_metadata = dict(client_metadata or {})

    def __repr__(self) -> str:
        return f"OAuth(client_id={self.client_id!r}, scopes={self.scopes!r})"

    def _with_extras(self, scopes: list[str], metadata: dict[str, Any]) -> list[str]:
        supported = metadata.get("scopes_supported") or []
        if self.offline_access and "offline_access" in supported:
            return _union(scopes, ["offline_access"])
        return scopes

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> _Registration:
        if self.client_id is not None:
            if self.issuer is not None and self.issuer != issuer:
                raise AuthorizationError(
                    "issuer_changed",
                    f"the pre-registered client belongs to {self.issuer}, but the server now uses {issuer}",
                )
            method = self.token_endpoint_auth_method or self._choose_method(
                metadata, self.client_secret is not None
            )
            return _Registration(self.client_id, self.client_secret, method)
        if (
            self.client_metadata_url is not None
            and metadata.get("client_id_metadata_document_supported") is True
        ):
            return _Registration(self.client_metadata_url, None, "none")
        stored = await self.storage.get(f"client {issuer}")
        registration = _Registration.from_json(stored) if stored else None
        if refreshing and registration is not None:
            return registration  # the redirect URI does not matter to a refresh
        redirect_uri = await self.callback_handler.redirect_uri()
        if (
            registration is not None
            and redirect_uri in registration.redirect_uris
            and (registration.secret_expires_at == 0 or registration.secret_expires_at > time.time() + 60)
        ):
            return registration
        return await self._register(http, issuer, metadata, redirect_uri)

    async def _register(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], redirect_uri: str
    ) -> _Registration:
        """Dynamic client registration (RFC 7591), as a native app when the redirect is to this machine."""
        endpoint = metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError(
                "registration_unavailable",
                f"{issuer} offers no dynamic registration and no client_id was configured for it",
            )
        supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        method = next((m for m in _HTTP_AUTH_METHODS if m in supported), None)
        if method is None:
            raise AuthorizationError(
                "registration_unavailable",
                f"{issuer} supports none of the client authentications {_HTTP_AUTH_METHODS}",
            )
        native = is_secure_url(redirect_uri) and not redirect_uri.startswith("https://")
        request = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": "native" if native else "web",
            **self.client_metadata,
        }
        async with http.stream(
            "POST", endpoint, json=request, headers={"accept": "application/json"}
        ) as response:
            payload = await read_json(response, MAX_TOKEN_RESPONSE_BYTES)
            status = response.status_code
        if status not in (200, 201) or not isinstance(payload, dict):
            error = payload.get("error") if isinstance(payload, dict) else None
            description = payload.get("error_description") if isinstance(payload, dict) else None
            raise AuthorizationError(
                _short(error or "registration_failed", 80),
                _short(description or f"the registration endpoint answered HTTP {status}"),
            )
        client_id, secret = payload.get("client_id"), payload.get("client_secret")
        assigned = payload.get("token_endpoint_auth_method") or method
        if (
            not isinstance(client_id, str)
            or not client_id
            or (secret is not None and not isinstance(secret, str))
        ):
            raise AuthorizationError(
                "registration_failed", "the registration response has no usable client_id"
            )
        if assigned not in _HTTP_AUTH_METHODS or (assigned != "none" and not secret):
            raise AuthorizationError(
                "registration_failed",
                f"the server registered us for {_short(assigned, 40)!r}, which this client cannot use",
            )
        expires = payload.get("client_secret_expires_at")
        registration = _Registration(
            client_id, secret, assigned, (redirect_uri,), int(expires) if isinstance(expires, int) else 0
        )
        await self.storage.set(f"client {issuer}", registration.to_json())
        logger.info("registered with %s", issuer)
        return registration

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        from authlib.common.security import generate_token
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        if "S256" not in (metadata.get("code_challenge_methods_supported") or []):
            raise AuthorizationError(
                "pkce_unsupported", f"{issuer} does not advertise PKCE S256; refusing to authorize without it"
            )
        endpoint = metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError("metadata_invalid", f"{issuer} has no authorization_endpoint")
        registration = await self._registration_for(http, issuer, metadata)
        redirect_uri = await self.callback_handler.redirect_uri()
        verifier = generate_token(64, _UNRESERVED)
        state = secrets.token_urlsafe(32)
        url = prepare_grant_uri(
            endpoint,
            registration.client_id,
            "code",
            redirect_uri=redirect_uri,
            scope=" ".join(scopes) or None,
            state=state,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
            resource=resource.resource,
            prompt="consent" if "offline_access" in scopes else None,
        )
        async with self._with_person():
            await self.redirect_handler(url)
            answer = await self.callback_handler.wait_for_callback(state, self.login_timeout)
        if answer.duplicated:
            raise AuthorizationError("invalid_response", f"repeated parameters {sorted(answer.duplicated)}")
        if answer.state is None or not secrets.compare_digest(answer.state, state):
            raise AuthorizationError("state_mismatch", "the authorization response does not carry our state")
        # RFC 9207 §2.4, before anything in the response is acted on (its error included).
        iss = answer.params.get("iss")
        if iss is None and metadata.get("authorization_response_iss_parameter_supported") is True:
            raise AuthorizationError("iss_missing", f"{issuer} promised an iss parameter and sent none")
        if iss is not None and iss != issuer:
            raise AuthorizationError("iss_mismatch", "the authorization response comes from another issuer")
        if "error" in answer.params:
            raise AuthorizationError(
                _short(answer.params["error"], 80),
                _short(answer.params.get("error_description") or "refused"),
            )
        code = answer.params.get("code")
        if not code:
            raise AuthorizationError("invalid_response", "the authorization response carries no code")
        form = {
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": resource.resource,
        }  # client_id goes where the authentication method puts it (Authlib adds it for none and post)
        tokens = await self._token_request(http, metadata, registration, issuer, "authorization_code", form)
        logger.info("authorized for %s at %s", resource.resource, issuer)
        return self._record(tokens, issuer, resource, scopes)


def _valid_metadata_url(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


class ClientCredentials(_OAuthBase):
    """The client credentials grant (the MCP extension for machines acting on their own behalf).

    Authenticates with a secret (`client_secret_basic` or `_post`, as the
    authorization server supports) or with a signed JWT (`private_key_jwt`,
    RFC 7523: pass `private_key` as PEM or a joserfc key; the assertion's
    audience is the issuer). No person and no browser; a 403
    `insufficient_scope` asks for a token with the union of the scopes.
    """

    grant_type = "client_credentials"

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: Any = None,
        signing_algorithm: str = "ES256",
        issuer: str | None = None,
        scopes: Sequence[str] | None = None,
        storage: TokenStorage | None = None,
        max_step_ups: int = 2,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        super().__init__(scopes=scopes, storage=storage, max_step_ups=max_step_ups, http_client=http_client)
        if (client_secret is None) == (private_key is None):
            raise ValueError("pass exactly one of client_secret and private_key")
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = issuer
        self.signing_algorithm = signing_algorithm
        self._key = _import_private_key(private_key) if private_key is not None else None

    def __repr__(self) -> str:
        return f"ClientCredentials(client_id={self.client_id!r})"

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> _Registration:
        if self.issuer is not None and self.issuer != issuer:
            raise AuthorizationError(
                "issuer_changed",
                f"these credentials belong to {self.issuer}, but the server now uses {issuer}",
            )
        if self._key is not None:
            return _Registration(self.client_id, None, "private_key_jwt")
        return _Registration(self.client_id, self.client_secret, self._choose_method(metadata, True))

    def _client_auth(self, registration: _Registration, issuer: str) -> Any:
        if registration.method != "private_key_jwt":
            return super()._client_auth(registration, issuer)
        from authlib.oauth2.auth import ClientAuth
        from authlib.oauth2.rfc7523 import PrivateKeyJWT

        # The audience is the issuer identifier (RFC 7523bis), which every server accepts today.
        signer = PrivateKeyJWT(token_endpoint=issuer, alg=self.signing_algorithm)
        return ClientAuth(registration.client_id, self._key, signer)

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        registration = await self._registration_for(http, issuer, metadata)
        form = {"scope": " ".join(scopes) or None, "resource": resource.resource}
        if registration.method == "private_key_jwt":
            form["client_id"] = registration.client_id
        tokens = await self._token_request(http, metadata, registration, issuer, "client_credentials", form)
        tokens.pop("refresh_token", None)  # a new assertion is as good as a refresh (RFC 6749 §4.4.3)
        return self._record(tokens, issuer, resource, scopes)


def _import_private_key(key: Any) -> Any:
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    if isinstance(key, (ECKey, RSAKey, OKPKey)):
        return key
    data = key.encode() if isinstance(key, str) else key
    for kind in (ECKey, RSAKey, OKPKey):
        try:
            return kind.import_key(data)
        except Exception:  # joserfc raises several types for "not this kind of key"
            continue
    raise ValueError("private_key is not a PEM or JWK private key joserfc can read")
