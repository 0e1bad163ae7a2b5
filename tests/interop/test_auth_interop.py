"""The official `mcp` client (2.3.0) against a protected mcp-resolve server, on both eras.

With a bearer token it works like against an open server; without one it
gets our 401, and its own OAuth machinery (`OAuthClientProvider`) takes it
from there: it reads our Protected Resource Metadata, finds the test
authorization server, registers, has the "person" approve, exchanges the
code (PKCE) for a token issued for our resource URL, and retries. The
resulting call is made as the user who approved.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from auth_helpers import TestIssuer, issuer_served, serve_at_known_url
from mcp_resolve import Context, MCPServer
from mcp_resolve.auth import AuthSettings, JWTVerifier

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


def server(resource: str, issuer: str) -> MCPServer:
    mcp = MCPServer(
        "interop-protected",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer}/jwks"),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=["mcp"]),
    )

    @mcp.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.access_token is not None
        return f"{ctx.access_token.subject} via {ctx.access_token.client_id}"

    return mcp


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestIssuer, str]]:
    issuer = TestIssuer()
    async with (
        issuer_served(issuer),
        serve_at_known_url(lambda base: server(f"{base}/mcp", issuer.base).streamable_http_app()) as base,
    ):
        yield issuer, f"{base}/mcp"


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_the_official_client_with_a_bearer_token(
    served: tuple[TestIssuer, str], mode: str, version: str
) -> None:
    issuer, url = served
    token = issuer.mint(url, sub="alice", client_id="official", scope="mcp")
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, OfficialClient(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        assert client.protocol_version == version
        assert _text(await client.call_tool("whoami", {})) == "alice via official"


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_the_official_client_without_a_token_is_refused(
    served: tuple[TestIssuer, str], mode: str, version: str
) -> None:
    _, url = served
    with pytest.raises(Exception) as raised:
        async with OfficialClient(url, mode=mode) as client:
            await client.call_tool("whoami", {})
    assert "401" in repr(raised.value) or "Unauthorized" in repr(raised.value)


class _Memory:
    """The official client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_the_official_oauth_flow_discovers_our_metadata_and_gets_in(
    served: tuple[TestIssuer, str], mode: str, version: str
) -> None:
    issuer, url = served
    issuer.user = "erin"
    redirect: dict[str, str] = {}

    async def browser(authorization_url: str) -> None:  # the person opens the page and approves
        async with httpx.AsyncClient() as http:
            answer = await http.get(authorization_url)
        assert answer.status_code == 302
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        redirect.update({key: values[0] for key, values in query.items()})

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirect["code"], state=redirect["state"], iss=redirect["iss"])

    storage = _Memory()
    oauth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=["http://localhost:3030/callback"],  # type: ignore[list-item]
            client_name="official-test",
            grant_types=["authorization_code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser,
        callback_handler=callback,
    )
    http: httpx2.AsyncClient = create_mcp_http_client(auth=oauth)
    async with http, OfficialClient(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        assert client.protocol_version == version
        assert _text(await client.call_tool("whoami", {})).startswith("erin via dyn-")
    metadata = oauth.context.protected_resource_metadata
    assert metadata is not None
    assert str(metadata.resource) == url and [str(s) for s in metadata.authorization_servers] == [issuer.base]
    assert storage.tokens is not None and storage.tokens.scope == "mcp"  # the scope our metadata advertised
