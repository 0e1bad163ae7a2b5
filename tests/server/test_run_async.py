"""`run_stdio_async`, `run_streamable_http_async`, `run_sse_async` and `run(transport="sse")`, as ported servers call them.

Each runs a real server in a child process, started the way the official
SDK's examples start one (`anyio.run(mcp.run_..._async)`), and a client
calls a tool: the official client over stdio and SSE, ours over
Streamable HTTP, and `Client(StdioServerParameters(...))` for the
official way of naming a stdio server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import StdioServerParameters as OfficialStdioParameters
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client

import mcp_resolve
from http_helpers import free_port
from mcp_resolve import Client, StdioServerParameters

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVER = """
import sys
import anyio
from mcp_resolve import MCPServer

mcp = MCPServer("runner")
mcp.settings.port = int(sys.argv[2]) if len(sys.argv) > 2 else None


@mcp.tool()
def shout(text: str) -> str:
    return text.upper()


how = sys.argv[1]
if how == "stdio":
    anyio.run(mcp.run_stdio_async)
elif how == "http":
    anyio.run(lambda: mcp.run_streamable_http_async(host="127.0.0.1"))
elif how == "sse-async":
    anyio.run(lambda: mcp.run_sse_async(host="127.0.0.1"))
else:
    mcp.run(transport="sse", host="127.0.0.1")
"""


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "runner.py"
    path.write_text(textwrap.dedent(SERVER))
    return str(path)


@contextmanager
def serving(script: str, how: str) -> Iterator[str]:
    """The server in a child process, until the block ends; yields its base URL once it listens."""
    port = free_port()
    child = subprocess.Popen([sys.executable, script, how, str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"server did not start: {child.stderr.read()!r}") from None  # type: ignore[union-attr]
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(10)


async def test_run_stdio_async_serves_the_official_client(script: str) -> None:
    # The official client starts the child with a short default environment: hand it our import path.
    env = {"PYTHONPATH": os.pathsep.join(sys.path)}
    params = OfficialStdioParameters(command=sys.executable, args=[script, "stdio"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("shout", {"text": "hi"})
    assert result.structured_content == {"result": "HI"}


async def test_client_takes_stdio_server_parameters_as_the_official_names_them(script: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=[script, "stdio"], env={"RUNNER": "1"})
    assert mcp_resolve.StdioServerParameters is StdioServerParameters
    async with Client(params) as client:
        result = await client.call_tool("shout", {"text": "hey"})
    assert result.content[0].text == "HEY"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="UTF-8"):
        StdioServerParameters(command="x", encoding="latin-1")


async def test_run_streamable_http_async_serves_on_the_settings_port(script: str) -> None:
    with serving(script, "http") as base:
        async with Client(f"{base}/mcp") as client:
            result = await client.call_tool("shout", {"text": "ok"})
    assert result.content[0].text == "OK"  # type: ignore[union-attr]


@pytest.mark.parametrize("how", ["sse-async", "sse-run"])
async def test_run_sse_serves_the_official_sse_client(script: str, how: str) -> None:
    with serving(script, how) as base:
        async with sse_client(f"{base}/sse") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("shout", {"text": "sse"})
    assert result.structured_content == {"result": "SSE"}
