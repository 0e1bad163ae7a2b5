"""A task's `ctx.meta`: the creating request's `_meta`, in every round, bounded, and never echoed.

A tool reads in a task what it reads in a direct call, less the keys that
belong to the one request that created the task (the log level, the client's
trace context). Later requests (`tasks/update`) do not change it. Records
written before the meta was kept still run their next round.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)
from pydantic import BaseModel

from mcp_resolve import Client, Context, Elicit, MCPServer, Resolve
from mcp_resolve.stores import MemoryTaskStore, SqliteTaskStore
from mcp_resolve.tasks import TaskOptions
from mcp_resolve.tasks.records import MAX_META_BYTES
from mcp_resolve.tasks.runner import runner_of
from tasks_helpers import ALL_CAPS, Raw, accept

pytestmark = pytest.mark.anyio

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SENT = {
    "com.example/tenant": "acme",
    "progressToken": "tok-7",
    "baggage": "tenant=acme",
    "traceparent": TRACEPARENT,
    "tracestate": "vendor=1",
    LOG_LEVEL_META_KEY: "debug",
}
NOT_KEPT = ("traceparent", "tracestate", LOG_LEVEL_META_KEY)


class Ok(BaseModel):
    ok: bool


seen: list[dict[str, Any]] = []


async def read_meta(ctx: Context) -> dict[str, Any]:
    seen.append(dict(ctx.meta))  # once per round: every round must see the same
    return dict(ctx.meta)


async def ask_ok() -> Elicit[Ok]:
    return Elicit("Go?", Ok, key="ok")


def build(**store: Any) -> MCPServer:
    mcp = MCPServer("meta-test", task_options=TaskOptions(poll_interval_ms=20), **store)

    @mcp.tool(task_support="optional")
    async def echo_meta(ctx: Context) -> str:
        return json.dumps(ctx.meta, sort_keys=True)

    @mcp.tool(task_support="optional")
    async def asks(
        meta: Annotated[dict[str, Any], Resolve(read_meta)], ok: Annotated[Ok, Resolve(ask_ok)]
    ) -> str:
        return json.dumps(meta, sort_keys=True)

    return mcp


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    seen.clear()
    async with Client(build(), mode="2026-07-28") as client:
        yield Raw(client)


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_a_task_sees_the_meta_a_direct_call_sees_less_the_per_request_keys(raw: Raw) -> None:
    direct = json.loads(text(await raw.call("echo_meta", meta=SENT, caps={"elicitation": {}})))
    assert direct["com.example/tenant"] == "acme" and direct[LOG_LEVEL_META_KEY] == "debug"

    created = await raw.call("echo_meta", meta=SENT)
    assert created["resultType"] == "task"
    done = await raw.until(created["taskId"], "completed")
    in_task = json.loads(text(done["result"]))
    expected = {key: value for key, value in direct.items() if key not in NOT_KEPT}
    expected[CLIENT_CAPABILITIES_META_KEY] = ALL_CAPS  # the task-creating request declared the extension
    assert in_task == expected
    assert in_task["progressToken"] == "tok-7" and in_task["baggage"] == "tenant=acme"
    assert in_task[PROTOCOL_VERSION_META_KEY] == "2026-07-28" and CLIENT_INFO_META_KEY in in_task
    assert not set(NOT_KEPT) & set(in_task)


async def test_every_round_sees_the_creating_requests_meta_not_the_updates(raw: Raw) -> None:
    created = await raw.call("asks", meta=SENT)
    task_id = created["taskId"]
    waiting = await raw.until(task_id, "input_required")
    assert "ok" in waiting["inputRequests"]
    await raw.update(
        task_id, {"ok": accept(ok=True)}, meta={"com.example/tenant": "mallory", "progressToken": 9}
    )
    done = await raw.until(task_id, "completed")
    assert done["status"] == "completed"
    assert len(seen) == 2 and seen[0] == seen[1]  # round 1 asked, round 2 finished
    assert seen[1]["com.example/tenant"] == "acme" and seen[1]["progressToken"] == "tok-7"
    assert json.loads(text(done["result"])) == seen[1]
    for answer in (created, waiting, await raw.get(task_id)):  # the record's meta never leaves the server
        assert "acme" not in json.dumps({k: v for k, v in answer.items() if k != "result"})


async def test_a_hostile_meta_is_bounded() -> None:
    server = build()
    async with Client(server, mode="2026-07-28") as client:
        raw = Raw(client)
        refused = await raw.call("echo_meta", meta={"com.example/blob": "x" * MAX_META_BYTES})
        assert refused.get("resultType") != "task" and refused["isError"] is True
        assert "_meta is too large" in text(refused) and "xxxx" not in text(refused)
        store = runner_of(server).store
        assert isinstance(store, MemoryTaskStore) and len(store) == 0  # nothing kept of it
        # What fits is kept whole.
        fits = {"com.example/blob": "y" * (MAX_META_BYTES - 100)}
        created = await raw.call("echo_meta", meta=fits)
        done = await raw.until(created["taskId"], "completed")
    assert json.loads(text(done["result"]))["com.example/blob"] == fits["com.example/blob"]


async def test_a_record_written_before_meta_was_kept_runs_its_next_round(tmp_path: Path) -> None:
    """A task left waiting by the previous version: its record has no meta; the next round runs, with the
    envelope the record kept."""
    path = tmp_path / "tasks.db"
    seen.clear()
    async with Client(build(task_store=SqliteTaskStore(path)), mode="2026-07-28") as client:
        raw = Raw(client)
        task_id = (await raw.call("asks", meta=SENT))["taskId"]
        await raw.until(task_id, "input_required")
        with sqlite3.connect(path) as conn:  # rewrite it as the older code wrote it
            (data,) = conn.execute(
                "SELECT data FROM mcp_resolve_tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            old = {k: v for k, v in json.loads(data).items() if k not in ("meta", "trace", "rounds")}
            conn.execute(
                "UPDATE mcp_resolve_tasks SET data = ? WHERE task_id = ?", (json.dumps(old), task_id)
            )
        await raw.update(task_id, {"ok": accept(ok=True)})
        done = await raw.until(task_id, "completed")
    assert done["status"] == "completed"
    last = json.loads(text(done["result"]))
    assert set(last) == {PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY}
