"""Hostile input to the legacy HTTP+SSE transport: every refusal is a clean HTTP answer and the session lives on.

Unknown, missing and malformed session ids, a body past the cap, bytes that
are not JSON, a POST after the session's stream closed, a 2026-07-28
request on a transport that cannot carry it, a forged Host, and one client
opening more streams than it may. Real uvicorn on loopback.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import anyio
import httpx
import pytest

from http_helpers import http_server
from mcp_resolve import MCPServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def server() -> MCPServer:
    mcp = MCPServer("sse-target")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp


class Stream:
    """A GET stream opened by hand: its `endpoint`, and the messages it carries, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()
        self.endpoint = ""

    async def next_data(self, timeout: float = 5.0) -> str:
        with anyio.fail_after(timeout):
            while True:
                line = await self.lines.__anext__()
                if line.startswith("data: "):
                    return line[6:]

    async def message(self) -> dict[str, Any]:
        return json.loads(await self.next_data())  # type: ignore[no-any-return]


async def open_stream(http: httpx.AsyncClient, base: str, headers: dict[str, str] | None = None) -> Stream:
    response = await http.send(http.build_request("GET", f"{base}/sse", headers=headers), stream=True)
    assert response.status_code == 200, response.status_code
    stream = Stream(response)
    stream.endpoint = await stream.next_data()
    return stream


async def test_bad_session_ids_bodies_and_json_are_refused_and_the_session_still_works() -> None:
    app = server().sse_app(max_body_bytes=2048)
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        stream = await open_stream(http, base)
        url = f"{base}{stream.endpoint}"
        assert (await http.post(f"{base}/messages/", json=PING)).status_code == 400
        assert (await http.post(f"{base}/messages/?session_id=" + "0" * 32, json=PING)).status_code == 404
        assert (await http.post(f"{base}/messages/?session_id=../../etc", json=PING)).status_code == 404
        huge = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "x" * 10_000}}
        assert (await http.post(url, json=huge)).status_code == 413
        garbage = await http.post(url, content=b"{not json", headers={"content-type": "application/json"})
        assert garbage.status_code == 400
        assert (await http.get(url)).status_code == 405
        # the session is unharmed: it initializes and answers
        assert (await http.post(url, json=INITIALIZE)).status_code == 202
        assert (await stream.message())["result"]["protocolVersion"] == "2025-11-25"
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert (await http.post(url, json=PING)).status_code == 202
        assert await stream.message() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        await stream.response.aclose()


async def test_a_post_to_a_session_whose_stream_closed_is_404() -> None:
    app = server().sse_app()
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        stream = await open_stream(http, base)
        assert (await http.post(f"{base}{stream.endpoint}", json=INITIALIZE)).status_code == 202
        await stream.response.aclose()
        with anyio.fail_after(5):
            while app.state.mcp_sse.sessions:  # the server notices the hang-up and drops the session
                await anyio.sleep(0.02)
        assert (await http.post(f"{base}{stream.endpoint}", json=PING)).status_code == 404


async def test_a_2026_request_is_refused_on_the_stream_with_a_pointer_to_streamable_http() -> None:
    modern = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    async with http_server(server().sse_app()) as base, httpx.AsyncClient(timeout=10) as http:
        stream = await open_stream(http, base)
        assert (await http.post(f"{base}{stream.endpoint}", json=modern)).status_code == 202
        answer = await stream.message()
        assert answer["id"] == 5 and answer["error"]["code"] == -32600
        assert "Streamable HTTP" in answer["error"]["message"]
        await stream.response.aclose()


async def test_a_forged_host_and_origin_are_refused_before_any_session() -> None:
    app = server().sse_app()
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{base}/sse", headers={"host": "evil.example"})).status_code == 403
        assert (await http.get(f"{base}/sse", headers={"origin": "https://evil.example"})).status_code == 403
        assert not app.state.mcp_sse.sessions


async def test_one_client_cannot_hold_more_streams_than_its_share() -> None:
    app = server().sse_app(max_streams_per_client=2, max_streams=3)
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        held = [await open_stream(http, base), await open_stream(http, base)]
        third = await http.get(f"{base}/sse")
        assert third.status_code == 429 and third.headers["retry-after"]
        await held[0].response.aclose()
        with anyio.fail_after(5):
            while len(app.state.mcp_sse.sessions) > 1:
                await anyio.sleep(0.02)
        held.append(await open_stream(http, base))  # room again once one closed
        for stream in held[1:]:
            await stream.response.aclose()


async def test_a_session_whose_dispatch_is_stuck_refuses_more_than_its_inbox_holds() -> None:
    mcp = server()
    release = threading.Event()  # set from the test's loop, read in the server's (its own thread)

    @mcp.on_roots_changed
    async def stuck() -> None:  # an author's handler that takes its time holds the session's dispatch
        while not release.is_set():
            await anyio.sleep(0.01)

    app = mcp.sse_app(inbox=1)
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        stream = await open_stream(http, base)
        url = f"{base}{stream.endpoint}"
        assert (await http.post(url, json=INITIALIZE)).status_code == 202
        await stream.message()
        roots = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        assert (await http.post(url, json=roots)).status_code == 202
        with anyio.fail_after(5):
            while (await http.post(url, json=PING)).status_code == 202:  # the first fills the inbox
                await anyio.sleep(0.01)
        refused = await http.post(url, json=PING)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert (await http.head(f"{base}/sse")).status_code == 405
        release.set()
        assert (await stream.message())["result"] == {}  # the queued ping is answered once it frees up
        await stream.response.aclose()


async def test_one_session_runs_at_most_max_in_flight_requests() -> None:
    mcp = server()
    release = threading.Event()
    running = 0

    @mcp.tool()
    async def hold() -> str:
        nonlocal running
        running += 1
        while not release.is_set():
            await anyio.sleep(0.01)
        return "done"

    app = mcp.sse_app(max_in_flight=3)
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        stream = await open_stream(http, base)
        url = f"{base}{stream.endpoint}"
        assert (await http.post(url, json=INITIALIZE)).status_code == 202
        await stream.message()
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "hold", "arguments": {}}}
        codes = [(await http.post(url, json={**call, "id": i})).status_code for i in range(1, 11)]
        assert codes == [202] * 3 + [503] * 7
        refused = await http.post(url, json=PING)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        with anyio.fail_after(5):
            while running < 3:
                await anyio.sleep(0.01)
        release.set()
        answered = {(await stream.message())["id"] for _ in range(3)}
        assert answered == {1, 2, 3} and running == 3
        assert (await http.post(url, json=PING)).status_code == 202  # room again once they are answered
        assert await stream.message() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        await stream.response.aclose()


async def test_a_client_that_stops_reading_loses_its_session_at_the_write_deadline() -> None:
    import socket

    mcp = server()

    @mcp.tool()
    def blob() -> str:
        return "x" * (1024 * 1024)

    app = mcp.sse_app(write_timeout=0.5)
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        host, port = base.removeprefix("http://").rsplit(":", 1)
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server blocks soon
        raw.connect((host, int(port)))
        raw.sendall(f"GET /sse HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        head = b""
        with anyio.fail_after(5):
            while (found := re.search(rb"data: (\S+session_id=[0-9a-f]{32})", head)) is None:
                head += await anyio.to_thread.run_sync(raw.recv, 4096)
        endpoint = found.group(1).decode()
        url = f"{base}{endpoint}"
        assert (await http.post(url, json=INITIALIZE)).status_code == 202
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "blob", "arguments": {}}}
        for i in range(1, 17):  # 16 MiB for a client that reads nothing more
            if (await http.post(url, json={**call, "id": i})).status_code != 202:
                break
        with anyio.fail_after(10):
            while app.state.mcp_sse.sessions:
                await anyio.sleep(0.05)
        assert (await http.post(url, json=PING)).status_code == 404
        raw.close()
