"""`MCPServer.as_proxy`: the resolver-guarded proxy, one upstream session per caller, and what it serves.

The target is a real stdio server (tests/servers/proxy_target.py, one
process per upstream session); the front is served on HTTP with a token
verifier, so each caller is a principal, and `customer_id` comes from the
caller's token rather than from the model.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp_types import TextContent

from auth_helpers import serve_at_known_url
from conftest import SERVERS
from mcp_resolve import Client, Context, MCPServer, Resolve, ToolError
from mcp_resolve.auth import AccessToken, AuthSettings
from mcp_resolve.bridges import ProxyLimits, caller_of
from otel_helpers import Otel

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TARGET = [sys.executable, str(SERVERS / "proxy_target.py")]
ERAS = ["legacy", "2026-07-28"]
TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


class Tokens:
    """Two users' opaque tokens, as an introspecting verifier would read them."""

    async def verify_token(self, token: str) -> AccessToken | None:
        subject = TOKENS.get(token)
        if subject is None:
            return None
        return AccessToken(token=token, client_id="test", subject=subject, scopes=("orders",))


def customer_of_token(ctx: Context) -> str:
    token = ctx.access_token
    if token is None or token.subject is None:
        raise ToolError("sign in first")
    return f"customer-{token.subject}"


@asynccontextmanager
async def guarded_proxy(**options: Any) -> AsyncIterator[str]:
    """Our proxy of TARGET on HTTP, behind a token verifier, `customer_id` hidden; yields its /mcp URL."""

    def make(base: str) -> Any:
        front = MCPServer.as_proxy(
            TARGET,
            hide={"customer_id": Resolve(customer_of_token)},
            token_verifier=Tokens(),
            auth_settings=AuthSettings(
                issuer_url="https://auth.example.com", resource_server_url=f"{base}/mcp"
            ),
            **options,
        )
        return front.streamable_http_app()

    async with serve_at_known_url(make) as base:
        yield f"{base}/mcp"


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("mode", ERAS)
async def test_each_user_has_upstream_sessions_of_their_own_and_their_own_customer(mode: str) -> None:
    async with (
        guarded_proxy() as url,
        Client(url, mode=mode, auth="tok-alice") as alice,
        Client(url, mode=mode, auth="tok-bob") as bob,
    ):
        tools = {tool.name: tool for tool in (await alice.list_tools()).tools}
        assert "customer_id" not in tools["get_orders"].input_schema["properties"]

        first_alice = _text(await alice.call_tool("session", {"note": "a1"}))
        first_bob = _text(await bob.call_tool("session", {"note": "b1"}))
        second_alice = _text(await alice.call_tool("session", {"note": "a2"}))
        alice_session, bob_session = first_alice.split()[0], first_bob.split()[0]
        assert alice_session != bob_session  # two upstream processes
        assert second_alice == f"{alice_session} a1,a2"  # Alice's session again, and only her notes
        assert first_bob == f"{bob_session} b1"

        orders = await alice.call_tool("get_orders", {"customer_id": "customer-bob", "status": "paid"})
        assert _text(orders) == "orders of customer-alice (paid)"
        assert _text(await bob.call_tool("get_orders", {})) == "orders of customer-bob (open)"


async def test_an_unauthenticated_caller_is_refused_before_the_target_is_reached() -> None:
    async with guarded_proxy() as url:
        with pytest.raises(Exception, match="needs a bearer token"):
            async with Client(url, mode="2026-07-28"):
                pass


async def test_a_caller_may_hold_only_so_many_upstream_sessions() -> None:
    """Concurrent calls beyond `lanes_per_caller` wait for a free session, within the connect bound."""
    front = MCPServer.as_proxy(TARGET, limits=ProxyLimits(lanes_per_caller=1, connect_timeout=20, timeout=20))
    async with Client(front) as client:
        results: list[str] = []

        async def call(note: str) -> None:
            results.append(_text(await client.call_tool("session", {"note": note})))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for note in ("x", "y", "z"):
                    tg.start_soon(call, note)
    sessions = {result.split()[0] for result in results}
    assert len(sessions) == 1  # one upstream session served all three, one after another
    assert sorted(results)[-1].endswith(("x,y,z", "x,z,y", "y,x,z", "y,z,x", "z,x,y", "z,y,x"))


async def test_the_caller_key_prefers_the_principal() -> None:
    seen: list[str] = []
    server = MCPServer("keys")

    @server.tool()
    def key(ctx: Context) -> str:
        seen.append(caller_of(ctx))
        return "ok"

    async with Client(server, mode="legacy") as legacy, Client(server, mode="2026-07-28") as modern:
        await legacy.call_tool("key", {})
        await modern.call_tool("key", {})
    assert seen[0].startswith("peer connection ")  # a handshake session in memory: its connection
    assert seen[1] == "anonymous"  # 2026-07-28 with no principal: one shared anonymous caller


@pytest.mark.parametrize("mode", ERAS)
async def test_opentelemetry_traces_the_proxied_call_in_front(mode: str) -> None:
    """What our server adds applies in front: a proxied call is a span of the front, its hidden argument's
    resolver a span inside it."""
    otel = Otel()
    front = MCPServer.as_proxy(TARGET, hide={"customer_id": Resolve(customer_of_token)})
    front.dependency_overrides[customer_of_token] = lambda: "customer-traced"
    otel.instrument(front)
    async with Client(front, mode=mode) as client:
        result = await client.call_tool("get_orders", {})
    assert _text(result) == "orders of customer-traced (open)"
    names = [span["name"] for span in otel.spans()]
    assert "tools/call" in names
    assert any(
        name.startswith("resolve ") and name.endswith("<lambda>") for name in names
    )  # the override ran
