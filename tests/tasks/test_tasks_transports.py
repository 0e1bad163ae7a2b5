"""Tasks through real transports: our client end to end over stdio and HTTP, and a server restarted mid-task.

The restart tests run the server as a process of its own, keeping tasks in
SQLite: a task waiting for an answer survives the restart and the new process
finishes it; a task that was working when its process died is reported
failed (at once after a clean stop, once its lease lapses after a kill), never
"working" forever.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import ElicitRequestFormParams, ProgressNotificationParams

from conftest import EXAMPLES, SERVERS, load_module
from http_helpers import free_port, http_server
from mcp_resolve import Client, MCPError
from mcp_resolve.client.tasks import TaskCancelled

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASK_SERVER = SERVERS / "task_server.py"
SLOW_REFUND = EXAMPLES / "slow_refund"


async def confirm_all(question: ElicitRequestFormParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


async def drive(target: Any) -> None:
    """What every transport must carry: a task answered, progress seen, one cancelled while it waits."""
    progress: list[str | None] = []

    async def on_progress(update: ProgressNotificationParams) -> None:
        progress.append(update.message)

    async with Client(target, elicitation_handler=confirm_all, progress_handler=on_progress) as client:
        assert client.server_capabilities["extensions"] == {"io.modelcontextprotocol/tasks": {}}
        result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "r"}, task=True)
        assert result.structured_content is not None and result.structured_content["cents"] == 4800
        assert any(message and "payment provider" in message for message in progress), progress

        handle = await client.call_tool_task("refund_order", {"order_id": "ORD-7001", "reason": "r"})
        assert handle.task_id is not None
        with anyio.fail_after(10):
            while (await handle.status()).status != "input_required":
                await anyio.sleep(0.02)
        await handle.cancel()
        assert (await client.task(handle.task_id).status()).status == "cancelled"
        with pytest.raises(TaskCancelled):
            await handle.result()


async def test_our_client_drives_tasks_over_stdio() -> None:
    await drive([sys.executable, str(SLOW_REFUND / "server.py")])


async def test_our_client_drives_tasks_over_http() -> None:
    server = load_module(SLOW_REFUND / "server.py")
    async with http_server(server.build(poll_interval_ms=20).streamable_http_app()) as base:
        await drive(f"{base}/mcp")


async def test_a_task_outlives_the_client_that_started_it() -> None:
    server = load_module(SLOW_REFUND / "server.py")
    async with http_server(server.build(poll_interval_ms=20).streamable_http_app()) as base:
        async with Client(f"{base}/mcp", elicitation_handler=confirm_all) as first:
            handle = await first.call_tool_task("refund_order", {"order_id": "ORD-7002", "reason": "r"})
        async with Client(f"{base}/mcp", elicitation_handler=confirm_all) as second:
            result = await second.task(str(handle.task_id)).result()
        assert result.structured_content is not None and result.structured_content["reference"] == "RF-7002"


@contextmanager
def task_server(db: Path, port: int, lease: float) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, str(TASK_SERVER), "--db", str(db), "--port", str(port), "--lease", str(lease)]
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.HTTPError:
                assert process.poll() is None and time.monotonic() < deadline, "the task server did not start"
                time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


async def test_a_restart_mid_task_with_the_sqlite_store(tmp_path: Path) -> None:
    db, port = tmp_path / "tasks.db", free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with task_server(db, port, lease=1.5) as first:
        async with Client(url, elicitation_handler=confirm_all) as client:
            working = await client.call_tool_task("slow", {"seconds": 60})
            waiting = await client.call_tool_task("confirm", {"note": "refund"})
            with anyio.fail_after(10):
                while (await waiting.status()).status != "input_required":
                    await anyio.sleep(0.02)
            assert (await working.status()).status == "working"
        first.send_signal(signal.SIGKILL)  # no goodbye: only the lease tells
        first.wait(10)
    with task_server(db, port, lease=1.5):
        async with Client(url, elicitation_handler=confirm_all) as client:
            died = client.task(str(working.task_id))
            with anyio.fail_after(10):
                while (status := await died.status()).status == "working":
                    await anyio.sleep(0.05)
            assert status.status == "failed"
            assert status.error == {
                "code": -32603,
                "message": "The server running this task stopped before it finished",
            }
            with pytest.raises(MCPError, match="stopped before it finished"):
                await died.result()
            # The task that was waiting for an answer waited through the restart; this process finishes it.
            resumed = client.task(str(waiting.task_id))
            assert (await resumed.status()).status == "input_required"
            result = await resumed.result()
            assert result.content[0].text == "refund: confirmed"  # type: ignore[union-attr]


async def test_a_clean_stop_fails_its_working_tasks_at_once(tmp_path: Path) -> None:
    db, port = tmp_path / "tasks.db", free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with task_server(db, port, lease=30) as first:  # a lease far longer than the test
        async with Client(url) as client:
            working = await client.call_tool_task("slow", {"seconds": 60})
            assert (await working.status()).status == "working"
        first.send_signal(signal.SIGTERM)  # uvicorn shuts down cleanly, then re-raises the signal
        assert first.wait(15) in (0, -signal.SIGTERM)
    with task_server(db, port, lease=30):
        async with Client(url) as client:
            status = await client.task(str(working.task_id)).status()
            assert status.status == "failed" and status.status_message is not None
            assert "stopped before it finished" in status.status_message
