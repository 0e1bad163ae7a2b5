"""`Grant`, the `httpx.Auth` both OAuth grants build on: sign each request, renew the token when refused.

It keeps one token record per MCP endpoint (in memory and in the token
storage) and acts on what the server answers:

* **401**: read the challenge, re-read the server's protected resource
  metadata (so a move to another authorization server is noticed), then
  refresh the token if there is a refresh token from that same server, else
  obtain a new one; retry the request once with it.
* **403 `insufficient_scope`**: ask again for the union of the scopes asked
  for before and the scopes the challenge names (step-up), at most
  `max_step_ups` times per request, and not at all when the token already
  holds every challenged scope (asking again cannot help; the server is
  refusing for another reason). A step-up whose grant still lacks a
  challenged scope ends there, with an `AuthorizationError`: the
  authorization server (or the person) declined it, and would again.

With DPoP (RFC 9449; `dpop=None`, the default, uses it when the
authorization server lists ES256 in `dpop_signing_alg_values_supported` and
the MCP server does too, or challenges with the DPoP scheme: a bound token
is of no use to a server that only reads Bearer), token requests carry a
proof of the client's key, and a token of type DPoP
is sent as `Authorization: DPoP <token>` with a fresh proof on every
request. A 401 `use_dpop_nonce` from the server is answered once with its
nonce, before anything else is tried. The key is kept in the token storage
(`dpop key`), beside the tokens bound to it.

A token about to expire is refreshed before the request goes out. How a new
token is obtained, and with which client identity, is each grant's own
(`_obtain`, `_registration_for`). Requests to one endpoint are serialized
while a token is being obtained: concurrent 401s share one login.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx

from .challenge import BearerChallenge, parse_bearer_challenge
from .discovery import (
    ProtectedResource,
    discover_authorization_server,
    discover_protected_resource,
    endpoint_url,
    is_secure_url,
)
from .dpop import DPoPKey, Nonces
from .errors import AuthorizationError, printable
from .registration import Registration
from .storage import MemoryTokenStorage, TokenStorage
from .token_endpoint import expiring, refreshed, secret_auth, token_request

__all__ = ["Grant", "union_scopes"]

T = TypeVar("T")

logger = logging.getLogger("mcp_resolve.client.auth")

METADATA_TTL = 3600.0
"""Seconds an authorization server's metadata is reused before it is fetched again."""


def _authlib() -> Any:
    try:
        import authlib
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("OAuth for the MCP client needs Authlib: pip install 'mcp-resolve[auth]'") from None
    return authlib


def union_scopes(*groups: Iterable[str]) -> list[str]:
    """Scopes in first-seen order, each once (so the request stays readable and stable)."""
    seen: dict[str, None] = {}
    for group in groups:
        for scope in group:
            seen.setdefault(scope, None)
    return list(seen)


@dataclass
class _Attempts:
    """What one request has already tried, so no request loops on a server that keeps refusing."""

    renewals: int = 0
    refreshed: bool = False
    authorized: bool = False
    step_ups: int = 0
    nonce_retried: bool = False
    dpop_offered: bool = False
    """The server's last refusal carried a DPoP challenge: it takes DPoP tokens."""


def _network_failure(exc: httpx.HTTPError) -> str:
    """What an HTTP failure while signing in was, and where: the URL without its query (state, codes)."""
    try:
        url = exc.request.url
    except RuntimeError:  # an httpx error raised without a request
        where = "an authorization server"
    else:
        port = f":{url.port}" if url.port is not None else ""
        where = printable(f"{url.scheme}://{url.host}{port}{url.path}", 200)
    return f"could not reach {where}: {type(exc).__name__}: {printable(exc, 200)}"


def _is_dpop(tokens: dict[str, Any] | None) -> bool:
    return tokens is not None and str(tokens.get("token_type", "")).lower() == "dpop"


def _granted(tokens: dict[str, Any]) -> set[str]:
    """The scopes a token record holds: its `scope`, else what was asked for (RFC 6749 §5.1)."""
    scope = tokens.get("scope")
    return set(str(scope).split()) if scope is not None else set(tokens.get("requested_scope") or [])


class Grant(httpx.Auth):
    """What both grants share: discovery, token storage, refresh, the 401/403 handling."""

    grant_type = "authorization_code"

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None,
        storage: TokenStorage | None,
        max_step_ups: int,
        http_client: Callable[[], httpx.AsyncClient] | None,
        dpop: bool | None = None,
    ) -> None:
        _authlib()
        if max_step_ups < 0:
            raise ValueError("max_step_ups must be 0 or more")
        if dpop not in (None, True, False):
            raise ValueError("dpop must be None (when the authorization server supports it), True or False")
        self.dpop = dpop
        self._dpop_key: DPoPKey | None = None
        self._nonces = Nonces()
        self._dpop_resources: set[str] = set()
        """Protected resources that said they take DPoP (metadata or challenge)."""
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
        await self._guarded(self._sign(request, tokens))
        response = yield request
        attempts = _Attempts()
        while True:
            new_nonce = self._nonces.learn(request.url, response)
            if response.status_code not in (401, 403):
                return
            values = response.headers.get_list("www-authenticate")
            dpop_challenge = parse_bearer_challenge(values, "dpop")
            if (
                response.status_code == 401
                and _is_dpop(tokens)
                and dpop_challenge is not None
                and dpop_challenge.error == "use_dpop_nonce"
                and new_nonce
                and not attempts.nonce_retried
            ):
                attempts.nonce_retried = True  # RFC 9449 §9: once more, with the server's nonce
                await self._guarded(self._sign(request, tokens))
                response = yield request
                continue
            challenge = parse_bearer_challenge(values) or dpop_challenge
            attempts.dpop_offered = dpop_challenge is not None
            if response.status_code == 401:
                renewed = await self._guarded(self._renew(server, challenge, tokens, attempts))
            elif challenge is not None and challenge.error == "insufficient_scope":
                renewed = await self._guarded(self._step_up(server, challenge, tokens, attempts))
            else:
                renewed = None  # a 403 for a reason new scopes cannot fix
            if renewed is None:
                return  # the caller sees the refusal as it came
            tokens = renewed
            await self._guarded(self._sign(request, tokens))
            response = yield request

    @staticmethod
    async def _guarded(step: Awaitable[T]) -> T:
        """A step of the flow, any failure of which is an AuthorizationError.

        The MCP request itself is sent by httpx outside these steps, so an
        httpx error here came from signing in (an authorization server, the
        resource metadata, a redirect handler that browses): it is said as
        an `AuthorizationError` too, never as the MCP server's own failure,
        which a Client would read as "this server speaks an older protocol"
        and sign in again for. Anything else (an unreadable token file, a
        library's surprise) would end the whole connection instead of
        failing one request.
        """
        try:
            return await step
        except AuthorizationError:
            raise
        except httpx.HTTPError as exc:
            logger.debug("the authorization flow failed", exc_info=True)
            raise AuthorizationError("network_error", _network_failure(exc)) from exc
        except Exception as exc:
            logger.debug("the authorization flow failed", exc_info=True)
            raise AuthorizationError("client_error", f"{type(exc).__name__}: {printable(exc, 200)}") from exc

    async def _sign(self, request: httpx.Request, tokens: dict[str, Any] | None) -> None:
        request.headers.pop("DPoP", None)
        if tokens is None:
            request.headers.pop("Authorization", None)
        elif _is_dpop(tokens):
            key = await self._proof_key()
            access_token = str(tokens["access_token"])
            request.headers["Authorization"] = f"DPoP {access_token}"
            request.headers["DPoP"] = key.proof(
                request.method, request.url, access_token=access_token, nonce=self._nonces.get(request.url)
            )
        else:
            request.headers["Authorization"] = f"Bearer {tokens['access_token']}"

    async def _proof_key(self) -> DPoPKey:
        """This client's DPoP key: kept in the token storage, made on first use."""
        if self._dpop_key is None:
            stored = await self.storage.get("dpop key")
            key = DPoPKey.from_record(stored.get("jwk") if stored else None)
            if key is None:
                key = DPoPKey.generate()
                await self.storage.set("dpop key", {"jwk": key.to_record()})
            self._dpop_key = key
        return self._dpop_key

    def _uses_dpop(self, metadata: dict[str, Any], resource: ProtectedResource) -> bool:
        """Whether tokens for `resource` from this authorization server are asked for with DPoP."""
        if self.dpop is not None:
            return self.dpop
        algorithms = metadata.get("dpop_signing_alg_values_supported")
        return (
            isinstance(algorithms, list)
            and "ES256" in algorithms
            and resource.resource in self._dpop_resources
        )

    def _note_dpop(self, resource: ProtectedResource, attempts: _Attempts) -> None:
        """Remember that `resource` takes DPoP, when its metadata or its challenge says so."""
        if attempts.dpop_offered or "ES256" in (resource.dpop_algorithms or ()):
            self._dpop_resources.add(resource.resource)

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
        """A client for authorization servers: never the MCP connection's, so its headers stay there."""
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
        if tokens is None or not expiring(tokens):
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

    # -- after a refusal -------------------------------------------------------------------------
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
                self._note_dpop(resource, attempts)
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
                scopes = self._with_extras(union_scopes(previous, base or (), self.scopes), metadata)
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
            if not challenged or set(challenged) <= _granted(current):
                logger.warning("the server refuses scopes %s although the token holds them", challenged)
                return None
            if attempts.step_ups >= self.max_step_ups:
                return None
            attempts.step_ups += 1
            async with self._http() as http:
                resource, issuer, metadata = await self._discover(
                    http, server, challenge, current.get("issuer")
                )
                self._note_dpop(resource, attempts)
                scopes = self._with_extras(union_scopes(requested, challenged), metadata)
                widened = await self._save(
                    server, await self._obtain(http, resource, issuer, metadata, scopes)
                )
            missing = [scope for scope in challenged if scope not in _granted(widened)]
            if missing:
                # Asking again gets the same answer: a person or a policy said no, so say it once.
                raise AuthorizationError(
                    "insufficient_scope",
                    f"the authorization server did not grant {printable(' '.join(missing))}, "
                    "which the server asks for",
                )
            return widened

    async def _refresh(
        self, http: httpx.AsyncClient, server: str, tokens: dict[str, Any], metadata: dict[str, Any]
    ) -> dict[str, Any]:
        issuer = str(tokens["issuer"])
        registration = await self._registration_for(http, issuer, metadata, refreshing=True)
        form = {"refresh_token": tokens["refresh_token"], "resource": tokens.get("resource")}
        # A refresh token issued with DPoP is bound to the key too: refresh as the token was obtained.
        fresh = await self._token_request(
            http, metadata, registration, issuer, "refresh_token", form, dpop=_is_dpop(tokens)
        )
        record = refreshed(tokens, fresh)
        logger.info("refreshed the access token for %s", server)
        return await self._save(server, record)

    async def _token_request(
        self,
        http: httpx.AsyncClient,
        metadata: dict[str, Any],
        registration: Registration,
        issuer: str,
        grant_type: str,
        form: dict[str, Any],
        *,
        dpop: bool,
    ) -> dict[str, Any]:
        """Ask `issuer`'s token endpoint for tokens, with a DPoP proof when `dpop`."""
        client_auth = self._client_auth(registration, issuer)
        key = await self._proof_key() if dpop else None
        return await token_request(
            http, metadata, issuer, grant_type, form, client_auth, dpop=key, nonces=self._nonces
        )

    # -- what each grant says --------------------------------------------------------------------
    def _with_extras(self, scopes: list[str], metadata: dict[str, Any]) -> list[str]:
        """The scopes to ask for, with any this grant adds (OAuth adds `offline_access`)."""
        return scopes

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        """A new token record for `resource` from `issuer`, with `scopes`."""
        raise NotImplementedError

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> Registration:
        """The client identity to use at `issuer`."""
        raise NotImplementedError

    def _client_auth(self, registration: Registration, issuer: str) -> Any:
        """How the client authenticates at the token endpoint (Authlib's `ClientAuth`)."""
        return secret_auth(registration)
