"""Finding a protected server's authorization server, and checking everything it says.

Two documents, in the order the spec fixes:

1. the server's Protected Resource Metadata (RFC 9728): from the URL in the
   401 challenge, else the well-known URIs (path-inserted, then root). Its
   `resource` must name the endpoint we are talking to, or the metadata is a
   trap (a server advertising someone else's resource to harvest tokens for
   it), and `authorization_servers` names where to log in;
2. that authorization server's metadata (RFC 8414, OpenID Connect Discovery),
   from the well-known URIs in the spec's order. Its `issuer` must be
   identical to the issuer we built the URL from (a document at
   `attacker.example` claiming to be `honest.example` is rejected), its
   endpoints must be https (or loopback), and it must offer PKCE S256.

Every fetch here is bounded (size, no redirects, one deadline for the whole
exchange: `fetch_deadline`) because every byte comes from a server that may
be hostile, and every failure is an `AuthorizationError` naming what was
wrong, never a crash. Only an answer (a 404) sends discovery on to the next
URL or to a fallback; a fetch that got none is `network_error`, so cutting
a connection cannot steer the client to another authorization server.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx

from ..._resource_urls import canonical_url
from .challenge import BearerChallenge
from .errors import AuthorizationError, printable

__all__ = [
    "ProtectedResource",
    "authorization_server_metadata_urls",
    "deadline_s",
    "discover_authorization_server",
    "discover_protected_resource",
    "endpoint_url",
    "fetch_deadline",
    "is_secure_url",
    "read_json",
    "resource_covers",
]

MAX_METADATA_BYTES = 256 * 1024
"""Real metadata documents are a few KiB; anything near this is not one."""
FETCH_DEADLINE_S = 30.0
"""The whole of one exchange with an authorization server, when the HTTP client sets no timeout."""


def deadline_s(http: httpx.AsyncClient) -> float:
    """Seconds one whole exchange through `http` may take: its longest timeout, else `FETCH_DEADLINE_S`."""
    timeout = http.timeout
    return max(
        (t for t in (timeout.connect, timeout.read, timeout.write, timeout.pool) if t),
        default=FETCH_DEADLINE_S,
    )


@asynccontextmanager
async def fetch_deadline(http: httpx.AsyncClient, url: str) -> AsyncIterator[None]:
    """One deadline for a whole exchange (connect, headers, body): the client's longest timeout.

    httpx times each read, so a server trickling a byte a second would never
    trip it. When the deadline passes, `httpx.ReadTimeout` is raised: a
    timeout like any other to the code around the fetch.
    """
    seconds = deadline_s(http)
    try:
        with anyio.fail_after(seconds):
            yield
    except TimeoutError:
        raise httpx.ReadTimeout(f"{url} did not answer in full within {seconds:g} s") from None


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_secure_url(url: str) -> bool:
    """https, or plain http to this machine (RFC 8252 §7.3; how every local test setup runs)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if not parts.hostname or parts.username is not None or parts.password is not None:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(parts.hostname))


def endpoint_url(url: str | httpx.URL) -> str:
    """The MCP endpoint a request went to: scheme, authority and path (no query, no fragment)."""
    parts = urlsplit(str(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether a protected resource identifier names the endpoint `server_url` (itself or a path above it).

    Both are normalised by the rule the server side compares audiences by
    (scheme and host case, a default port and a trailing slash aside). The
    origin must then match exactly and the resource's path must be the
    endpoint's path or a whole-segment prefix of it: `https://h/` covers
    `https://h/mcp`, `https://h/m` does not. A resource with a query, a user
    name or password, a fragment or a malformed host or port covers nothing.
    """
    ours, theirs = canonical_url(server_url), canonical_url(resource)
    if ours is None or theirs is None or theirs.query:
        return False
    if (ours.scheme, ours.host, ours.port) != (theirs.scheme, theirs.host, theirs.port):
        return False
    return ours.path == theirs.path or ours.path.startswith(theirs.path + "/")


async def read_json(response: httpx.Response, limit: int) -> Any:
    """The response body parsed as JSON, refusing bodies over `limit` bytes before reading them all."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise AuthorizationError("response_too_large", f"{response.request.url} sent more than {limit} bytes")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise AuthorizationError(
                "response_too_large", f"{response.request.url} sent more than {limit} bytes"
            )
    try:
        return json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError):
        raise AuthorizationError("invalid_response", f"{response.request.url} did not send JSON") from None


async def _get_document(http: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
    """A JSON object served at `url` with 200, or None when the server says there is none (try the next place).

    Only an answer means "not here" (a 404, or any other status: redirects
    are not followed). A fetch that got no answer (no route, a dropped
    connection, the deadline) says nothing about what is there, so it is
    `network_error`, never a reason to try a fallback: a fallback reached
    that way would send the person to an authorization server chosen by
    whoever can cut a connection.
    """
    if not is_secure_url(url):
        raise AuthorizationError("insecure_url", f"refusing to fetch metadata over plain http from {url}")
    try:
        async with (
            fetch_deadline(http, url),
            http.stream("GET", url, headers={"accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                return None  # 404 is the ordinary "not here"
            document = await read_json(response, MAX_METADATA_BYTES)
    except httpx.HTTPError as exc:
        raise AuthorizationError("network_error", _unreachable(http, url, exc)) from None
    return document if isinstance(document, dict) else None


def _unreachable(http: httpx.AsyncClient, url: str, exc: httpx.HTTPError) -> str:
    """Which metadata URL gave no answer, and how, without its query (it came from the server)."""
    where = printable(endpoint_url(url), 200)
    if isinstance(exc, httpx.TimeoutException):
        return f"could not reach {where}: no complete answer within {deadline_s(http):g} s"
    return f"could not reach {where}: {type(exc).__name__}: {printable(exc, 200)}"


@dataclass(frozen=True)
class ProtectedResource:
    """What the MCP server's protected resource metadata says (validated)."""

    resource: str
    """The identifier to send as `resource` (RFC 8707): exactly as the metadata published it."""
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    metadata_url: str | None
    """None when the server publishes no metadata (2025-03-26 servers: the origin is the issuer)."""
    dpop_algorithms: tuple[str, ...] | None = None
    """`dpop_signing_alg_values_supported`: the DPoP proof algorithms the server accepts, if it says."""


def _protected_resource_urls(server_url: str) -> list[str]:
    parts = urlsplit(server_url)
    root = urlunsplit((parts.scheme, parts.netloc, "/.well-known/oauth-protected-resource", "", ""))
    path = parts.path.rstrip("/")
    return [f"{root}{path}", root] if path else [root]


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


async def discover_protected_resource(
    http: httpx.AsyncClient, server_url: str, challenge: BearerChallenge | None
) -> ProtectedResource:
    """The server's protected resource metadata: the challenge's URL first, then the well-known URIs."""
    candidates = _protected_resource_urls(server_url)
    hinted = challenge.resource_metadata if challenge is not None else None
    if hinted:
        if not is_secure_url(hinted):
            raise AuthorizationError(
                "insecure_url", f"the server's resource_metadata URL is not https: {hinted}"
            )
        candidates = [hinted, *(url for url in candidates if url != hinted)]  # each URL asked once
    for url in candidates:
        document = await _get_document(http, url)
        if document is None:
            continue
        resource = document.get("resource")
        servers = _strings(document.get("authorization_servers"))
        if not isinstance(resource, str) or not servers:
            raise AuthorizationError(
                "metadata_invalid", f"{url} lacks a resource or authorization_servers (RFC 9728)"
            )
        if not resource_covers(resource, server_url):
            raise AuthorizationError(
                "resource_mismatch",
                f"{url} describes the resource {resource!r}, not {server_url!r}; refusing to authorize for it",
            )
        return ProtectedResource(
            resource,
            servers,
            _strings(document.get("scopes_supported")),
            url,
            _strings(document.get("dpop_signing_alg_values_supported")),
        )
    # No metadata anywhere: a 2025-03-26 server, whose origin is its own authorization server.
    parts = urlsplit(server_url)
    return ProtectedResource(server_url, (urlunsplit((parts.scheme, parts.netloc, "", "", "")),), None, None)


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order the spec says to try them."""
    parts = urlsplit(issuer)
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _validate_metadata(metadata: dict[str, Any], issuer: str) -> None:
    """RFC 8414 §2/§3.3 checks, through Authlib's validators, plus the https rule for every endpoint."""
    from authlib.oauth2 import rfc8414

    document = rfc8414.AuthorizationServerMetadata(metadata)
    checks = (
        document.validate_issuer,
        document.validate_authorization_endpoint,
        document.validate_token_endpoint,
        document.validate_registration_endpoint,
        document.validate_scopes_supported,
        document.validate_grant_types_supported,
        document.validate_token_endpoint_auth_methods_supported,
        document.validate_code_challenge_methods_supported,
    )
    for check in checks:
        try:
            check()
        except ValueError as exc:
            raise AuthorizationError("metadata_invalid", f"{issuer}'s metadata: {exc}") from None
    for name in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        url = metadata.get(name)
        if url is not None and (not isinstance(url, str) or not is_secure_url(url)):
            raise AuthorizationError("insecure_url", f"{issuer}'s {name} is not https: {url!r}")


async def discover_authorization_server(http: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
    """The validated metadata of `issuer` (a URL the protected resource metadata listed)."""
    parts = urlsplit(issuer)
    if not is_secure_url(issuer) or parts.query or parts.fragment:
        raise AuthorizationError("insecure_url", f"the authorization server {issuer!r} is not an https URL")
    for url in authorization_server_metadata_urls(issuer):
        document = await _get_document(http, url)
        if document is None:
            continue
        # Simple string comparison (RFC 8414 §3.3): no case folding, no trailing-slash leniency.
        if document.get("issuer") != issuer:
            raise AuthorizationError(
                "issuer_mismatch",
                f"the metadata at {url} names the issuer {document.get('issuer')!r}, not {issuer!r}",
            )
        _validate_metadata(document, issuer)
        return document
    raise AuthorizationError("metadata_not_found", f"{issuer} publishes no authorization server metadata")
