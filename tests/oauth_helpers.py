"""Our protected server behind Authlib's authorization server on loopback, and a headless OAuth login.

`deployment()` serves both at URLs they know before they start (the server
must name its issuer, the issuer its resource), with `whoami` needing READ and
`refund` needing WRITE as well, so a client must step up. `headless()` is our
client's OAuth flow with the headless browser as the person who consents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from auth_helpers import serve_at_known_url
from authlib_server import AuthlibServer
from mcp_resolve import MCPServer, Resolve
from mcp_resolve.auth import AccessToken, AuthSettings, JWTVerifier, access_token
from mcp_resolve.client.auth import HeadlessBrowser, OAuth

READ, WRITE = "mcp:read", "mcp:write"


def protected_server(resource: str, issuer: str) -> MCPServer:
    mcp = MCPServer(
        "Protected desk",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer}/jwks"),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=[READ]),
    )

    @mcp.tool()
    async def whoami(who: Annotated[AccessToken, Resolve(access_token)]) -> str:
        """Who the token says is calling."""
        return f"{who.subject} with {' '.join(sorted(who.scopes))}"

    @mcp.tool(scopes=[WRITE])
    async def refund(order_id: str) -> str:
        """Needs the wider scope: the client must step up."""
        return f"refunded {order_id}"

    return mcp


@asynccontextmanager
async def deployment(token_ttl: int = 3600) -> AsyncIterator[tuple[AuthlibServer, str]]:
    authz = AuthlibServer(scopes=[READ, WRITE], token_ttl=token_ttl)
    async with serve_at_known_url(lambda base: authz.serve(base, f"{base}/unused")) as issuer:

        def make(base: str) -> Any:
            authz.resource = f"{base}/mcp"
            return protected_server(authz.resource, issuer).streamable_http_app()

        async with serve_at_known_url(make) as base:
            yield authz, f"{base}/mcp"


def headless(**options: Any) -> OAuth:
    browser = HeadlessBrowser()
    return OAuth(redirect_handler=browser, callback_handler=browser, **options)
