"""The official SDK (`mcp` 2.3.0) and our embedded authorization server, both ways round.

1. Its client (`OAuthClientProvider`) against examples/auth_own_users.py:
   it discovers our metadata, registers (DCR), a person signs in at the HTML
   form, it calls a tool, refreshes an expired token, and steps up when a
   tool needs a wider scope.
2. Its provider shape: `SimpleOAuthProvider` below is the official SDK's
   simple-auth example provider (examples/servers/simple-auth), written
   again with the same structure, names and signatures; its only
   MCP-specific lines are the imports from `mcp_resolve.auth.provider`. It
   runs unchanged behind `MCPServer(auth_server_provider=...)`, and both
   clients sign in through it.
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import urljoin

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from auth_helpers import serve_at_known_url
from mcp_resolve import Client, Context, MCPServer
from mcp_resolve.auth import AuthSettings, ClientRegistrationOptions
from mcp_resolve.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    OAuthClientInformationFull,
    OAuthToken,
    RefreshToken,
    construct_redirect_uri,
)
from mcp_resolve.client.auth import OAuth
from own_users_helpers import REDIRECT_URI, Person, served

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class _Memory:
    """The official client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def official_oauth(url: str, person: Person) -> tuple[OAuthClientProvider, _Memory]:
    redirects: list[dict[str, str]] = []

    async def browser(authorization_url: str) -> None:
        redirects.append(await person.visit(authorization_url))

    async def callback() -> AuthorizationCodeResult:
        back = redirects.pop(0)
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))

    storage = _Memory()
    oauth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            client_name="official-test",
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser,
        callback_handler=callback,
    )
    return oauth, storage


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_signs_in_refreshes_and_steps_up(mode: str) -> None:
    async with served(token_ttl=1) as (url, provider):
        person = Person()
        oauth, storage = official_oauth(url, person)
        http: httpx2.AsyncClient = create_mcp_http_client(auth=oauth)
        async with http, OfficialClient(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            assert _text(await client.call_tool("whoami", {})).startswith("alice (desk")
            assert len(provider.clients) == 1 and provider.logins == 1

            await anyio.sleep(1.2)  # expired: refreshed, nobody signs in again
            assert _text(await client.call_tool("whoami", {})).startswith("alice")
            assert provider.refreshes >= 1 and provider.logins == 1

            assert _text(await client.call_tool("refund", {"order_id": "B-2"})) == "alice refunded B-2"
            assert provider.logins == 2 and len(provider.clients) == 1
        assert storage.tokens is not None and "desk:refund" in storage.tokens.scope.split()


# ---------------------------------------------------------------------------------------------
# The official simple-auth example's provider, ported: only the imports above name mcp_resolve.
# ---------------------------------------------------------------------------------------------


class SimpleAuthSettings:
    demo_username: str = "demo_user"
    demo_password: str = "demo_password"
    mcp_scope: str = "user"


class SimpleOAuthProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """A login form for one demo user; opaque tokens in memory; no refresh tokens (as in the original)."""

    def __init__(self, settings: SimpleAuthSettings, auth_callback_url: str, server_url: str) -> None:
        self.settings = settings
        self.auth_callback_url = auth_callback_url
        self.server_url = server_url
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.auth_codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.state_mapping: dict[str, dict[str, str | None]] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if not client_info.client_id:
            raise ValueError("No client_id provided")
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        state = params.state or secrets.token_hex(16)
        self.state_mapping[state] = {
            "redirect_uri": str(params.redirect_uri),
            "code_challenge": params.code_challenge,
            "redirect_uri_provided_explicitly": str(params.redirect_uri_provided_explicitly),
            "client_id": client.client_id,
            "resource": params.resource,
        }
        return f"{self.auth_callback_url}?state={state}&client_id={client.client_id}"

    async def get_login_page(self, state: str) -> HTMLResponse:
        return HTMLResponse(
            f'<form action="{self.server_url.rstrip("/")}/login/callback" method="post">'
            f'<input type="hidden" name="form" value="{state}">'
            '<input name="username"><input name="password" type="password"><button>Sign In</button></form>'
        )

    async def handle_login_callback(self, request: Request) -> Response:
        form = await request.form()
        username, password, state = form.get("username"), form.get("password"), form.get("form")
        if not isinstance(username, str) or not isinstance(password, str) or not isinstance(state, str):
            return HTMLResponse("Missing username, password, or state parameter", 400)
        redirect_uri = await self.handle_simple_callback(username, password, state)
        return RedirectResponse(url=redirect_uri, status_code=302)

    async def handle_simple_callback(self, username: str, password: str, state: str) -> str:
        state_data = self.state_mapping.get(state)
        if not state_data:
            raise ValueError("Invalid state parameter")
        redirect_uri = state_data["redirect_uri"]
        code_challenge = state_data["code_challenge"]
        client_id = state_data["client_id"]
        assert redirect_uri is not None and code_challenge is not None and client_id is not None
        if username != self.settings.demo_username or password != self.settings.demo_password:
            raise ValueError("Invalid credentials")
        new_code = f"mcp_{secrets.token_hex(16)}"
        self.auth_codes[new_code] = AuthorizationCode(
            code=new_code,
            client_id=client_id,
            redirect_uri=AnyHttpUrl(redirect_uri),
            redirect_uri_provided_explicitly=state_data["redirect_uri_provided_explicitly"] == "True",
            expires_at=time.time() + 300,
            scopes=[self.settings.mcp_scope],
            code_challenge=code_challenge,
            resource=state_data.get("resource"),
        )
        del self.state_mapping[state]
        return construct_redirect_uri(redirect_uri, code=new_code, state=state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.auth_codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if authorization_code.code not in self.auth_codes:
            raise ValueError("Invalid authorization code")
        mcp_token = f"mcp_{secrets.token_hex(32)}"
        self.tokens[mcp_token] = AccessToken(
            token=mcp_token,
            client_id=client.client_id,
            scopes=authorization_code.scopes,  # type: ignore[arg-type]
            expires_at=int(time.time()) + 3600,
            resource=authorization_code.resource,
        )
        del self.auth_codes[authorization_code.code]
        return OAuthToken(
            access_token=mcp_token,
            token_type="Bearer",
            expires_in=3600,
            scope=" ".join(authorization_code.scopes),
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        access_token = self.tokens.get(token)
        if not access_token:
            return None
        if access_token.expires_at and access_token.expires_at < time.time():
            del self.tokens[token]
            return None
        return access_token

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        raise NotImplementedError("Refresh tokens not supported")

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)


def simple_auth_app(base: str) -> Any:
    """The simple-auth server's assembly: the provider, the MCP server, the login routes."""
    provider = SimpleOAuthProvider(SimpleAuthSettings(), f"{base}/login", base)
    mcp = MCPServer(
        "Simple Auth MCP Server",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            required_scopes=["user"],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["user"], default_scopes=["user"]
            ),
        ),
    )

    @mcp.tool()
    async def get_time(ctx: Context) -> str:
        assert ctx.access_token is not None
        return f"time for {ctx.access_token.client_id}"

    async def login_page(request: Request) -> Response:
        return await provider.get_login_page(request.query_params.get("state", ""))

    app = mcp.streamable_http_app()
    app.router.routes.append(Route("/login", login_page, methods=["GET"]))
    app.router.routes.append(Route("/login/callback", provider.handle_login_callback, methods=["POST"]))
    return app


async def test_the_official_simple_auth_provider_ports_by_changing_imports() -> None:
    async with serve_at_known_url(simple_auth_app) as base:
        url = f"{base}/mcp"
        person = Person("demo_user", "demo_password")
        auth = OAuth(redirect_handler=person, callback_handler=person)
        async with Client(url, auth=auth) as client:
            assert (await client.call_tool("get_time", {})).content[0].text.startswith("time for ")  # type: ignore[union-attr]

        oauth, storage = official_oauth(url, Person("demo_user", "demo_password"))
        http: httpx2.AsyncClient = create_mcp_http_client(auth=oauth)
        async with (
            http,
            OfficialClient(streamable_http_client(url, http_client=http), mode="legacy") as official,
        ):
            assert _text(await official.call_tool("get_time", {})).startswith("time for ")
        assert storage.tokens is not None and storage.tokens.scope == "user"

        # Wrong credentials: the provider's own page refuses, nothing reaches the client.
        async with httpx.AsyncClient() as browser:
            answer = await browser.post(urljoin(base, "/login/callback"), data={"form": "x", "username": "a"})
            assert answer.status_code in (400, 500) and "Traceback" not in answer.text
