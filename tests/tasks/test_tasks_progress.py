"""A task's progress message is size-limited (issue 35): the tool writes it, every `tasks/get` reads it.

Progress becomes the task's status message, written to its record outside
the task's byte bounds (a report must never fail the tool), so a tool
reporting a megabyte of progress used to keep a megabyte in the record and
send it on every poll. It is cut to `MAX_STATUS_MESSAGE` characters, ending
with a marker that says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from mcp_resolve import Client, Context, MCPServer
from mcp_resolve.stores import MemoryTaskStore
from mcp_resolve.tasks import TaskOptions
from mcp_resolve.tasks.runner import MAX_STATUS_MESSAGE, TRUNCATED
from tasks_helpers import Raw

pytestmark = pytest.mark.anyio

HUGE = "p" * 2_000_000


def build(store: MemoryTaskStore) -> MCPServer:
    mcp = MCPServer("progress", task_store=store, task_options=TaskOptions(poll_interval_ms=20))

    @mcp.tool(task_support="optional")
    async def chatty(ctx: Context, size: int = 0, progress: int = 1) -> str:
        message = None if size == 0 else "half way" if size < 0 else HUGE[:size]
        await ctx.report_progress(progress, None, message)
        await anyio.sleep(30)
        return "done"

    return mcp


@pytest.fixture
async def raw() -> AsyncIterator[tuple[Raw, MemoryTaskStore]]:
    store = MemoryTaskStore()
    async with Client(build(store), mode="2026-07-28") as client:
        yield Raw(client), store


async def until_reported(raw: Raw, task_id: str) -> str:
    with anyio.fail_after(10):
        while (message := (await raw.get(task_id)).get("statusMessage")) is None:
            await anyio.sleep(0.02)
    assert isinstance(message, str)
    return message


async def test_a_huge_progress_message_is_cut_with_a_marker(raw: tuple[Raw, MemoryTaskStore]) -> None:
    client, store = raw
    task_id = (await client.call("chatty", {"size": len(HUGE)}))["taskId"]
    message = await until_reported(client, task_id)
    assert len(message) == MAX_STATUS_MESSAGE and message.endswith(TRUNCATED)
    assert message == HUGE[: MAX_STATUS_MESSAGE - len(TRUNCATED)] + TRUNCATED
    record = await store.get(task_id)
    assert record is not None and len(record.encoded()) < 10_000  # the record does not hold the megabytes
    await client.cancel(task_id)

    short = (await client.call("chatty", {"size": -1}))["taskId"]
    assert await until_reported(client, short) == "half way"  # a short one is kept as it is
    await client.cancel(short)


async def test_progress_without_a_message_is_cut_too(raw: tuple[Raw, MemoryTaskStore]) -> None:
    client, _ = raw
    task_id = (await client.call("chatty", {"progress": 10**4000}))["taskId"]  # a number of 4,001 digits
    message = await until_reported(client, task_id)
    assert len(message) == MAX_STATUS_MESSAGE and message.endswith(TRUNCATED) and message.startswith("1000")
    await client.cancel(task_id)
