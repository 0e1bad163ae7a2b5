"""Resource subscriptions on the handshake era: subscribe, hear `notifications/resources/updated`, unsubscribe.

`mcp.notify_resource_updated(uri)` reaches each subscribed session on its
channel outside requests: the connection's own stream (stdio, in-memory) or
the HTTP session's GET stream. Tested over real HTTP and over a real
Connection fed through a memory stream, as stdio feeds it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from http_helpers import http_server
from mcp_resolve import MCPServer
from mcp_resolve.protocol.session import Connection

pytestmark = pytest.mark.anyio

UPDATED = "notifications/resources/updated"


def notes_server() -> MCPServer:
    mcp = MCPServer("notes")

    @mcp.resource("note://a", mime_type="text/plain")
    def note_a() -> str:
        return "a"

    @mcp.tool()
    async def touch(uri: str) -> int:
        """Pretend `uri` changed; returns how many sessions were told."""
        return await mcp.notify_resource_updated(uri)

    return mcp


def rpc(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id:
        message["id"] = request_id
    return message


INITIALIZE = rpc(
    1,
    "initialize",
    {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
)


@pytest.mark.slow
async def test_a_subscriber_hears_updates_on_its_get_stream_until_it_unsubscribes() -> None:
    async with (
        http_server(notes_server().streamable_http_app()) as base,
        httpx.AsyncClient(timeout=10) as http,
    ):
        url = f"{base}/mcp"
        accept = {"accept": "application/json, text/event-stream"}
        opened = await http.post(url, json=INITIALIZE, headers=accept)
        session = {
            **accept,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }

        async def post(message: dict[str, Any]) -> Any:
            response = await http.post(url, json=message, headers=session)
            lines = [line.removeprefix("data:").strip() for line in response.text.splitlines()]
            return next((json.loads(x) for x in lines if x.startswith("{")), None)

        async def touched() -> Any:
            return (await post(rpc(9, "tools/call", {"name": "touch", "arguments": {"uri": "note://a"}})))[
                "result"
            ]

        await post(rpc(0, "notifications/initialized"))
        assert (await post(rpc(2, "resources/subscribe", {"uri": "note://a"})))["result"] == {}
        heard: list[dict[str, Any]] = []
        async with http.stream("GET", url, headers={**session, "accept": "text/event-stream"}) as stream:
            assert (await touched())["structuredContent"] == {"result": 1}
            with anyio.fail_after(5):
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        heard.append(json.loads(line.removeprefix("data:")))
                        break
            assert (await post(rpc(3, "resources/unsubscribe", {"uri": "note://a"})))["result"] == {}
            assert (await touched())["structuredContent"] == {"result": 0}
        assert heard == [{"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": "note://a"}}]


async def test_a_stream_connection_is_told_on_its_own_stream_and_only_when_subscribed() -> None:
    mcp = notes_server()
    connection = Connection(mcp)
    sent: list[dict[str, Any]] = []

    async def sink(message: dict[str, Any]) -> None:
        sent.append(message)

    incoming_send, incoming = anyio.create_memory_object_stream[Any](16)
    async with anyio.create_task_group() as group:
        group.start_soon(connection.serve, incoming, sink)
        for message in (INITIALIZE, rpc(0, "notifications/initialized")):
            await incoming_send.send(message)
        with anyio.fail_after(5):
            while not sent:
                await anyio.sleep(0.01)
        assert await mcp.notify_resource_updated("note://a") == 0  # not subscribed yet
        await incoming_send.send(rpc(2, "resources/subscribe", {"uri": "note://a"}))
        with anyio.fail_after(5):
            while len(sent) < 2:
                await anyio.sleep(0.01)
        assert await mcp.notify_resource_updated("note://a") == 1
        assert await mcp.notify_resource_updated("note://b") == 0
        await incoming_send.aclose()
    assert sent[-1] == {"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": "note://a"}}
    assert await mcp.notify_resource_updated("note://a") == 0  # the stream ended: nowhere to send


async def test_subscribing_needs_a_uri() -> None:
    connection = Connection(notes_server())
    sent: list[dict[str, Any]] = []

    async def sink(message: dict[str, Any]) -> None:
        sent.append(message)

    incoming_send, incoming = anyio.create_memory_object_stream[Any](16)
    async with anyio.create_task_group() as group:
        group.start_soon(connection.serve, incoming, sink)
        await incoming_send.send(INITIALIZE)
        await incoming_send.send(rpc(2, "resources/subscribe", {}))
        with anyio.fail_after(5):
            while len(sent) < 2:
                await anyio.sleep(0.01)
        await incoming_send.aclose()
    assert sent[1]["error"]["code"] == -32602
