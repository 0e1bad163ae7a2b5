"""The caller's identity in the programming model: `ctx.access_token`, the identity resolvers, bindings.

Over real HTTP on both eras with our client, and raw where the wire itself is
the point (a requestState replayed under another user's token). Identity is a
resolved parameter, so the model cannot supply it: a `customer_id` argument a
client sends is ignored exactly as an inflated refund amount is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import httpx
import pytest
from pydantic import BaseModel

from auth_helpers import TestIssuer, issuer_served, serve_at_known_url
from http_helpers import initialize_request
from mcp_resolve import Client, Context, Elicit, MCPServer, Resolve, ToolError
from mcp_resolve.auth import AccessToken, AuthSettings, JWTVerifier, access_token, require_scopes
from mcp_resolve.cli import graph_text

pytestmark = pytest.mark.anyio

ERAS = ["2026-07-28", "legacy"]
CAPABLE_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "close_account",
}


class Confirm(BaseModel):
    ok: bool


async def customer(who: Annotated[AccessToken, Resolve(access_token)]) -> str:
    """The customer is whoever the token says: never an argument."""
    if who.subject is None:
        raise ToolError("the token names no user")
    return who.subject


async def confirm(customer_id: Annotated[str, Resolve(customer)]) -> Elicit[Confirm]:
    return Elicit(f"Close the account of {customer_id}?", Confirm)


def identity_server(resource: str, issuer: str, **settings: Any) -> MCPServer:
    mcp = MCPServer(
        "identity",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer}/jwks"),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, **settings),
    )

    @mcp.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        token = ctx.access_token
        assert token is not None
        return {"subject": token.subject, "client": token.client_id, "scopes": list(token.scopes)}

    @mcp.tool()
    async def my_orders(customer_id: Annotated[str, Resolve(customer)]) -> str:
        return f"orders of {customer_id}"

    @mcp.tool()
    async def delete_order(
        order_id: str, who: Annotated[AccessToken, Resolve(require_scopes("orders:delete"))]
    ) -> str:
        return f"{who.subject} deleted {order_id}"

    @mcp.tool(scopes=["refunds:write"])
    async def refund(order_id: str, ctx: Context) -> str:
        assert ctx.access_token is not None
        return f"{ctx.access_token.subject} refunded {order_id}: {' '.join(ctx.access_token.scopes)}"

    @mcp.tool()
    async def close_account(
        customer_id: Annotated[str, Resolve(customer)], confirmed: Annotated[Confirm, Resolve(confirm)]
    ) -> str:
        return f"closed {customer_id}" if confirmed.ok else "kept"

    return mcp


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestIssuer, str]]:
    async with issuer_served(TestIssuer()) as issuer:

        def app(base: str) -> Any:
            return identity_server(
                f"{base}/mcp", issuer.base, scope_hierarchy={"refunds:admin": ["refunds:write", "read"]}
            ).streamable_http_app()

        async with serve_at_known_url(app) as base:
            yield issuer, f"{base}/mcp"


def as_user(url: str, token: str, mode: str, **options: Any) -> Client:
    return Client(url, mode=mode, headers={"authorization": f"Bearer {token}"}, **options)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_tools_see_the_verified_caller_on_both_eras(served: tuple[TestIssuer, str], mode: str) -> None:
    issuer, url = served
    token = issuer.mint(url, sub="alice", client_id="desk-app", scope="read")
    async with as_user(url, token, mode) as client:
        result = await client.call_tool("whoami")
        assert result.structured_content == {"subject": "alice", "client": "desk-app", "scopes": ["read"]}
        assert (await client.call_tool("my_orders")).content[0].text == "orders of alice"  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_a_client_cannot_name_the_customer(served: tuple[TestIssuer, str], mode: str) -> None:
    issuer, url = served
    async with as_user(url, issuer.mint(url, sub="alice"), mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "customer_id" not in tools["my_orders"].input_schema.get("properties", {})
        result = await client.call_tool("my_orders", {"customer_id": "bob"})
        assert result.content[0].text == "orders of alice"  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_scopes_as_resolvers_are_tool_errors_and_hierarchies_count(
    served: tuple[TestIssuer, str], mode: str
) -> None:
    issuer, url = served
    async with as_user(url, issuer.mint(url, sub="alice", scope="read"), mode) as client:
        refused = await client.call_tool("delete_order", {"order_id": "O-1"})
        assert refused.is_error
        assert refused.content[0].text == (  # type: ignore[union-attr]
            "Error executing tool delete_order: insufficient scope: this call needs orders:delete, "
            "which the access token lacks"
        )
    async with as_user(url, issuer.mint(url, sub="alice", scope="orders:delete"), mode) as client:
        allowed = await client.call_tool("delete_order", {"order_id": "O-1"})
        assert allowed.content[0].text == "alice deleted O-1"  # type: ignore[union-attr]
    async with as_user(url, issuer.mint(url, sub="carol", scope="refunds:admin"), mode) as client:
        implied = await client.call_tool("refund", {"order_id": "O-2"})
        assert implied.content[0].text == "carol refunded O-2: refunds:admin refunds:write read"  # type: ignore[union-attr]


@pytest.mark.slow
async def test_request_state_issued_to_one_user_is_refused_to_another(served: tuple[TestIssuer, str]) -> None:
    issuer, url = served
    alice, bob = issuer.mint(url, sub="alice"), issuer.mint(url, sub="bob")
    alice_again = issuer.mint(url, sub="alice", jti="refreshed")  # a refreshed token: same principal
    params: dict[str, Any] = {"name": "close_account", "arguments": {}, "_meta": CAPABLE_META}
    async with httpx.AsyncClient() as http:

        async def call(token: str, **extra: Any) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, **extra}}
            response = await http.post(
                url, json=body, headers={**HEADERS, "authorization": f"Bearer {token}"}
            )
            return response.json()  # type: ignore[no-any-return]

        first = (await call(alice))["result"]
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        answer = {key: {"action": "accept", "content": {"ok": True}}}
        retry = {"requestState": first["requestState"], "inputResponses": answer}

        stolen = await call(bob, **retry)
        assert stolen["error"] == {"code": -32602, "message": "Invalid or expired requestState"}
        done = await call(alice_again, **retry)
        assert done["result"]["content"][0]["text"] == "closed alice"


@pytest.mark.slow
async def test_a_handshake_session_belongs_to_the_user_who_opened_it(served: tuple[TestIssuer, str]) -> None:
    issuer, url = served
    alice, bob = issuer.mint(url, sub="alice"), issuer.mint(url, sub="bob")
    base = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = initialize_request()
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with httpx.AsyncClient() as http:
        opened = await http.post(url, json=init, headers={**base, "authorization": f"Bearer {alice}"})
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        hijack = await http.post(
            url, json=listing, headers={**base, **session, "authorization": f"Bearer {bob}"}
        )
        assert hijack.status_code == 404  # another user's session is "not found", never "forbidden"
        refreshed = issuer.mint(url, sub="alice", jti="next")
        own = await http.post(
            url, json=listing, headers={**base, **session, "authorization": f"Bearer {refreshed}"}
        )
        assert own.status_code == 200


async def test_in_memory_there_is_no_token_and_overrides_stand_in_for_one() -> None:
    mcp = identity_server("https://mcp.example.com/mcp", "https://auth.example.com")
    async with Client(mcp) as client:
        missing = await client.call_tool("my_orders")
        assert missing.is_error and "needs an authenticated caller" in missing.content[0].text  # type: ignore[union-attr]
        scoped = await client.call_tool("delete_order", {"order_id": "O-1"})
        assert scoped.is_error
    token = AccessToken(token="t", client_id="test", scopes=("orders:delete",), subject="dora")
    mcp.dependency_overrides[access_token] = lambda: token
    async with Client(mcp) as client:
        assert (await client.call_tool("my_orders")).content[0].text == "orders of dora"  # type: ignore[union-attr]
        deleted = await client.call_tool("delete_order", {"order_id": "O-1"})
        assert deleted.content[0].text == "dora deleted O-1"  # type: ignore[union-attr]


def test_the_graph_shows_identity_resolvers_like_any_other() -> None:
    mcp = identity_server("https://mcp.example.com/mcp", "https://auth.example.com")
    tools = {c.name: c for c in mcp.components()}  # type: ignore[union-attr]
    text = graph_text([tools["delete_order"], tools["close_account"], tools["refund"]])
    assert "tool refund(order_id)  requires scopes: refunds:write" in text
    assert "access_token(ctx)" in text
    assert "require_scopes('orders:delete')(token)" in text
    assert "access_token -> require_scopes('orders:delete').token" in text
    assert "require_scopes('orders:delete') -> delete_order.who" in text
    assert "customer -> confirm.customer_id" in text
    assert "Context -> access_token.ctx" in text


def test_require_scopes_is_one_resolver_per_scope_set() -> None:
    assert require_scopes("a", "b") is require_scopes("a", "b")
    assert require_scopes("a") is not require_scopes("b")
    with pytest.raises(ValueError):
        require_scopes("has space")


async def test_tool_scopes_are_an_http_gate_and_stdio_or_memory_has_none() -> None:
    """Off HTTP there is no token (the spec: stdio takes its credentials from the environment), so a
    tool's `scopes=` are not checked there; what needs a token (the identity resolvers) still refuses."""
    mcp = MCPServer(
        "local",
        token_verifier=JWTVerifier(jwks_uri="https://auth.example.com/jwks"),
        auth=AuthSettings(
            issuer_url="https://auth.example.com", resource_server_url="https://mcp.example.com/mcp"
        ),
    )

    @mcp.tool(scopes=["refunds:write"])
    async def refund(order_id: str, ctx: Context) -> str:
        return f"refunded {order_id} (token: {ctx.access_token})"

    async with Client(mcp) as client:
        result = await client.call_tool("refund", {"order_id": "L-1"})
        assert result.content[0].text == "refunded L-1 (token: None)"  # type: ignore[union-attr]
