"""Resumable SSE on the handshake era (2025-11-25) with an event store in one process.

A POST's stream opens with a priming event (id, `retry`, empty data); every
event has an id; a client that lost the stream GETs with `Last-Event-ID` and
gets the rest of that stream and nothing of any other, including a question
it then answers so the call completes. Hostile ids (garbage, huge, another
session's, a GET stream's id replayed on the wrong session) are refused the
same way, with 400, and never reach another session's events.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from http_helpers import http_server
from mcp_resolve import Context, MCPServer
from mcp_resolve.stores.events import MemoryEventStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SSE = "application/json, text/event-stream"


class Ok(BaseModel):
    ok: bool


def server() -> MCPServer:
    mcp = MCPServer("resumable", event_store=MemoryEventStore())

    @mcp.tool()
    async def slow(ctx: Context) -> str:
        for step in range(4):
            await ctx.report_progress(step, 4)
            await anyio.sleep(0.15)
        return "done"

    @mcp.tool()
    async def confirm(ctx: Context) -> str:
        await ctx.report_progress(0, 1)
        answer = await ctx.elicit("Go ahead?", Ok)
        return f"answered {answer.action}"

    @mcp.tool()
    async def poke(uri: str) -> int:
        return await mcp.notify_resource_updated(uri)

    return mcp


async def initialize(http: httpx.AsyncClient, url: str, version: str = "2025-11-25") -> dict[str, str]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    reply = await http.post(url, json=body, headers={"Accept": SSE})
    session = {
        "Mcp-Session-Id": reply.headers["mcp-session-id"],
        "MCP-Protocol-Version": version,
        "Accept": SSE,
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=session)).status_code == 202
    return session


def call(request_id: int, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}, "_meta": {"progressToken": f"p{request_id}"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


_LINES: weakref.WeakKeyDictionary[httpx.Response, Any] = weakref.WeakKeyDictionary()


async def events(response: httpx.Response, count: int) -> list[dict[str, Any]]:
    """The next `count` SSE events as {"id", "retry", "data"} (data parsed, or None when empty)."""
    lines = _LINES.setdefault(response, response.aiter_lines())
    found: list[dict[str, Any]] = []
    event: dict[str, Any] = {}
    with anyio.fail_after(10):
        async for line in lines:
            if line == "":
                if event:
                    found.append(event)
                    event = {}
                    if len(found) == count:
                        return found
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event["id"] = value
            elif field == "retry":
                event["retry"] = int(value)
            elif field == "data":
                event["data"] = json.loads(value) if value else None
    return found


async def test_a_broken_stream_resumes_from_the_last_event_with_the_rest_and_the_answer() -> None:
    async with http_server(server().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        session = await initialize(http, url)
        async with http.stream("POST", url, json=call(2, "slow"), headers=session) as response:
            priming, first = await events(response, 2)
        assert priming["data"] is None and priming["retry"] == 1000 and priming["id"]
        assert first["data"]["method"] == "notifications/progress" and first["id"] != priming["id"]
        await anyio.sleep(0.2)  # the call goes on while the client is away
        resumed_headers = {**session, "Last-Event-ID": first["id"]}
        async with http.stream("GET", url, headers=resumed_headers) as resumed:
            assert resumed.status_code == 200
            rest = await events(resumed, 4)
        progress = [e["data"]["params"]["progress"] for e in rest if e["data"].get("method")]
        assert progress == [1, 2, 3]  # exactly what came after the last event seen, nothing twice
        assert rest[-1]["data"]["id"] == 2 and rest[-1]["data"]["result"]["content"][0]["text"] == "done"
        assert all(e["id"] for e in rest)


async def test_a_question_asked_before_the_break_is_answered_after_resuming() -> None:
    async with http_server(server().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        session = await initialize(http, url)
        async with http.stream("POST", url, json=call(2, "confirm"), headers=session) as response:
            _priming, progress = await events(response, 2)
        assert progress["data"]["method"] == "notifications/progress"
        async with http.stream("GET", url, headers={**session, "Last-Event-ID": progress["id"]}) as resumed:
            (question,) = await events(resumed, 1)
            assert question["data"]["method"] == "elicitation/create"
            answer = {
                "jsonrpc": "2.0",
                "id": question["data"]["id"],
                "result": {"action": "accept", "content": {"ok": True}},
            }
            assert (await http.post(url, json=answer, headers=session)).status_code == 202
            (final,) = await events(resumed, 1)
        assert final["data"]["result"]["content"][0]["text"] == "answered accept"


async def test_the_get_stream_is_resumable_too_and_older_versions_get_no_priming() -> None:
    async with http_server(server().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        session = await initialize(http, url)
        subscribe = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "resources/subscribe",
            "params": {"uri": "note://a"},
        }
        await http.post(url, json=subscribe, headers=session)
        async with http.stream("GET", url, headers=session) as stream:
            (_priming,) = await events(stream, 1)
            await http.post(url, json=call(4, "poke", {"uri": "note://a"}), headers=session)
            (first,) = await events(stream, 1)
            # Sent on this stream, and the connection breaks before the client reads it.
            await http.post(url, json=call(5, "poke", {"uri": "note://a"}), headers=session)
        async with http.stream("GET", url, headers={**session, "Last-Event-ID": first["id"]}) as again:
            missed, priming_again = await events(again, 2)
        assert first["data"]["method"] == missed["data"]["method"] == "notifications/resources/updated"
        assert missed["id"] != first["id"] and priming_again["data"] is None

        old = await initialize(http, url, "2025-06-18")
        async with http.stream("POST", url, json=call(2, "slow"), headers=old) as response:
            (first_old,) = await events(response, 1)
        assert "id" not in first_old and first_old["data"]["method"] == "notifications/progress"


async def test_hostile_last_event_ids_are_refused_alike_and_never_cross_sessions() -> None:
    async with http_server(server().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        alice, mallory = await initialize(http, url), await initialize(http, url)
        async with http.stream("POST", url, json=call(2, "slow"), headers=alice) as response:
            _, first = await events(response, 2)
        garbage = [
            "",
            "x",
            "../../etc",
            "0" * 32 + ".1",
            first["id"].split(".")[0] + ".-1",
            first["id"] + "\u00e9",
            first["id"] + ".1",
            "*",
            "a" * 60000,
            "mcp-resolve:resumable:events:x",
        ]
        for bad in garbage:
            try:
                reply = await http.get(url, headers={**alice, "Last-Event-ID": bad})
            except (httpx.LocalProtocolError, UnicodeEncodeError):
                continue  # not even sendable as a header
            assert reply.status_code in (400, 431), (bad[:40], reply.status_code)
        stolen = await http.get(url, headers={**mallory, "Last-Event-ID": first["id"]})
        assert stolen.status_code == 400 and "progress" not in stolen.text
        assert (
            stolen.json()["error"]["message"] == "Bad Request: Last-Event-ID names no stream of this session"
        )


async def test_without_an_event_store_last_event_id_is_ignored_and_nothing_is_primed() -> None:
    mcp = MCPServer("plain")

    @mcp.tool()
    async def slow(ctx: Context) -> str:
        await ctx.report_progress(0, 1)
        return "done"

    async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        session = await initialize(http, url)
        async with http.stream("POST", url, json=call(2, "slow"), headers=session) as response:
            first, final = await events(response, 2)
        assert "id" not in first and "retry" not in first and final["data"]["result"]
        async with http.stream("GET", url, headers={**session, "Last-Event-ID": "whatever"}) as stream:
            assert stream.status_code == 200  # a plain GET stream, as before
