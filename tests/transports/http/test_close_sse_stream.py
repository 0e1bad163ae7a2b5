"""`ctx.close_sse_stream()` (SEP-1699 polling): the call's stream ends early and the client resumes the rest.

On a handshake-era session of a server with an event store, closing ends
the POST's HTTP response after its priming event; the call goes on, what it
sends is recorded, and a GET with `Last-Event-ID` delivers it and the
answer. The official client does that by itself and gets the whole call.
Where nothing can be resumed (no event store), it changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client as OfficialClient

from http_helpers import http_server, initialize_request
from mcp_resolve import Context, MCPServer
from mcp_resolve.stores.events import MemoryEventStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SSE = "application/json, text/event-stream"


def server(resumable: bool = True) -> MCPServer:
    mcp = MCPServer("poller", event_store=MemoryEventStore() if resumable else None)

    @mcp.tool()
    async def poll(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await ctx.close_sse_stream()
        await anyio.sleep(0.2)  # the client is away: this is recorded for it
        await ctx.report_progress(2, 2)
        return "done"

    return mcp


async def initialize(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    body = initialize_request()
    reply = await http.post(url, json=body, headers={"Accept": SSE})
    session = {
        "Mcp-Session-Id": reply.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
        "Accept": SSE,
    }
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    return session


async def all_events(response: httpx.Response) -> list[dict[str, Any]]:
    """Every SSE event until the response ends, as {"id", "data"}."""
    found: list[dict[str, Any]] = []
    event: dict[str, Any] = {}
    with anyio.fail_after(10):
        async for line in response.aiter_lines():
            if line == "":
                if event:
                    found.append(event)
                event = {}
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                event["id"] = value
            elif field == "data":
                event["data"] = json.loads(value) if value else None
    return found


CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "poll", "arguments": {}, "_meta": {"progressToken": "p"}},
}


async def test_the_post_stream_ends_early_and_the_rest_arrives_on_resumption() -> None:
    async with http_server(server().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        session = await initialize(http, url)
        async with http.stream("POST", url, json=CALL, headers=session) as response:
            before = await all_events(response)  # ends: the server closed it, with no answer in it
        assert before[0]["data"] is None and before[0]["id"]  # the priming event
        assert [e["data"]["params"]["progress"] for e in before[1:]] == [1]
        async with http.stream("GET", url, headers={**session, "Last-Event-ID": before[-1]["id"]}) as resumed:
            after = await all_events(resumed)
        assert after[0]["data"]["params"]["progress"] == 2
        assert after[-1]["data"]["result"]["content"][0]["text"] == "done"


async def test_the_official_client_resumes_by_itself_and_gets_the_whole_call() -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with (
        http_server(server().streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode="legacy") as client,
    ):
        result = await client.call_tool("poll", {}, progress_callback=on_progress)
    assert result.content[0].text == "done"  # type: ignore[union-attr]
    assert progress == [1, 2]


async def test_without_an_event_store_closing_changes_nothing() -> None:
    async with (
        http_server(server(resumable=False).streamable_http_app()) as base,
        httpx.AsyncClient(timeout=10) as http,
    ):
        url = f"{base}/mcp"
        session = await initialize(http, url)
        async with http.stream("POST", url, json=CALL, headers=session) as response:
            events = await all_events(response)
    assert [e["data"].get("params", {}).get("progress") for e in events[:2]] == [1, 2]
    assert events[-1]["data"]["result"]["content"][0]["text"] == "done"
