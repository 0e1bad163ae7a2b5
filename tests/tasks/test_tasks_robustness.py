"""The runner under stress: a task store that fails, and concurrent writers racing for one task.

A store that fails: the request that needed it fails, other tasks carry on, nothing is misreported.

A store error while creating answers the call with a JSON-RPC error and no
task; while recording an outcome it is logged and the worker lets the task
go, so readers report it failed (at once on this worker, on others once its
lease lapses): never "completed" with a result that was not stored, and
never "working" forever.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel

from mcp_resolve import Client, Elicit, MCPError, MCPServer, Resolve
from mcp_resolve.stores import MemoryTaskStore, SqliteTaskStore
from mcp_resolve.tasks import TaskOptions, TaskRecord
from mcp_resolve.tasks.records import TaskLimits
from tasks_helpers import Raw, accept

pytestmark = pytest.mark.anyio


class FlakyStore(MemoryTaskStore):
    """A memory store whose writes fail on demand."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_create = False
        self.fail_outcome_of: set[str] = set()

    async def create(self, record: TaskRecord, *, limits: TaskLimits, now: float) -> bool:
        if self.fail_create:
            raise OSError("disk full")
        return await super().create(record, limits=limits, now=now)

    async def replace(
        self, record: TaskRecord, *, limits: TaskLimits | None = None, now: float = 0.0
    ) -> bool:
        if record.task_id in self.fail_outcome_of and not record.live:
            self.fail_outcome_of.discard(record.task_id)  # once: the disk recovers
            raise OSError("disk full")
        return await super().replace(record, limits=limits, now=now)


def build(store: FlakyStore) -> MCPServer:
    mcp = MCPServer(
        "flaky", task_store=store, task_options=TaskOptions(poll_interval_ms=20, lease_seconds=1.0)
    )

    @mcp.tool(task_support="optional")
    async def work(seconds: float = 0.05) -> str:
        await anyio.sleep(seconds)
        return "done"

    return mcp


async def test_a_failed_create_fails_the_call_and_makes_no_task() -> None:
    store = FlakyStore()
    async with Client(build(store), mode="2026-07-28") as client:
        store.fail_create = True
        with pytest.raises(MCPError) as failed:
            await Raw(client).call("work")
        assert failed.value.code == -32603
        assert len(store) == 0


async def test_a_failed_outcome_write_is_reported_failed_and_spares_other_tasks(caplog: Any) -> None:
    store = FlakyStore()
    async with Client(build(store), mode="2026-07-28") as client:
        raw = Raw(client)
        broken = (await raw.call("work", {"seconds": 0.1}))["taskId"]
        store.fail_outcome_of.add(broken)
        healthy = (await raw.call("work", {"seconds": 0.3}))["taskId"]
        assert (await raw.until(healthy, "completed"))["status"] == "completed"  # the host lived on
        lost = await raw.until(broken, "failed", timeout=5)
        assert lost["status"] == "failed" and "stopped before it finished" in lost["error"]["message"]
        assert "could not record the outcome of task" in caplog.text


class Ok(BaseModel):
    ok: bool


ran: list[str] = []


async def ask_ok() -> Elicit[Ok]:
    return Elicit("Go?", Ok, key="ok")


async def test_concurrent_last_answers_start_one_round(tmp_path: Path) -> None:
    """Several `tasks/update` with the last answer at once (SQLite: real threads): one round, no orphan."""
    mcp = MCPServer(
        "racy", task_store=SqliteTaskStore(tmp_path / "t.db"), task_options=TaskOptions(poll_interval_ms=20)
    )
    ran.clear()

    @mcp.tool(task_support="optional")
    async def once(ok: Annotated[Ok, Resolve(ask_ok)]) -> str:
        ran.append("body")
        await anyio.sleep(0.2)
        return "once"

    async with Client(mcp, mode="2026-07-28") as client:
        raw = Raw(client)
        for _attempt in range(3):
            task_id = (await raw.call("once"))["taskId"]
            await raw.until(task_id, "input_required")
            async with anyio.create_task_group() as group:
                for _ in range(6):
                    group.start_soon(raw.update, task_id, {"ok": accept(ok=True)})
            statuses = {(await raw.get(task_id))["status"] for _ in range(5)}
            assert statuses <= {"working", "completed"}, statuses  # never reported dead while it runs
            assert (await raw.until(task_id, "completed"))["result"]["content"][0]["text"] == "once"
    assert ran == ["body"] * 3
