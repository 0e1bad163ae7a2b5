"""Connection lifecycle: answers survive the end of input, and list changes reach live sessions."""

from __future__ import annotations

import subprocess
from typing import Annotated, Any

import anyio
import pydantic_core
import pytest
from pydantic import BaseModel

from conftest import PYTHON, REFUND_DESK, initialize_request
from mcp_resolve import Elicit, MCPServer, Resolve
from mcp_resolve.transports.memory import connect_in_memory

pytestmark = pytest.mark.anyio

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


def _lines(*messages: dict[str, Any]) -> bytes:
    return b"".join(pydantic_core.to_json(m) + b"\n" for m in messages)


@pytest.mark.slow
def test_requests_written_before_eof_are_still_answered() -> None:
    """`printf requests | server`: every request gets its answer although stdin closed at once."""
    calls = [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {
                "_meta": MODERN_META,
                "name": "refund_order",
                "arguments": {"order_id": "ORD-7001", "reason": f"r{n}"},
            },
        }
        for n in range(1, 6)
    ]
    done = subprocess.run([PYTHON, str(REFUND_DESK)], input=_lines(*calls), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    answers = {m["id"]: m for m in map(pydantic_core.from_json, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4, 5]
    assert all(answers[n]["result"]["structuredContent"]["reason"] == f"r{n}" for n in answers)


class Confirm(BaseModel):
    ok: bool


async def ask() -> Elicit[Confirm]:
    return Elicit("Sure?", Confirm)


@pytest.mark.slow
def test_a_question_to_a_client_that_left_fails_fast() -> None:
    """Handshake era: the client asks, then closes stdin without answering; the call ends with a tool error."""
    initialize = initialize_request({"elicitation": {}})
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "refund_order", "arguments": {"order_id": "ORD-7002", "reason": "r"}},
    }
    done = subprocess.run(
        [PYTHON, str(REFUND_DESK)], input=_lines(initialize, call), capture_output=True, timeout=60
    )
    messages = [pydantic_core.from_json(line) for line in done.stdout.splitlines()]
    asked = [m for m in messages if m.get("method") == "elicitation/create"]
    answer = next(m for m in messages if m.get("id") == 2 and "result" in m)
    assert len(asked) == 1
    assert answer["result"]["isError"] is True
    assert "could not answer elicitation/create" in answer["result"]["content"][0]["text"]


async def test_list_changes_reach_handshake_sessions() -> None:
    server = MCPServer("changing")

    @server.tool()
    async def first() -> str:
        return "1"

    async with connect_in_memory(server) as pipe:
        await pipe.send(initialize_request({}))
        initialized = await pipe.receive()
        assert initialized["result"]["capabilities"]["tools"] == {"listChanged": True}

        @server.tool()
        async def second(confirm: Annotated[Confirm, Resolve(ask)]) -> str:
            return "2"

        assert await server.notify_list_changed("tools") == 1
        assert await pipe.receive() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        server.remove_tool("first")
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = await pipe.receive()
    assert [t["name"] for t in listed["result"]["tools"]] == ["second"]
    assert await server.notify_list_changed("tools") == 0  # nobody is connected any more
    with pytest.raises(ValueError):
        await server.notify_list_changed("widgets")  # type: ignore[arg-type]


async def test_a_client_roots_change_reaches_the_server_hook() -> None:
    server = MCPServer("roots-hook")
    heard = anyio.Event()

    @server.on_roots_changed
    async def refresh() -> None:
        heard.set()

    async with connect_in_memory(server) as pipe:
        await pipe.send(initialize_request({"roots": {"listChanged": True}}))
        await pipe.receive()
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        with anyio.fail_after(10):
            await heard.wait()
