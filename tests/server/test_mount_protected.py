"""A mounted server behind the parent's protected HTTP endpoint: its tool scopes hold, its guard reads the token.

The parent checks bearer tokens (JWTs from `auth_helpers.TestIssuer`, JWKS
over loopback HTTP); the mounted billing server declares
`@tool(scopes=["billing:write"])` and takes `customer_id`, which the mount
hides and fills from the token's subject. A token without the scope gets the
403 step-up challenge before anything runs; with it, the refund is the
token's customer's whatever `customer_id` the client sends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from auth_helpers import TestIssuer, issuer_served, serve_at_known_url
from mcp_resolve import Context, MCPServer, Resolve
from mcp_resolve.auth import AuthSettings, JWTVerifier

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def token_subject(ctx: Context) -> str:
    token = ctx.access_token
    assert token is not None and token.subject  # the endpoint is protected: there is always one
    return token.subject


def composed(resource: str, issuer: str) -> MCPServer:
    billing = MCPServer("Billing")

    @billing.tool(scopes=["billing:write"])
    async def refund(order_id: str, customer_id: str) -> str:
        return f"refunded {order_id} to {customer_id}"

    front = MCPServer(
        "Front",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer}/jwks"),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource),
    )
    front.mount(billing, prefix="billing", hide={"customer_id": Resolve(token_subject)})
    return front


def call(arguments: dict[str, Any], token: str) -> dict[str, Any]:
    params = {"name": "billing_refund", "arguments": arguments, "_meta": META}
    return {
        "json": {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params},
        "headers": {
            **HEADERS,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "billing_refund",
            "authorization": f"Bearer {token}",
        },
    }


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


async def test_scopes_and_the_token_guard_hold_through_the_mount(issuer: TestIssuer) -> None:
    def app(base: str) -> Starlette:
        return composed(f"{base}/mcp", issuer.base).streamable_http_app()  # type: ignore[no-any-return]

    async with serve_at_known_url(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        reader = issuer.mint(url, scope="read", sub="bob")
        refused = await http.post(url, **call({"order_id": "A-1"}, reader))
        assert refused.status_code == 403
        assert refused.headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')
        assert 'scope="billing:write"' in refused.headers["www-authenticate"]

        writer = issuer.mint(url, scope="read billing:write", sub="bob")
        sent = await http.post(url, **call({"order_id": "A-1", "customer_id": "alice"}, writer))
        assert sent.status_code == 200, sent.text
        assert sent.json()["result"]["content"][0]["text"] == "refunded A-1 to bob"
