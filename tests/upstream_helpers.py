"""An upstream identity provider like GitHub or Google, for the OAuth proxy's tests.

`upstream_provider(mode, client_id=..., client_secret=...)` runs `oidc-provider` 9.x
(tests/node/upstream_server.mjs, on the repo-local Node 22) on a free loopback port, configured as
GitHub or Google are: no dynamic registration, no resource indicators, opaque access tokens, one
static confidential client (the proxy), refresh tokens, PKCE S256. `mode="oidc"` is Google-like
(discovery, an ID token with sub, email, name and groups); `mode="oauth"` is GitHub-like (no
`openid` asked for, identity from GET /user, GitHub-shaped). A scripted person signs in and
consents as soon as the interaction page is fetched: `account` (default "alice"), or whoever the
authorization request's `login_hint` names. `Upstream.faults({...})` makes chosen endpoints slow,
failing or trickling, for the tests of an upstream that misbehaves.

`DocumentServer` serves Client ID Metadata Documents (or anything hostile in their place) over real
HTTP on loopback (uvicorn, `http_helpers.http_server`), and counts the requests for each path.

`follow_login(url, redirect_uri)` plays the browser: it fetches the authorization URL and follows
the redirects with cookies, over loopback only, until the redirect to `redirect_uri`, and returns
that URL's query parameters.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urljoin, urlsplit

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from http_helpers import http_server
from oidc_helpers import NODE, NODE_DIR, node_installed, node_script

__all__ = ["Answer", "DocumentServer", "Upstream", "follow_login", "upstream_provider"]

LAUNCHER = NODE_DIR / "upstream_server.mjs"

Mode = Literal["oidc", "oauth"]


@dataclass(frozen=True)
class Upstream:
    """A running upstream: its issuer (`http://127.0.0.1:PORT`), port, mode and static client."""

    issuer: str
    port: int
    mode: Mode
    client_id: str
    client_secret: str

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def endpoints(self) -> dict[str, str]:
        """oidc-provider's endpoint URLs (its defaults), for a config that does not use discovery."""
        return {
            "authorization_endpoint": f"{self.issuer}/auth",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/user" if self.mode == "oauth" else f"{self.issuer}/me",
            "jwks_uri": f"{self.issuer}/jwks",
            "revocation_endpoint": f"{self.issuer}/token/revocation",
        }

    async def faults(self, faults: Mapping[str, Mapping[str, object]]) -> None:
        """Make paths misbehave: {"/token": {"delay_ms": 3000}}, {"status": 503}, {"drip_ms": 200},
        {"redirect": URL}; {} clears."""
        async with httpx.AsyncClient(timeout=5) as http:
            response = await http.post(f"{self.issuer}/__faults", content=json.dumps(dict(faults)))
            response.raise_for_status()


@asynccontextmanager
async def upstream_provider(
    mode: Mode,
    *,
    client_id: str = "mcp-proxy",
    client_secret: str = "proxy-secret-0123456789",
    redirect_uris: Sequence[str] = ("http://127.0.0.1/auth/callback",),
    account: str = "alice",
    auth_method: str = "client_secret_post",
    access_ttl_s: int = 3600,
    refresh_tokens: bool = True,
    extra_clients: Sequence[tuple[str, str]] = (),
    faults: Mapping[str, Mapping[str, object]] | None = None,
) -> AsyncIterator[Upstream]:
    """oidc-provider as an upstream in `mode` until the block ends.

    Loopback `redirect_uris` match with any port (the static client is then `native`).
    `extra_clients` are more static clients (client_id, client_secret) with the same redirect URIs.
    """
    node_installed()
    env: dict[str, str] = {
        **os.environ,
        "UPSTREAM_ACCOUNT": account,
        "UPSTREAM_AUTH_METHOD": auth_method,
        "UPSTREAM_ACCESS_TTL": str(access_ttl_s),
        "UPSTREAM_REFRESH": "1" if refresh_tokens else "0",
        "UPSTREAM_CLIENTS": json.dumps(
            [
                {"client_id": c, "client_secret": s, "redirect_uris": list(redirect_uris)}
                for c, s in extra_clients
            ]
        ),
        "UPSTREAM_FAULTS": json.dumps(dict(faults or {})),
    }
    command = [str(NODE), str(LAUNCHER), mode, client_id, client_secret, ",".join(redirect_uris)]
    async with node_script(command, env, "the upstream provider") as ready:
        yield Upstream(str(ready["issuer"]), int(ready["port"]), mode, client_id, client_secret)


def _loopback(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")


async def follow_login(url: str, redirect_uri: str, *, max_redirects: int = 12) -> dict[str, Any]:
    """Play the browser from the authorization URL to the redirect back; the query of that redirect.

    Cookies are kept (the provider's interaction and session cookies); bodies are never read.
    Only loopback http is visited, and the redirect to `redirect_uri` (any port, as the provider
    allows for a native client) is captured, not followed.
    """
    target = urlsplit(redirect_uri)
    async with httpx.AsyncClient(timeout=10, follow_redirects=False) as http:
        for _hop in range(max_redirects):
            assert _loopback(url), f"the login left loopback: {url}"
            response = await http.get(url)
            location = response.headers.get("location")
            assert response.is_redirect and location, (
                f"HTTP {response.status_code} instead of a redirect at {url}"
            )
            url = urljoin(url, location)
            parts = urlsplit(url)
            if (parts.scheme, parts.hostname, parts.path) == (target.scheme, target.hostname, target.path):
                return dict(parse_qsl(parts.query, keep_blank_values=True))
    raise AssertionError(f"no redirect back to {redirect_uri} within {max_redirects} hops")


@dataclass
class Answer:
    """What `DocumentServer` answers for one path."""

    body: bytes | Mapping[str, Any] | list[Any] = b""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    drip_s: float | None = None
    """Send the body one byte at a time, this many seconds apart (no Content-Length)."""


@dataclass
class DocumentServer:
    """HTTP on loopback answering each path as `answers` says (404 otherwise); `hits` counts requests."""

    answers: dict[str, Answer] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)
    hosts: list[str] = field(default_factory=list)
    """The Host header of every request, in order."""
    url: str = ""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        self.hits[request.url.path] += 1
        self.hosts.append(request.headers.get("host", ""))
        answer = self.answers.get(request.url.path)
        response: Response
        if answer is None:
            response = Response(b"not here", status_code=404)
        else:
            body = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
            headers = {"content-type": "application/json", **answer.headers}
            if answer.drip_s is None:
                response = Response(body, status_code=answer.status, headers=headers)
            else:
                delay = answer.drip_s

                async def drip() -> AsyncIterator[bytes]:
                    for byte in body:
                        yield bytes([byte])
                        await anyio.sleep(delay)

                response = StreamingResponse(drip(), status_code=answer.status, headers=headers)
        await response(scope, receive, send)

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve until the block ends; yields `http://127.0.0.1:PORT`."""
        async with http_server(self, graceful=0.5) as url:
            self.url = url.rstrip("/")
            yield self.url

    def document(self, path: str, **fields: Any) -> str:
        """Serve a valid metadata document at `path` (fields override); its URL, the client_id."""
        client_id = f"{self.url}{path}"
        body = {
            "client_id": client_id,
            "client_name": "Example MCP Client",
            "redirect_uris": ["http://127.0.0.1:3000/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **fields,
        }
        headers = body.pop("_headers", {})
        self.answers[path] = Answer({k: v for k, v in body.items() if v is not None}, headers=headers)
        return client_id
