"""The embedded-provider example (examples/auth_own_users.py) for tests, and a person who signs in at its form.

`served(token_ttl)` runs the example's app with uvicorn on loopback at a URL
it knows before it starts (its issuer and resource are that URL).
`Person` plays someone at a browser: it opens the authorization URL, is
sent to the login page, fills in the HTML form (user name, password, the
hidden form id it finds in the page) and posts it where the form says and is sent back to the client's
redirect URI, whose query it keeps for the client. It is both handlers our
`OAuth` takes; `visit` serves the official client's redirect handler.

`pkce`, `register` and `sign_in` drive the same steps in process (httpx's
ASGI transport: no socket) for tests of single requests.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx

from auth_helpers import serve_at_known_url
from conftest import EXAMPLES, load_module
from mcp_resolve.client.auth import AuthorizationResponse

__all__ = ["REDIRECT_URI", "Person", "example", "pkce", "register", "served", "sign_in"]

REDIRECT_URI = "http://127.0.0.1:47823/callback"
_FORM_ID = re.compile(r'name="form" value="([^"]+)"')
_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')


def example() -> ModuleType:
    """A fresh import of examples/auth_own_users.py."""
    return load_module(EXAMPLES / "auth_own_users.py")


def provider_of(app: Any) -> Any:
    """The `OwnUsers` provider behind an app the example built."""
    return app.state.mcp_endpoint.server.auth_server_provider


@asynccontextmanager
async def served(**options: Any) -> AsyncIterator[tuple[str, Any]]:
    """(the MCP endpoint URL, the provider) of the example served on loopback."""
    module = example()
    apps: list[Any] = []

    def make(base: str) -> Any:
        apps.append(module.app(base, **options))
        return apps[0]

    async with serve_at_known_url(make) as base:
        yield f"{base}/mcp", provider_of(apps[0])


class Person:
    """Signs in as `username` at the example's login form; keeps each redirect back for the client."""

    def __init__(self, username: str = "alice", password: str = "wonderland") -> None:
        self.username, self.password = username, password
        self.pages_seen = 0
        self._responses: list[AuthorizationResponse] = []

    async def visit(self, url: str) -> dict[str, str]:
        """Open the authorization URL, sign in, and return the query of the redirect back."""
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.get(url)
            assert answer.status_code == 302, answer.text
            login = urljoin(url, answer.headers["location"])
            page = await http.get(login)
            assert page.status_code == 200 and "<form" in page.text
            self.pages_seen += 1
            found = _FORM_ID.search(page.text)
            assert found is not None
            form = {"form": found.group(1), "username": self.username, "password": self.password}
            action = _ACTION.search(page.text)
            assert action is not None
            answer = await http.post(urljoin(login, action.group(1)), data=form)
            assert answer.status_code == 302, answer.text
            back = answer.headers["location"]
        assert back.startswith(REDIRECT_URI)
        return dict(parse_qsl(urlsplit(back).query))

    # -- our client's redirect and callback handlers ---------------------------------------------
    async def __call__(self, url: str) -> None:
        self._responses.append(AuthorizationResponse(await self.visit(url)))

    async def redirect_uri(self) -> str:
        return REDIRECT_URI

    async def wait_for_callback(self, state: str, timeout: float) -> AuthorizationResponse:
        return self._responses.pop(0)


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def register(http: httpx.AsyncClient, **metadata: Any) -> dict[str, Any]:
    """Register a client (a public native one unless `metadata` says otherwise); its registration."""
    body = {
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
        **metadata,
    }
    answer = await http.post("/register", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()  # type: ignore[no-any-return]


async def sign_in(
    http: httpx.AsyncClient,
    client_id: str,
    challenge: str,
    *,
    user: tuple[str, str] = ("alice", "wonderland"),
    **params: str,
) -> dict[str, str]:
    """Authorize `client_id` with PKCE `challenge` and sign in as `user`; the query of the redirect back."""
    query = {
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "scope": "desk",
        **params,
    }
    answer = await http.get("/authorize", params=query)
    assert answer.status_code == 302, answer.text
    page = await http.get(answer.headers["location"])
    found = _FORM_ID.search(page.text)
    assert found is not None, page.text
    answer = await http.post(
        "/login", data={"form": found.group(1), "username": user[0], "password": user[1]}
    )
    assert answer.status_code == 302, answer.text
    return dict(parse_qsl(urlsplit(answer.headers["location"]).query))
