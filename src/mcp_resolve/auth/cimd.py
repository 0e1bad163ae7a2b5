"""Client ID Metadata Documents: a client whose id is an https URL to its own metadata.

An MCP client with no prior relationship to the authorization server names
itself by the URL of a JSON document it hosts (draft-ietf-oauth-client-id-
metadata-document; MCP 2026-07-28 "Client Registration"). The server fetches
it when the client first shows up, checks it, and treats it as the client's
registration (a public client: PKCE, no secret).

Fetching a URL an anonymous caller chose is a server-side request forgery
risk, so the fetch is fenced in:

- https only; http only to a loopback address, and only with
  `allow_http_loopback` (tests, local development);
- the host is resolved first and every address it resolves to must be a
  public unicast address (no private, loopback, link-local, multicast,
  reserved or shared ranges, IPv4-mapped forms included), and the connection
  goes to an address that was checked (no second lookup a DNS rebinding could
  answer differently; TLS still verifies the certificate for the host name);
- no redirects are followed (a 3xx is refused: it could point anywhere);
- the body is read up to `max_bytes` (5 KiB by default, as the draft suggests);
- ONE deadline (`timeout_s`) covers the lookup, connecting, TLS and every byte.

The document must be a JSON object whose `client_id` is the URL exactly, with
`redirect_uris` and a `client_name`, no `client_secret`, and
`token_endpoint_auth_method` `none` (or absent). Documents are cached as
their `Cache-Control` says (`max-age`, clamped to [`min_ttl_s`, `max_ttl_s`];
`no-store`/`no-cache`: not kept), at most `max_cached` of them, oldest out
first; a failure is remembered for `failure_ttl_s` so a bad URL is not
fetched on every request. Concurrent requests for one URL share one fetch,
and at most `max_concurrent` fetches run at once.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import ssl
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
import pydantic
import pydantic_core

from .provider import AuthorizationErrorCode, AuthorizeError, OAuthClientInformationFull
from .redirect_uris import MAX_REDIRECT_URIS, check_redirect_uri, is_loopback_host

__all__ = ["ClientMetadataDocuments"]

logger = logging.getLogger("mcp_resolve.auth")

MAX_URL_LENGTH = 2048
_ALLOWED_GRANTS = frozenset({"authorization_code", "refresh_token"})
_FORBIDDEN_FIELDS = ("client_secret", "client_secret_expires_at")
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d{1,10})\"?\s*(?:,|$)", re.IGNORECASE)
_NO_STORE = re.compile(r"(?:^|,)\s*(?:no-store|no-cache)\s*(?:[,=]|$)", re.IGNORECASE)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class _Problem(Exception):
    """Why a document is refused; becomes `AuthorizeError` at the edge (a frozen dataclass exception
    cannot pass through a context manager, which sets its `__traceback__`)."""

    def __init__(self, error: AuthorizationErrorCode, description: str) -> None:
        super().__init__(description)
        self.error: AuthorizationErrorCode = error
        self.description = description


def _refused(message: str) -> _Problem:
    return _Problem("invalid_request", message)


def _unavailable(message: str) -> _Problem:
    return _Problem("temporarily_unavailable", message)


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _public(address: Address) -> bool:
    """A public unicast address: what an anonymous caller's URL may make us connect to."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None:  # an IPv4 address carried inside: judged as itself
            return _public(embedded)
        if address in _NAT64:  # 64:ff9b::/96 reaches the IPv4 address in its last 32 bits
            return _public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return address.is_global and not address.is_multicast and not address.is_reserved


@dataclass
class _Flight:
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: OAuthClientInformationFull | _Problem | None = None


class ClientMetadataDocuments:
    """Fetches, checks and caches Client ID Metadata Documents for the authorization endpoints."""

    def __init__(
        self,
        *,
        max_bytes: int = 5120,
        timeout_s: float = 5.0,
        max_cached: int = 1000,
        allow_http_loopback: bool = False,
        min_ttl_s: float = 60.0,
        max_ttl_s: float = 86400.0,
        default_ttl_s: float = 300.0,
        failure_ttl_s: float = 10.0,
        max_concurrent: int = 16,
        verify: ssl.SSLContext | bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_bytes < 256 or timeout_s <= 0 or max_cached < 1 or max_concurrent < 1:
            raise ValueError("max_bytes >= 256, timeout_s > 0, max_cached >= 1 and max_concurrent >= 1")
        if not 0 <= min_ttl_s <= max_ttl_s:
            raise ValueError("0 <= min_ttl_s <= max_ttl_s")
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.max_cached = max_cached
        self.allow_http_loopback = allow_http_loopback
        self.min_ttl_s, self.max_ttl_s = min_ttl_s, max_ttl_s
        self.default_ttl_s = min(max(default_ttl_s, min_ttl_s), max_ttl_s)
        self.failure_ttl_s = failure_ttl_s
        self.max_concurrent = max_concurrent
        self.clock = clock
        # No connection is ever reused: each fetch goes to the address it checked, with its own TLS name.
        self._http = httpx.AsyncClient(
            verify=verify,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self._cache: OrderedDict[str, tuple[float, OAuthClientInformationFull | _Problem]] = OrderedDict()
        self._flights: dict[str, _Flight] = {}

    async def aclose(self) -> None:
        await self._http.aclose()

    @staticmethod
    def is_cimd_client_id(client_id: str) -> bool:
        """Whether `client_id` is URL-formatted (https, or http): a metadata document, not a registered id."""
        parts = urlsplit(client_id)
        return parts.scheme in ("https", "http") and bool(parts.netloc) and parts.path not in ("", "/")

    async def client(self, client_id: str) -> OAuthClientInformationFull:
        """The client the document at `client_id` describes; `AuthorizeError` on any problem."""
        try:
            self._check_url(client_id)
        except _Problem as problem:
            raise AuthorizeError(problem.error, problem.description) from None
        now = self.clock()
        cached = self._cache.get(client_id)
        if cached is not None:
            if cached[0] > now:
                return _outcome(cached[1])
            del self._cache[client_id]
        flight = self._flights.get(client_id)
        if flight is None:
            if len(self._flights) >= self.max_concurrent:
                busy = "too many client metadata documents are being fetched; try again shortly"
                raise AuthorizeError("temporarily_unavailable", busy)
            flight = self._flights[client_id] = _Flight()
            try:
                outcome, ttl = await self._fetch(client_id)
                flight.outcome = outcome
                if ttl > 0:
                    self._remember(client_id, outcome, ttl)
            finally:
                del self._flights[client_id]
                flight.done.set()
        else:
            with anyio.move_on_after(self.timeout_s):
                await flight.done.wait()
        if flight.outcome is None:
            missing = f"the client metadata document {client_id} could not be fetched"
            raise AuthorizeError("temporarily_unavailable", missing)
        return _outcome(flight.outcome)

    # -- the URL and its addresses ---------------------------------------------------------

    def _check_url(self, url: str) -> None:
        if len(url) > MAX_URL_LENGTH:
            raise _refused(f"a client_id URL is at most {MAX_URL_LENGTH} characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise _refused("the client_id is not a valid URL") from None
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise _refused("a URL client_id must be an https URL")
        if parts.username is not None or parts.password is not None:
            raise _refused("a client_id URL may not carry user information")
        if parts.fragment or "#" in url:
            raise _refused("a client_id URL may not have a fragment")
        if parts.query:
            raise _refused("a client_id URL may not have a query")
        if parts.path in ("", "/"):
            raise _refused("a client_id URL must have a path (the document's location)")
        if any(segment in (".", "..") for segment in parts.path.split("/")):
            raise _refused("a client_id URL may not have . or .. path segments")
        if port == 0:
            raise _refused("the client_id URL names port 0")
        if parts.scheme == "http" and not (self.allow_http_loopback and is_loopback_host(parts.hostname)):
            raise _refused("a client_id URL must be https")

    def _allowed(self, address: Address) -> bool:
        return _public(address) or (self.allow_http_loopback and address.is_loopback)

    async def _addresses(self, host: str, port: int) -> list[Address]:
        """The checked addresses to connect to; refused when any is not allowed."""
        try:
            literal: Address | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            candidates = [literal]
        else:
            try:
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError:
                raise _unavailable(f"the client_id host {host} could not be resolved") from None
            candidates = []
            for _family, _type, _proto, _name, sockaddr in infos:
                address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
                if address not in candidates:
                    candidates.append(address)
        if not candidates:
            raise _unavailable(f"the client_id host {host} has no address")
        for address in candidates:
            if not self._allowed(address):
                # One bad address refuses the host: a lookup may not pick between a public and a private answer.
                raise _refused(f"the client_id host {host} resolves to a non-public address")
        return sorted(candidates, key=lambda a: a.version)  # IPv4 first: what loopback servers listen on

    # -- the fetch -------------------------------------------------------------------------

    async def _fetch(self, url: str) -> tuple[OAuthClientInformationFull | _Problem, float]:
        """(the client or why not, how long to keep that answer)."""
        try:
            with anyio.fail_after(self.timeout_s):
                body, cache_control = await self._download(url)
        except _Problem as exc:
            logger.info("refused client metadata document %s: %s", url, exc.description)
            return exc, self.failure_ttl_s
        except TimeoutError:
            error = _unavailable(
                f"the client metadata document {url} did not arrive within {self.timeout_s:g} s"
            )
            logger.info("refused client metadata document %s: too slow", url)
            return error, self.failure_ttl_s
        try:
            client = self._parse(url, body)
        except _Problem as exc:
            logger.info("refused client metadata document %s: %s", url, exc.description)
            return exc, self.failure_ttl_s
        return client, self._ttl(cache_control)

    async def _download(self, url: str) -> tuple[bytes, str]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = await self._addresses(host, port)
        last: Exception | None = None
        for address in addresses:
            netloc = f"[{address}]" if address.version == 6 else str(address)
            pinned = urlunsplit((parts.scheme, f"{netloc}:{port}", parts.path, "", ""))
            extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
            headers = {"host": parts.netloc.rpartition("@")[2], "accept": "application/json"}
            try:
                async with self._http.stream(
                    "GET", pinned, headers=headers, extensions=extensions, timeout=self.timeout_s
                ) as response:
                    return await self._read(url, response)
            except httpx.ConnectError as exc:
                last = exc
                continue
            except httpx.TimeoutException:
                raise TimeoutError from None
            except httpx.HTTPError as exc:
                raise _unavailable(
                    f"the client metadata document {url} could not be fetched ({type(exc).__name__})"
                ) from None
        raise _unavailable(f"the client metadata document {url} could not be reached ({type(last).__name__})")

    async def _read(self, url: str, response: httpx.Response) -> tuple[bytes, str]:
        status = response.status_code
        if 300 <= status < 400:
            raise _refused(
                f"the client metadata document {url} redirects (HTTP {status}); redirects are not followed"
            )
        if status != 200:
            fail = _unavailable if status >= 500 else _refused
            raise fail(f"the client metadata document {url} answered HTTP {status}")
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise _refused(f"the client metadata document {url} is larger than {self.max_bytes} bytes")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_bytes:
                raise _refused(f"the client metadata document {url} is larger than {self.max_bytes} bytes")
        return bytes(body), response.headers.get("cache-control", "")

    def _parse(self, url: str, body: bytes) -> OAuthClientInformationFull:
        try:
            document = pydantic_core.from_json(body)
        except ValueError:
            raise _refused(f"the client metadata document {url} is not JSON") from None
        if not isinstance(document, dict):
            raise _refused(f"the client metadata document {url} is not a JSON object")
        if document.get("client_id") != url:
            raise _refused(f"the client metadata document's client_id is not its own URL {url}")
        for name in _FORBIDDEN_FIELDS:
            if name in document:
                raise _refused(f"a client metadata document may not carry {name} (public clients only)")
        method = document.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise _refused("a client metadata document's token_endpoint_auth_method must be none")
        redirect_uris = document.get("redirect_uris")
        if (
            not isinstance(redirect_uris, list)
            or not redirect_uris
            or not all(isinstance(u, str) for u in redirect_uris)
        ):
            raise _refused("a client metadata document must list its redirect_uris")
        kind = document.get("application_type")
        if len(redirect_uris) > MAX_REDIRECT_URIS or any(
            check_redirect_uri(uri, kind if isinstance(kind, str) else None) for uri in redirect_uris
        ):
            raise _refused("a client metadata document's redirect_uris include one a client may not register")
        client_name = document.get("client_name")
        if not isinstance(client_name, str) or not client_name.strip() or len(client_name) > 200:
            raise _refused("a client metadata document must have a client_name (at most 200 characters)")
        grants = document.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or not set(grants) <= _ALLOWED_GRANTS:
            raise _refused(
                "a client metadata document may ask for authorization_code and refresh_token grants only"
            )
        if document.get("response_types", ["code"]) != ["code"]:
            raise _refused('a client metadata document\'s response_types must be ["code"]')
        try:
            return OAuthClientInformationFull.model_validate(
                {**document, "client_id": url, "token_endpoint_auth_method": "none", "grant_types": grants}
            )
        except pydantic.ValidationError as exc:
            fields = sorted({str(error["loc"][0]) for error in exc.errors() if error["loc"]})
            raise _refused(
                f"the client metadata document has invalid {', '.join(fields) or 'fields'}"
            ) from None

    # -- the cache -------------------------------------------------------------------------

    def _ttl(self, cache_control: str) -> float:
        if _NO_STORE.search(cache_control):
            return 0.0
        match = _MAX_AGE.search(cache_control)
        ttl = float(match.group(1)) if match else self.default_ttl_s
        return min(max(ttl, self.min_ttl_s), self.max_ttl_s)

    def _remember(self, url: str, outcome: OAuthClientInformationFull | _Problem, ttl: float) -> None:
        self._cache[url] = (self.clock() + ttl, outcome)
        self._cache.move_to_end(url)
        while len(self._cache) > self.max_cached:
            self._cache.popitem(last=False)


def _outcome(outcome: OAuthClientInformationFull | _Problem) -> OAuthClientInformationFull:
    if isinstance(outcome, _Problem):
        raise AuthorizeError(outcome.error, outcome.description)
    return outcome.model_copy(deep=True)
