"""What the HTTP hot path must not lose: pings on a silent call, user middleware, the fast event loop.

A request whose work never pauses is answered without a guard task and
without Starlette's middleware stack. These tests pin down the behaviour
those shortcuts must keep: a call that does pause still gets keep-alive pings
and its answer, middleware a user adds to the app still sees every request,
and `mcp.run(transport="streamable-http")` serves on uvloop with httptools.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from starlette.middleware.base import BaseHTTPMiddleware

from http_helpers import free_port, serving
from mcp_resolve import Client, MCPServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ACCEPT_BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def napping_server() -> MCPServer:
    mcp = MCPServer("fast-path")

    @mcp.tool()
    async def nap(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @mcp.tool()
    async def echo(text: str) -> str:
        return text

    return mcp


def modern_call(name: str, arguments: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    meta = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    headers = {
        **ACCEPT_BOTH,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return json.dumps(body).encode(), headers


@pytest.fixture(scope="module")
def pinging() -> Iterator[str]:
    with serving(napping_server().streamable_http_app(sse_ping_interval=0.05)) as base:
        yield f"{base}/mcp"


async def test_a_silent_call_is_kept_alive_with_pings_then_answered(pinging: str) -> None:
    body, headers = modern_call("nap", {"seconds": 0.4})
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(pinging, content=body, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = response.text.split("\n\n")
    pings = [e for e in events if e == ": ping"]
    assert len(pings) >= 3, response.text  # 0.4 s of silence at a 0.05 s interval
    answers = [json.loads(e.split("data: ", 1)[1]) for e in events if e.startswith("event: message")]
    assert [a["result"]["content"][0]["text"] for a in answers] == ["slept 0.4"]


async def test_a_call_that_never_pauses_is_plain_json_with_a_length(pinging: str) -> None:
    body, headers = modern_call("echo", {"text": "hi"})
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(pinging, content=body, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    assert response.json()["result"]["content"][0]["text"] == "hi"


async def test_a_handshake_call_that_pauses_is_pinged_too(pinging: str) -> None:
    async with Client(pinging, mode="legacy") as client:  # type: ignore[arg-type]
        result = await client.call_tool("nap", {"seconds": 0.2})
    assert result.content[0].text == "slept 0.2"  # type: ignore[union-attr]


class Stamp(BaseHTTPMiddleware):
    async def dispatch(self, request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        response.headers["x-stamped"] = request.url.path
        return response


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_middleware_added_to_the_app_sees_mcp_requests(mode: Any) -> None:
    app = napping_server().streamable_http_app()
    app.add_middleware(Stamp)
    with serving(app) as base:
        async with Client(f"{base}/mcp", mode=mode) as client:  # type: ignore[arg-type]
            assert (await client.call_tool("echo", {"text": "x"})).content[0].text == "x"  # type: ignore[union-attr]
        body, headers = modern_call("echo", {"text": "y"})
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(f"{base}/mcp", content=body, headers=headers)
    assert response.headers["x-stamped"] == "/mcp"


LOOP_SERVER = """
import asyncio, sys
from mcp_resolve import MCPServer

mcp = MCPServer("loop")

@mcp.tool()
async def stack() -> str:
    loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
    parser = "httptools" if "uvicorn.protocols.http.httptools_impl" in sys.modules else "h11"
    return f"{loop} {parser}"

mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop does not run on Windows")
async def test_run_serves_on_uvloop_with_httptools() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", LOOP_SERVER, str(port)])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    result = await client.call_tool("stack", {})
                break
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                await anyio.sleep(0.1)
        assert result.content[0].text == "uvloop httptools"  # type: ignore[union-attr]
    finally:
        server.terminate()
        server.wait(10)
