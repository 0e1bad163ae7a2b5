"""The slow refund, played end to end against `server.py` with a scripted person answering.

    python examples/slow_refund/client.py           # stdio: spawns server.py
    python examples/slow_refund/client.py --http    # serves server.py on a free port, Streamable HTTP

1. A refund as a task: the call answers at once with a task id; polling shows
   the task waiting for the person's confirmation; the client's elicitation
   handler answers it (`tasks/update`); the provider's progress arrives as the
   task's status; the receipt is the task's result.
2. A second refund, cancelled while its confirmation is still unanswered.
3. The same tool called plainly (no task): the confirmation is an ordinary
   `input_required` round and the receipt is the same.

Every step is checked; a failed check makes the exit status non-zero.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp_types import ElicitRequestFormParams, ProgressNotificationParams

from mcp_resolve import Client
from mcp_resolve.client.tasks import TaskCancelled

SERVER = Path(__file__).resolve().with_name("server.py")


class Person:
    """Confirms every refund it is asked about, and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, question: ElicitRequestFormParams) -> dict[str, Any]:
        self.asked.append(question.message)
        return {"action": "accept", "content": {"ok": True}}


async def story(target: str | list[str]) -> None:
    person, progress = Person(), []

    async def on_progress(update: ProgressNotificationParams) -> None:
        progress.append(update.message)
        print(f"  progress: {update.message}")

    async with Client(target, elicitation_handler=person, progress_handler=on_progress) as client:
        (tool,) = (await client.list_tools()).tools
        assert set(tool.input_schema["properties"]) == {"order_id", "reason"}, tool.input_schema

        print("1. a refund as a task")
        handle = await client.call_tool_task("refund_order", {"order_id": "ORD-7002", "reason": "wrong size"})
        assert handle.task_id is not None, "the server should have made a task"
        print(f"  task {handle.task_id}: {(await handle.status()).status}")
        result = await handle.result()
        assert not result.is_error, result.content
        receipt = result.structured_content
        assert receipt == {
            "order_id": "ORD-7002",
            "reason": "wrong size",
            "cents": 4800,
            "reference": "RF-7002",
        }
        assert person.asked == ["Refund 48.00 for ORD-7002?"], person.asked
        assert any("payment provider" in (message or "") for message in progress), progress
        print(f"  receipt: {receipt}")

        print("2. a refund cancelled while its confirmation waits")
        handle = await client.call_tool_task("refund_order", {"order_id": "ORD-7001", "reason": "never came"})
        for _ in range(100):
            info = await handle.status()
            if info.status == "input_required":
                break
            await anyio.sleep(0.05)
        assert info.status == "input_required", info
        print(f"  asked: {[q['params']['message'] for q in (info.input_requests or {}).values()]}")
        await handle.cancel()
        assert (await handle.status()).status == "cancelled"
        try:
            await handle.result()
        except TaskCancelled:
            print("  cancelled: no refund")
        else:
            raise AssertionError("a cancelled task has no result")

        print("3. the same tool without a task")
        result = await client.call_tool("refund_order", {"order_id": "ORD-7001", "reason": "never came"})
        assert result.structured_content is not None and result.structured_content["cents"] == 999
        print(f"  receipt: {result.structured_content}")
    print("all checks passed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="serve server.py over Streamable HTTP")
    options = parser.parse_args()
    if not options.http:
        anyio.run(story, [sys.executable, str(SERVER)])
        return
    port = _free_port()
    server = subprocess.Popen([sys.executable, str(SERVER), "--port", str(port), "--log-level", "warning"])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not start") from None
                time.sleep(0.1)
        anyio.run(story, f"http://127.0.0.1:{port}/mcp")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
