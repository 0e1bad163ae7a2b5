"""The task stores' contract, the same for every implementation: compare-and-set, a bounded create, purge.

The runner's correctness with several workers rests on exactly these four
operations, so each store runs the same tests; SQLite also keeps its records
across a reopen (a restarted server) and between two handles on one file (two
workers of a host).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_resolve.stores import MemoryTaskStore, SqliteTaskStore, TaskStore
from mcp_resolve.tasks import TaskRecord
from mcp_resolve.tasks.records import TaskLimits, TaskStoreFull
from tasks_helpers import record

pytestmark = pytest.mark.anyio


OPEN = TaskLimits(None, None, None, None, None)
"""No bound at all: the tests of other behaviour."""


def finished(task_id: str, principal: str | None, *, expires_at: float = 2000.0) -> TaskRecord:
    done = record(task_id, principal, expires_at=expires_at)
    done.status = "completed"
    return done


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    if request.param == "memory":
        yield MemoryTaskStore()
        return
    sqlite = SqliteTaskStore(tmp_path / "tasks.db")
    yield sqlite
    sqlite.close()


def test_both_stores_are_task_stores() -> None:
    assert isinstance(MemoryTaskStore(), TaskStore)
    assert isinstance(SqliteTaskStore("x.db"), TaskStore)


async def test_a_record_comes_back_as_it_went_in_and_as_a_copy(store: TaskStore) -> None:
    original = record()
    original.pending = {"k": {"key": "k", "question": {"method": "roots/list", "params": {}}}}
    original.meta = {"com.example/tenant": "acme", "progressToken": 7, "baggage": "a=1", "ünï": ["\u2028"]}
    original.trace = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    original.rounds = 2
    assert await store.create(original, limits=OPEN, now=1000.0)
    got = await store.get("t1")
    assert got == original
    assert got is not original
    got.status = "completed"
    assert (await store.get("t1")).status == "working"  # type: ignore[union-attr]
    assert await store.get("nope") is None


async def test_the_same_id_is_never_created_twice(store: TaskStore) -> None:
    assert await store.create(record(), limits=OPEN, now=1000.0)
    assert not await store.create(record(), limits=OPEN, now=1000.0)


async def test_replace_is_compare_and_set(store: TaskStore) -> None:
    await store.create(record(), limits=OPEN, now=1000.0)
    first, second = await store.get("t1"), await store.get("t1")
    assert first is not None and second is not None
    first.status_message = "first"
    assert await store.replace(first)
    assert first.version == 1
    second.status_message = "second"
    assert not await store.replace(second)  # wrote against a stale version: refused, nothing changed
    assert second.version == 0
    stored = await store.get("t1")
    assert stored is not None and stored.status_message == "first" and stored.version == 1
    assert not await store.replace(record("missing"))


async def test_concurrent_writers_never_lose_an_update(store: TaskStore) -> None:
    await store.create(record(), limits=OPEN, now=1000.0)

    async def add(word: str) -> None:
        while True:
            current = await store.get("t1")
            assert current is not None
            current.issued = [*current.issued, word]
            if await store.replace(current):
                return

    async with anyio.create_task_group() as group:
        for index in range(20):
            group.start_soon(add, f"w{index}")
    stored = await store.get("t1")
    assert stored is not None and sorted(stored.issued) == sorted(f"w{index}" for index in range(20))


def live(n: int) -> TaskLimits:
    return TaskLimits(max_live_per_principal=n)


async def refused(store: TaskStore, task: TaskRecord, limits: TaskLimits, now: float = 1000.0) -> str:
    """The bound a create of `task` is refused by (the test fails if it is stored)."""
    with pytest.raises(TaskStoreFull) as full:
        await store.create(task, limits=limits, now=now)
    assert await store.get(task.task_id) is None
    return full.value.bound


async def test_create_bounds_the_live_tasks_of_one_holder(store: TaskStore) -> None:
    assert await store.create(record("a1", "alice"), limits=live(2), now=1000.0)
    assert await store.create(record("a2", "alice"), limits=live(2), now=1000.0)
    assert await refused(store, record("a3", "alice"), live(2)) == "max_live_per_principal"
    assert await store.create(record("b1", "bob"), limits=live(2), now=1000.0)  # another caller's own bound
    assert await store.create(record("n1", None), limits=live(1), now=1000.0)
    assert await refused(store, record("n2", None), live(1)) == "max_live_per_principal"
    done = await store.get("a1")
    assert done is not None
    done.status = "completed"  # a finished task no longer counts
    assert await store.replace(done)
    assert await store.create(record("a3", "alice"), limits=live(2), now=1000.0)
    # An expired task (not yet purged) no longer counts either.
    assert await store.create(record("a4", "alice", expires_at=1500.0), limits=live(3), now=1000.0)
    assert await refused(store, record("a5", "alice"), live(3)) == "max_live_per_principal"
    assert await store.create(record("a5", "alice"), limits=live(3), now=1600.0)


async def test_create_bounds_the_tasks_and_bytes_of_one_holder_finished_ones_included(
    store: TaskStore,
) -> None:
    size = len(record("x", "alice").encoded())
    tasks = TaskLimits(max_live_per_principal=None, max_tasks_per_principal=2)
    for task_id in ("a1", "a2"):
        assert await store.create(finished(task_id, "alice"), limits=tasks, now=1000.0)
    assert await refused(store, record("a3", "alice"), tasks) == "max_tasks_per_principal"
    assert await store.create(record("b1", "bob"), limits=tasks, now=1000.0)
    by_bytes = TaskLimits(max_live_per_principal=None, max_bytes_per_principal=3 * size + 10)
    assert await store.create(finished("c1", "carol"), limits=by_bytes, now=1000.0)
    assert await store.create(finished("c2", "carol"), limits=by_bytes, now=1000.0)
    assert await store.create(finished("c3", "carol"), limits=by_bytes, now=1000.0)
    assert await refused(store, record("c4", "carol"), by_bytes) == "max_bytes_per_principal"
    assert await store.create(record("d1", "dave"), limits=by_bytes, now=1000.0)


async def test_create_bounds_the_whole_store(store: TaskStore) -> None:
    size = len(record("x", "h0").encoded())
    tasks = TaskLimits(max_live_per_principal=None, max_tasks=3)
    for index in range(3):
        assert await store.create(finished(f"t{index}", f"h{index}"), limits=tasks, now=1000.0)
    assert await refused(store, record("t3", "h3"), tasks) == "max_tasks"
    by_bytes = TaskLimits(max_live_per_principal=None, max_bytes=4 * size + 10)
    assert await store.create(record("t3", "h3"), limits=by_bytes, now=1000.0)
    assert await refused(store, record("t4", "h4"), by_bytes) == "max_bytes"


async def test_expired_tasks_make_room_and_unexpired_ones_are_never_evicted(store: TaskStore) -> None:
    limits = TaskLimits(max_live_per_principal=None, max_tasks_per_principal=2, max_tasks=3)
    assert await store.create(finished("old", "alice", expires_at=1500.0), limits=limits, now=1000.0)
    assert await store.create(finished("new", "alice", expires_at=2500.0), limits=limits, now=1000.0)
    assert await refused(store, record("a3", "alice"), limits, now=1400.0) == "max_tasks_per_principal"
    assert await store.create(record("a3", "alice", expires_at=3000.0), limits=limits, now=1600.0)
    # "old" expired: its room was taken back (deleted, or no longer counted until the next purge).
    assert await store.get("new") is not None  # finished but readable: kept, and still counted
    assert await store.create(record("b1", "bob", expires_at=3000.0), limits=limits, now=1600.0)
    assert await refused(store, record("b2", "bob"), limits, now=1600.0) == "max_tasks"


async def test_a_growing_replace_is_bounded_when_asked_and_a_refusal_writes_nothing(store: TaskStore) -> None:
    size = len(record("x", "alice").encoded())
    limits = TaskLimits(max_live_per_principal=None, max_bytes_per_principal=2 * size + 500)
    assert await store.create(record("a1", "alice"), limits=limits, now=1000.0)
    assert await store.create(record("a2", "alice"), limits=limits, now=1000.0)
    grown = await store.get("a1")
    assert grown is not None
    grown.status, grown.result = "completed", {"content": [{"type": "text", "text": "x" * 1000}]}
    with pytest.raises(TaskStoreFull) as full:
        await store.replace(grown, limits=limits, now=1000.0)
    assert full.value.bound == "max_bytes_per_principal"
    assert grown.version == 0
    stored = await store.get("a1")
    assert stored is not None and stored.status == "working" and stored.version == 0
    grown.result = {"content": [{"type": "text", "text": "x" * 100}]}
    assert await store.replace(grown, limits=limits, now=1000.0)  # it fits
    assert await store.replace(grown)  # without limits, nothing is checked (a short error, a cancel)
    other = await store.get("a2")
    assert other is not None
    other.status_message = "y" * 2000
    assert await store.replace(other)
    assert await refused(store, record("a3", "alice"), limits) == "max_bytes_per_principal"


async def test_purged_and_rewritten_records_give_their_bytes_back(store: TaskStore) -> None:
    size = len(record("x", "alice").encoded())
    limits = TaskLimits(
        max_live_per_principal=None, max_bytes_per_principal=2 * size + 10, max_bytes=2 * size + 10
    )
    big = record("a1", "alice", expires_at=1500.0)
    big.arguments = {"blob": "z" * size}
    assert await store.create(big, limits=TaskLimits(), now=1000.0)
    assert await refused(store, record("a2", "alice"), limits) == "max_bytes_per_principal"
    shrunk = await store.get("a1")
    assert shrunk is not None
    shrunk.arguments = {"n": 1}
    assert await store.replace(shrunk)
    assert await store.create(record("a2", "alice"), limits=limits, now=1000.0)
    assert await store.purge(1600.0) == 1
    assert await store.create(record("a3", "alice"), limits=limits, now=1600.0)
    assert await refused(store, record("a4", "alice"), limits, now=1600.0) == "max_bytes_per_principal"


async def test_purge_deletes_only_what_expired(store: TaskStore) -> None:
    await store.create(record("old", expires_at=1500.0), limits=OPEN, now=1000.0)
    await store.create(record("new", expires_at=2500.0), limits=OPEN, now=1000.0)
    assert await store.purge(2000.0) == 1
    assert await store.get("old") is None
    assert await store.get("new") is not None


async def test_sqlite_keeps_records_across_a_reopen_and_between_handles(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first = SqliteTaskStore(path)
    await first.create(record(), limits=OPEN, now=1000.0)
    other = SqliteTaskStore(path)  # another worker on the same host
    got = await other.get("t1")
    assert got is not None
    got.status = "input_required"
    assert await other.replace(got)
    stale = await first.get("t1")
    assert stale is not None and stale.status == "input_required" and stale.version == 1
    first.close()
    other.close()
    reopened = SqliteTaskStore(path)  # the server restarted
    kept = await reopened.get("t1")
    assert kept is not None and kept.status == "input_required" and kept.arguments == {"n": 1}
    reopened.close()


OLD_RECORD = (
    '{"task_id":"t1","principal":null,"tool":"slow","arguments":{"n":1},'
    '"client":{"protocolVersion":"2026-07-28","capabilities":{},"info":null},'
    '"created_at":1000.0,"updated_at":1000.0,"expires_at":2000.0,"poll_interval_ms":100,'
    '"status":"input_required","status_message":"Waiting","result":null,"error":null,"state":null,'
    '"pending":{},"answers":{},"issued":[],"owner":null,"lease_until":null,"cancel_requested":false,'
    '"version":0}'
)
"""A record as the code before `meta`, `trace` and `rounds` wrote it (mcp-resolve at commit 500ec2f)."""


async def write_raw(store: TaskStore, task_id: str, data: str) -> None:
    """Put `data` as the stored JSON of an existing record, behind the store's back (an older writer's)."""
    if isinstance(store, MemoryTaskStore):
        store._records[task_id] = (*store._records[task_id][:4], data.encode())
    elif isinstance(store, SqliteTaskStore):
        with sqlite3.connect(store.path) as conn:
            conn.execute("UPDATE mcp_resolve_tasks SET data = ? WHERE task_id = ?", (data, task_id))
    else:
        from mcp_resolve.stores._redis.tasks import RedisTaskStore

        assert isinstance(store, RedisTaskStore)
        key = store._keys(task_id, None)[0]
        await store.redis.call("test", lambda r: r.hset(key, "json", data))


async def test_a_record_written_before_meta_was_kept_still_loads(store: TaskStore) -> None:
    await store.create(record(), limits=OPEN, now=1000.0)
    await write_raw(store, "t1", OLD_RECORD)
    old = await store.get("t1")
    assert old is not None
    assert (old.status, old.status_message, old.arguments) == ("input_required", "Waiting", {"n": 1})
    assert old.meta == {} and old.trace is None and old.rounds == 0  # unknown, never a guess
    assert old.round_meta() == {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    old.status = "working"
    assert await store.replace(old)  # and is written back in the new shape
    again = await store.get("t1")
    assert again is not None and again.status == "working" and again.meta == {}


def test_sqlite_needs_a_file() -> None:
    with pytest.raises(ValueError, match="file path"):
        SqliteTaskStore(":memory:")
