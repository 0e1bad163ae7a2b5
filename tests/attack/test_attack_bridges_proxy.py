"""A proxy's target that misbehaves, and a caller that reaches for what it was hidden.

Each failure of the target must come back as a clear error within the
proxy's deadline, never a hang, and leave the proxy serving: a target that
floods notifications, one that never answers, one that crashes mid-call.
A caller that sends a hidden argument has it replaced by the resolver's value.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest
from mcp_types import LoggingMessageNotificationParams, TextContent

from conftest import SERVERS
from mcp_resolve import Client, Context, MCPError, MCPServer, Resolve
from mcp_resolve.bridges import ProxyLimits
from mcp_resolve.errors import MISSING_REQUIRED_CLIENT_CAPABILITY

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TARGET = [sys.executable, str(SERVERS / "proxy_target.py")]
ERAS = ["legacy", "2026-07-28"]


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("mode", ERAS)
async def test_a_flood_of_notifications_is_capped_and_the_call_answers(mode: str) -> None:
    front = MCPServer.as_proxy(TARGET, limits=ProxyLimits(max_notifications=20, timeout=30))
    heard: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        heard.append(params)

    with anyio.fail_after(30):
        async with Client(front, mode=mode, log_handler=on_log) as client:
            result = await client.call_tool("flood", {"count": 3000})
    assert _text(result) == "sent 3000"
    assert 1 <= len(heard) <= 20  # forwarded up to the cap, the rest dropped


@pytest.mark.parametrize("mode", ERAS)
async def test_an_endless_flood_ends_at_the_deadline_with_a_clear_error(mode: str) -> None:
    front = MCPServer.as_proxy(TARGET, limits=ProxyLimits(max_notifications=5, timeout=3))
    with anyio.fail_after(30):
        async with Client(front, mode=mode) as client:
            result = await client.call_tool("flood", {"count": -1})
            assert result.is_error
            assert "did not answer within 3s" in _text(result)
            assert "orders of c-1" in _text(await client.call_tool("get_orders", {"customer_id": "c-1"}))


@pytest.mark.parametrize("mode", ERAS)
async def test_a_target_that_never_answers_is_an_error_and_the_proxy_goes_on(mode: str) -> None:
    front = MCPServer.as_proxy(TARGET, limits=ProxyLimits(timeout=3))
    with anyio.fail_after(30):
        async with Client(front, mode=mode) as client:
            result = await client.call_tool("hang", {})
            assert result.is_error and "did not answer within 3s" in _text(result)
            # The hung session was closed; the next call gets a fresh one.
            assert "orders of c-2" in _text(await client.call_tool("get_orders", {"customer_id": "c-2"}))


@pytest.mark.parametrize("mode", ERAS)
async def test_a_target_that_crashes_mid_call_is_an_error_and_the_proxy_goes_on(mode: str) -> None:
    front = MCPServer.as_proxy(TARGET, limits=ProxyLimits(timeout=20))
    with anyio.fail_after(30):
        async with Client(front, mode=mode) as client:
            result = await client.call_tool("crash", {})
            assert result.is_error and "proxied server" in _text(result)
            assert "Traceback" not in _text(result)
            assert "orders of c-3" in _text(await client.call_tool("get_orders", {"customer_id": "c-3"}))


def the_callers_customer(ctx: Context) -> str:
    return "cust-from-token"


@pytest.mark.parametrize("mode", ERAS)
async def test_a_hidden_argument_sent_by_the_client_never_reaches_the_target(mode: str) -> None:
    front = MCPServer.as_proxy(TARGET, hide={"customer_id": Resolve(the_callers_customer)})
    async with Client(front, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "customer_id" not in tools["get_orders"].input_schema["properties"]
        assert "customer_id" not in tools["get_orders"].input_schema.get("required", [])
        result = await client.call_tool("get_orders", {"customer_id": "someone-else", "status": "paid"})
    assert _text(result) == "orders of cust-from-token (paid)"


async def test_a_target_that_cannot_start_is_a_clear_error_on_each_request() -> None:
    front = MCPServer.as_proxy(
        [sys.executable, "-c", "import sys; sys.exit(2)"], limits=ProxyLimits(connect_timeout=5)
    )
    with anyio.fail_after(30):
        async with Client(front) as client:
            for _ in range(2):  # the listing is tried again, and fails again, as clearly
                with pytest.raises(MCPError, match="cannot reach the proxied server"):
                    await client.list_tools()


async def test_a_caller_that_never_answers_a_relayed_question_frees_its_session_at_the_deadline() -> None:
    """A 2026-07-28 caller asked on behalf of a handshake-era target, who never comes back: the waiting
    upstream call is ended at its deadline, its session serves the caller again, the stale round is refused."""
    front = MCPServer.as_proxy(TARGET, mode="legacy", limits=ProxyLimits(lanes_per_caller=1, timeout=3))

    async def never_used(params: Any) -> dict[str, Any]:
        raise AssertionError("the rounds are driven by hand here")

    with anyio.fail_after(40):
        async with Client(front, mode="2026-07-28", elicitation_handler=never_used) as client:
            asked = await client.request("tools/call", {"name": "delete_item", "arguments": {"item": "x"}})
            assert asked["resultType"] == "input_required"
            (key,) = asked["inputRequests"]
            assert asked["inputRequests"][key]["params"]["message"] == "Delete x?"
            # The one session is held by the waiting call; this call waits for it, then gets it.
            result = await client.call_tool("get_orders", {"customer_id": "c-4"})
            assert _text(result) == "orders of c-4 (open)"
            late = await client.request(
                "tools/call",
                {
                    "name": "delete_item",
                    "arguments": {"item": "x"},
                    "requestState": asked["requestState"],
                    "inputResponses": {key: {"action": "accept", "content": {"sure": True}}},
                },
            )
    assert late["isError"] is True
    assert "waited too long" in late["content"][0]["text"]


async def test_a_relayed_question_answered_in_time_completes_the_call() -> None:
    front = MCPServer.as_proxy(TARGET, mode="legacy")

    async def confirm(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"sure": True}}

    for mode in ERAS:
        async with Client(front, mode=mode, elicitation_handler=confirm) as client:
            assert _text(await client.call_tool("delete_item", {"item": "y"})) == "deleted y"


@pytest.mark.parametrize("mode", ERAS)
async def test_a_question_our_caller_cannot_answer_is_refused_to_the_target(mode: str) -> None:
    """A caller that declared no elicitation is never asked: the target hears -32021 and fails its call."""
    front = MCPServer.as_proxy(TARGET, mode="legacy", limits=ProxyLimits(timeout=20))
    with anyio.fail_after(40):
        async with Client(front, mode=mode) as client:
            # The target (ours) answers a refused question with the JSON-RPC error itself.
            with pytest.raises(MCPError, match="did not declare the elicitation capability") as refused:
                await client.request("tools/call", {"name": "delete_item", "arguments": {"item": "z"}})
            assert (
                _text(await client.call_tool("get_orders", {"customer_id": "c-5"})) == "orders of c-5 (open)"
            )
    assert refused.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
