"""`--reload`, run as a user runs it: a real server process, a real file edited on disk, a real client.

Over HTTP the same client keeps calling the same URL while the file changes under it: a new tool
appears, a broken edit (a syntax error, then a bad resolver graph) leaves the last good server
answering, a fix is served again. Over stdio, a good edit ends the server for its client to start
again, and a broken one leaves it serving.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import PYTHON, REFUND_DESK
from mcp_resolve import Client
from test_cli import cli, free_port

pytestmark = pytest.mark.slow

CLI = [PYTHON, "-m", "mcp_resolve"]

HELLO = """
    from __future__ import annotations

    from mcp_resolve import MCPServer
    from texts import GREETING

    mcp = MCPServer("Reloaded")

    @mcp.tool()
    def hello(name: str) -> str:
        return f"{GREETING} {name}"
"""

BYE = """

    @mcp.tool()
    def bye(name: str) -> str:
        return f"bye {name}"
"""

SYNTAX_ERROR = """

    def broken(:
"""

CYCLE = """

    from typing import Annotated
    from mcp_resolve import Resolve

    async def first(value: Annotated[int, Resolve(second)]) -> int:
        return value

    async def second(value: Annotated[int, Resolve(first)]) -> int:
        return value

    @mcp.tool()
    async def spin(n: Annotated[int, Resolve(first)]) -> int:
        return n
"""

THIRD = """

    @mcp.tool()
    def third() -> str:
        return "third"
"""


def write(path: Path, *parts: str) -> None:
    path.write_text("".join(textwrap.dedent(part) for part in parts))


async def eventually(check: Callable[[], Any], what: str, log: Path, seconds: float = 60) -> Any:
    """Poll `check` (sync or async) until it returns something truthy; fail naming `what` (and showing the
    server's stderr, `log`) after `seconds`."""
    with anyio.move_on_after(seconds):
        while True:
            found = check()
            if hasattr(found, "__await__"):
                found = await found
            if found:
                return found
            await anyio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; the server said:\n{log.read_text()[-4000:]}")


@pytest.mark.anyio
async def test_http_reload_serves_a_new_tool_to_the_same_client_and_keeps_the_last_good_server(
    tmp_path: Path,
) -> None:
    served = tmp_path / "server.py"
    write(tmp_path / "texts.py", 'GREETING = "hello"\n')
    write(served, HELLO)
    log = tmp_path / "stderr.log"
    port = free_port()
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [*CLI, "run", str(served), "--http", "--port", str(port), "--reload"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}/mcp"

    def said(text: str, times: int = 1) -> bool:
        return log.read_text().count(text) >= times

    try:
        await eventually(lambda: said("mcp-resolve --reload: serving"), "the first server", log)
        async with Client(url, mode="2026-07-28") as client:

            async def tools() -> list[str]:
                return sorted(tool.name for tool in (await client.list_tools()).tools)

            assert await tools() == ["hello"]
            write(served, HELLO, BYE)
            await eventually(lambda: _has(tools, "bye"), "bye to appear", log)
            result = await client.call_tool("bye", {"name": "Ada"})
            assert result.structured_content == {"result": "bye Ada"}

            # A module beside the served file is watched and loaded afresh too.
            write(tmp_path / "texts.py", 'GREETING = "bonjour"\n')
            await eventually(lambda: _greets(client, "bonjour Ada"), "the new greeting", log)

            # A syntax error: shown with its place, and the last good server keeps answering.
            write(served, HELLO, BYE, SYNTAX_ERROR)
            await eventually(
                lambda: said("the last good server keeps serving"), "the broken edit's report", log
            )
            text = log.read_text()
            assert f'File "{served.resolve()}", line' in text and "SyntaxError: invalid syntax" in text
            result = await client.call_tool("bye", {"name": "still"})
            assert result.structured_content == {"result": "bye still"}

            # A graph registration refuses (InvalidSignature): the same.
            write(served, HELLO, BYE, CYCLE)
            await eventually(
                lambda: said("the last good server keeps serving", 2), "the bad graph's report", log
            )
            assert "InvalidSignature: " in log.read_text()
            assert await tools() == ["bye", "hello"]

            # Fixed: served again, from the same client and URL.
            write(served, HELLO, BYE, THIRD)
            await eventually(lambda: _has(tools, "third"), "third to appear", log)
            result = await client.call_tool("third", {})
            assert result.structured_content == {"result": "third"}
        assert "Traceback" not in log.read_text(), log.read_text()
    finally:
        process.terminate()
        with anyio.move_on_after(20):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    # Stopping the supervisor stops its worker: nothing is left listening on the port.
    with pytest.raises(OSError):
        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()


async def _has(tools: Callable[[], Any], name: str) -> bool:
    return name in await tools()


async def _greets(client: Client, expected: str) -> bool:
    result = await client.call_tool("hello", {"name": "Ada"})
    return result.structured_content == {"result": expected}


def _message(method: str, request_id: int | None = None, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return (json.dumps(message) + "\n").encode()


@pytest.mark.anyio
async def test_stdio_reload_keeps_serving_a_broken_edit_and_ends_on_a_good_one(tmp_path: Path) -> None:
    served = tmp_path / "server.py"
    write(tmp_path / "texts.py", 'GREETING = "hello"\n')
    write(served, HELLO)
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [*CLI, "run", str(served), "--reload"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdin is not None and process.stdout is not None
    buffered = b""

    async def ask(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        nonlocal buffered
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(_message(method, request_id, params))
        with anyio.fail_after(60):
            while b"\n" not in buffered:
                buffered += await process.stdout.receive()
        line, _, buffered = buffered.partition(b"\n")
        answer = json.loads(line)
        assert answer["id"] == request_id, answer
        return dict(answer)

    try:
        capabilities = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert "result" in await ask(1, "initialize", capabilities)
        await process.stdin.send(_message("notifications/initialized"))
        listed = await ask(2, "tools/list")
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["hello"]

        write(served, HELLO, SYNTAX_ERROR)
        await eventually(
            lambda: "the running server keeps serving" in log.read_text(), "the broken edit's report", log
        )
        assert "SyntaxError: invalid syntax" in log.read_text()
        called = await ask(3, "tools/call", {"name": "hello", "arguments": {"name": "Ada"}})
        assert called["result"]["structuredContent"] == {"result": "hello Ada"}

        write(served, HELLO, BYE)
        with anyio.fail_after(60):
            assert await process.wait() == 0
        assert "this stdio server ends, so that the client starts the new one" in log.read_text()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.anyio
async def test_dev_reload_points_the_inspector_at_a_url_that_serves(tmp_path: Path) -> None:
    """npx is replaced by a recorder that, like the Inspector, connects to the URL it is given."""
    record = tmp_path / "npx.json"
    fake = tmp_path / "npx"
    fake.write_text(
        textwrap.dedent(
            f"""\
            #!{PYTHON}
            import json, sys, anyio
            from mcp_resolve import Client

            url = sys.argv[sys.argv.index("--server-url") + 1]

            async def main():
                with anyio.fail_after(60):
                    while True:
                        try:
                            async with Client(url, mode="2026-07-28") as client:
                                return [tool.name for tool in (await client.list_tools()).tools]
                        except Exception:
                            await anyio.sleep(0.2)

            tools = anyio.run(main)
            open({str(record)!r}, "w").write(json.dumps({{"argv": sys.argv[1:], "tools": tools}}))
            """
        )
    )
    fake.chmod(0o755)
    port = free_port()
    path = f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"
    done = await anyio.to_thread.run_sync(
        lambda: cli("dev", str(REFUND_DESK), "--reload", "--port", str(port), env={"PATH": path})
    )
    assert done.returncode == 0, done.stderr
    recorded = json.loads(record.read_text())
    assert recorded["argv"] == [
        "--yes",
        "@modelcontextprotocol/inspector@2.12.0",
        "--transport",
        "http",
        "--server-url",
        f"http://127.0.0.1:{port}/mcp",
    ]
    assert recorded["tools"] == ["refund_order", "receipt_lines", "restock"]
    # The server it started ends with the Inspector.
    with pytest.raises(OSError):
        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()


def test_reload_without_watchfiles_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "watchfiles.py").write_text('raise ImportError("watchfiles is not installed here")\n')
    pythonpath = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    done = cli("run", str(REFUND_DESK), "--http", "--reload", env={"PYTHONPATH": pythonpath})
    assert done.returncode == 1
    assert "pip install 'mcp-resolve[reload]'" in done.stderr and "Traceback" not in done.stderr
    # dev --reload says so before it opens an Inspector on a URL nothing would serve.
    fake = tmp_path / "npx"
    fake.write_text(f"#!{PYTHON}\nopen({str(tmp_path / 'called')!r}, 'w').write('yes')\n")
    fake.chmod(0o755)
    path = f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"
    done = cli("dev", str(REFUND_DESK), "--reload", env={"PYTHONPATH": pythonpath, "PATH": path})
    assert done.returncode == 1 and "pip install 'mcp-resolve[reload]'" in done.stderr
    assert not (tmp_path / "called").exists()


def test_reload_serves_one_process_at_a_time() -> None:
    done = cli("run", str(REFUND_DESK), "--http", "--reload", "--workers", "2")
    assert done.returncode == 1 and "--reload serves one worker at a time" in done.stderr


@pytest.mark.anyio
async def test_http_reload_worker_never_outlives_its_supervisor(tmp_path: Path) -> None:
    """Killed outright (SIGKILL: no cleanup runs), the supervisor still takes its worker with it: the port closes."""
    served = tmp_path / "server.py"
    write(tmp_path / "texts.py", 'GREETING = "hello"\n')
    write(served, HELLO)
    log = tmp_path / "stderr.log"
    port = free_port()
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [*CLI, "run", str(served), "--http", "--port", str(port), "--reload"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        await eventually(lambda: "mcp-resolve --reload: serving" in log.read_text(), "the first server", log)
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client:
            assert (await client.call_tool("hello", {"name": "Ada"})).structured_content == {
                "result": "hello Ada"
            }
        process.kill()
        await process.wait()

        async def refused() -> bool:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
            except OSError:
                return True
            return False

        await eventually(refused, "the orphaned worker to stop listening", log, seconds=30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


LIFESPAN_FAILS = """
    from contextlib import asynccontextmanager

    from mcp_resolve import MCPServer

    @asynccontextmanager
    async def life(server):
        raise RuntimeError("database unreachable at startup")
        yield

    mcp = MCPServer("Reloaded", lifespan=life)

    @mcp.tool()
    def v2() -> str:
        return "v2"
"""

V1 = """
    from mcp_resolve import MCPServer

    mcp = MCPServer("Reloaded")

    @mcp.tool()
    def v1() -> str:
        return "v1"
"""


@pytest.mark.anyio
async def test_http_reload_keeps_the_last_good_server_when_a_lifespan_fails(tmp_path: Path) -> None:
    served = tmp_path / "server.py"
    write(served, V1)
    log = tmp_path / "stderr.log"
    port = free_port()
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [*CLI, "run", str(served), "--http", "--port", str(port), "--reload"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await eventually(lambda: "mcp-resolve --reload: serving" in log.read_text(), "the first server", log)
        write(served, LIFESPAN_FAILS)
        await eventually(
            lambda: "the last good server keeps serving" in log.read_text(), "the failed start's report", log
        )
        assert "database unreachable at startup" in log.read_text()
        async with Client(url, mode="2026-07-28") as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == ["v1"]
            assert (await client.call_tool("v1", {})).structured_content == {"result": "v1"}
    finally:
        process.terminate()
        with anyio.move_on_after(20):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
