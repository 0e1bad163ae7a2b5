"""`subscriptions/listen` (2026-07-28) in one process: acknowledgement first, only what was asked, tagged.

Over real HTTP (the response is the SSE stream) and over a stream transport
(a `Connection` fed as stdio feeds it, cancelled with notifications/cancelled),
plus the abuse a listener can try: malformed filters, thousands of URIs,
the method on a handshake session, more streams than the server allows, and
a client that stops reading.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from http_helpers import http_server, initialize_request
from mcp_resolve import MCPServer
from mcp_resolve.protocol.listen import SUBSCRIPTION_ID_META_KEY
from mcp_resolve.protocol.session import Connection

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
ACK = "notifications/subscriptions/acknowledged"


def desk() -> MCPServer:
    mcp = MCPServer("listen-desk")

    @mcp.resource("note://a", mime_type="text/plain")
    def note_a() -> str:
        return "a"

    @mcp.tool()
    async def open_counter(name: str) -> int:
        """Register a tool at run time and tell everyone; how many listeners in this process heard."""
        mcp.add_tool(lambda: "open", name=name, description="a counter opened at run time")
        return await mcp.notify_list_changed("tools")

    @mcp.tool()
    async def touch(uri: str) -> int:
        return await mcp.notify_resource_updated(uri)

    @mcp.tool()
    async def reword() -> int:
        return await mcp.notify_list_changed("prompts")

    return mcp


def request(request_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": META}}


def headers(method: str, name: str | None = None) -> dict[str, str]:
    found = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        "Accept": "application/json, text/event-stream",
    }
    if name is not None:
        found["Mcp-Name"] = name
    return found


async def call(http: httpx.AsyncClient, url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = request(99, "tools/call", {"name": name, "arguments": arguments})
    reply = await http.post(url, json=body, headers=headers("tools/call", name))
    return reply.json()["result"]


class Stream:
    """The events of one open SSE response, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            async for line in self._lines:
                if line.startswith("data: ") and line[6:].strip():
                    return json.loads(line[6:])
        raise AssertionError("the stream ended")


@asynccontextmanager
async def listening(
    http: httpx.AsyncClient, url: str, notifications: dict[str, Any], request_id: int | str = 7
) -> AsyncIterator[Stream]:
    body = request(request_id, "subscriptions/listen", {"notifications": notifications})
    async with http.stream("POST", url, json=body, headers=headers("subscriptions/listen")) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        yield Stream(response)


@pytest.mark.slow
async def test_acknowledged_first_then_only_what_was_asked_each_tagged() -> None:
    mcp = desk()
    async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        asked = {"toolsListChanged": True, "resourceSubscriptions": ["note://a", "note://a"]}
        async with listening(http, url, asked, request_id="sub-1") as stream:
            ack = await stream.next()
            assert ack["method"] == ACK
            assert ack["params"]["_meta"] == {SUBSCRIPTION_ID_META_KEY: "sub-1"}
            assert ack["params"]["notifications"] == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["note://a"],
            }
            assert await call(http, url, "reword", {}) == {
                "content": [{"type": "text", "text": "0"}],
                "structuredContent": {"result": 0},
                "isError": False,
                "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "listen-desk", "version": "0.1.0"}},
            }  # prompts were not asked for: nobody heard
            assert (await call(http, url, "touch", {"uri": "note://b"}))["structuredContent"] == {"result": 0}
            assert (await call(http, url, "open_counter", {"name": "counter_7"}))["structuredContent"] == {
                "result": 1
            }
            changed = await stream.next()
            assert changed == {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {SUBSCRIPTION_ID_META_KEY: "sub-1"}},
            }
            assert (await call(http, url, "touch", {"uri": "note://a"}))["structuredContent"] == {"result": 1}
            updated = await stream.next()
            assert updated["method"] == "notifications/resources/updated"
            assert updated["params"] == {"uri": "note://a", "_meta": {SUBSCRIPTION_ID_META_KEY: "sub-1"}}
        # The client closed the stream: that was the cancellation, and the server let go of it.
        with anyio.fail_after(5):
            while mcp.notifications.streams:
                await anyio.sleep(0.01)


@pytest.mark.slow
async def test_discover_declares_list_changes_now_that_listen_works() -> None:
    async with http_server(desk().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        reply = await http.post(
            f"{base}/mcp", json=request(1, "server/discover"), headers=headers("server/discover")
        )
    capabilities = reply.json()["result"]["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}


@pytest.mark.slow
@pytest.mark.parametrize(
    "notifications",
    [
        None,
        "tools",
        {"toolsListChanged": "yes"},
        {"resourceSubscriptions": "note://a"},
        {"resourceSubscriptions": [1, 2]},
        {"resourceSubscriptions": [""]},
        {"resourceSubscriptions": ["x" * 5000]},
        {"resourceSubscriptions": [f"note://{i}" for i in range(1000)]},
    ],
)
async def test_malformed_filters_are_refused_before_any_stream(notifications: Any) -> None:
    mcp = desk()
    async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        params = {} if notifications is None else {"notifications": notifications}
        reply = await http.post(
            f"{base}/mcp",
            json=request(3, "subscriptions/listen", params),
            headers=headers("subscriptions/listen"),
        )
    assert reply.status_code == 400 and reply.headers["content-type"] == "application/json"
    assert reply.json()["error"]["code"] == -32602 and reply.json()["id"] == 3
    assert mcp.notifications.streams == 0


@pytest.mark.slow
async def test_more_streams_than_allowed_are_refused_before_the_acknowledgement() -> None:
    mcp = desk()
    mcp.notifications.max_streams = 2
    async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        async with listening(http, url, {"toolsListChanged": True}, 1) as one:
            await one.next()
            async with listening(http, url, {"toolsListChanged": True}, 2) as two:
                await two.next()
                body = request(3, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
                refused = await http.post(url, json=body, headers=headers("subscriptions/listen"))
                assert refused.json()["error"] == {
                    "code": -32603,
                    "message": "Subscription limit reached: too many open listen streams",
                }


async def test_a_listener_that_stops_reading_is_ended_not_buffered_forever() -> None:
    mcp = desk()
    notifications = mcp.notifications
    notifications.backlog = 4
    seen: list[dict[str, Any]] = []

    async def sink(message: dict[str, Any]) -> None:
        seen.append(message)
        if len(seen) > 1:
            await anyio.sleep_forever()  # a client that never reads again

    connection = Connection(mcp)
    async with anyio.create_task_group() as group:
        group.start_soon(connection.handle_request, _incoming(5, {"toolsListChanged": True}), sink)
        with anyio.fail_after(5):
            while notifications.streams == 0:
                await anyio.sleep(0.01)
        for _ in range(12):
            await mcp.notify_list_changed("tools")
        assert notifications.streams == 0  # dropped at the cap, so its slot is free again
        group.cancel_scope.cancel()
    assert seen[0]["method"] == ACK


def _incoming(request_id: int, notifications: dict[str, Any]) -> Any:
    from mcp_resolve.protocol.jsonrpc import IncomingRequest

    return IncomingRequest(
        request_id, "subscriptions/listen", {"notifications": notifications, "_meta": META}
    )


async def test_on_a_stream_transport_cancelled_notification_ends_it_and_shutdown_closes_gracefully() -> None:
    mcp = desk()
    messages: list[dict[str, Any]] = []

    async def sink(message: dict[str, Any]) -> None:
        messages.append(message)

    connection = Connection(mcp)
    async with anyio.create_task_group() as group:
        group.start_soon(connection.handle_request, _incoming(11, {"promptsListChanged": True}), sink)
        group.start_soon(connection.handle_request, _incoming(12, {"toolsListChanged": True}), sink)
        with anyio.fail_after(5):
            while mcp.notifications.streams < 2:
                await anyio.sleep(0.01)
        await mcp.notify_list_changed("prompts")
        from mcp_resolve.protocol.jsonrpc import IncomingNotification

        await connection.handle_notification(
            IncomingNotification("notifications/cancelled", {"requestId": 11})
        )
        with anyio.fail_after(5):
            while mcp.notifications.streams > 1:
                await anyio.sleep(0.01)
        mcp.notifications.end_streams()  # what shutdown does
    tagged = [(m.get("method") or "result", (m.get("params") or m.get("result"))["_meta"]) for m in messages]
    assert tagged[:2] == [
        (ACK, {SUBSCRIPTION_ID_META_KEY: 11}),
        (ACK, {SUBSCRIPTION_ID_META_KEY: 12}),
    ] or tagged[:2] == [(ACK, {SUBSCRIPTION_ID_META_KEY: 12}), (ACK, {SUBSCRIPTION_ID_META_KEY: 11})]
    assert ("notifications/prompts/list_changed", {SUBSCRIPTION_ID_META_KEY: 11}) in tagged
    closing = messages[-1]
    assert closing["id"] == 12 and closing["result"]["resultType"] == "complete"
    assert closing["result"]["_meta"][SUBSCRIPTION_ID_META_KEY] == 12
    assert not any(m.get("id") == 11 for m in messages)  # a cancelled request gets no response


async def test_the_end_of_input_ends_listen_streams_without_waiting_out_the_drain() -> None:
    """stdio at EOF: nobody is left to read a listen stream, so it ends at once while a slow call
    still gets the drain to answer (before, the server sat out the whole drain for the stream)."""
    mcp = desk()

    @mcp.tool()
    async def slow() -> str:
        await anyio.sleep(0.5)
        return "done"

    messages: list[dict[str, Any]] = []

    async def sink(message: dict[str, Any]) -> None:
        messages.append(message)

    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "_meta": META}}
    send, receive = anyio.create_memory_object_stream[Any](10)
    with anyio.fail_after(15):  # far below the 60 s drain
        await _serve_then_close(mcp, send, receive, sink, call)
    answered = {m["id"]: m for m in messages if "id" in m}
    assert answered[2]["result"]["structuredContent"] == {"result": "done"}  # the call had its drain
    assert 1 not in answered  # the stream was cancelled, not answered: its client is gone


async def _serve_then_close(mcp: MCPServer, send: Any, receive: Any, sink: Any, call: Any) -> None:
    listen = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: Connection(mcp).serve(receive, sink, drain_seconds=60))
        await send.send(listen)
        with anyio.fail_after(5):
            while mcp.notifications.streams < 1:
                await anyio.sleep(0.01)
        await send.send(call)
        await anyio.sleep(0.05)
        await send.aclose()  # the end of input


async def test_a_handshake_session_is_told_listen_is_not_its_method() -> None:
    from mcp_resolve.transports.memory import connect_in_memory

    mcp = desk()
    async with connect_in_memory(mcp) as pipe:
        await pipe.send(initialize_request())
        await pipe.receive()
        await pipe.send(
            {"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen", "params": {"notifications": {}}}
        )
        reply = await pipe.receive()
    assert reply["error"]["code"] == -32601 and "resources/subscribe" in reply["error"]["message"]


@pytest.mark.slow
async def test_a_client_that_accepts_only_json_cannot_listen_and_is_told_why() -> None:
    async with http_server(desk().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        body = request(4, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        reply = await http.post(
            f"{base}/mcp",
            json=body,
            headers={**headers("subscriptions/listen"), "Accept": "application/json"},
        )
    assert reply.status_code == 406
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32600, "message": "subscriptions/listen streams: Accept text/event-stream"},
    }
