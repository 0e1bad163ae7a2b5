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

pytestmark = pytest.mark.anyio


def record(task_id: str = "t1", principal: str | None = None, *, expires_at: float = 2000.0) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        principal=principal,
        tool="slow",
        arguments={"n": 1},
        client={"protocolVersion": "2026-07-28", "capabilities": {}, "info": None},
        created_at=1000.0,
        updated_at=1000.0,
        expires_at=expires_at,
        poll_interval_ms=100,
    )


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
    assert await store.create(original, max_live=None, now=1000.0)
    got = await store.get("t1")
    assert got == original
    assert got is not original
    got.status = "completed"
    assert (await store.get("t1")).status == "working"  # type: ignore[union-attr]
    assert await store.get("nope") is None


async def test_the_same_id_is_never_created_twice(store: TaskStore) -> None:
    assert await store.create(record(), max_live=None, now=1000.0)
    assert not await store.create(record(), max_live=None, now=1000.0)


async def test_replace_is_compare_and_set(store: TaskStore) -> None:
    await store.create(record(), max_live=None, now=1000.0)
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
    await store.create(record(), max_live=None, now=1000.0)

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


async def test_create_bounds_the_live_tasks_of_one_principal(store: TaskStore) -> None:
    assert await store.create(record("a1", "alice"), max_live=2, now=1000.0)
    assert await store.create(record("a2", "alice"), max_live=2, now=1000.0)
    assert not await store.create(record("a3", "alice"), max_live=2, now=1000.0)
    assert await store.create(record("b1", "bob"), max_live=2, now=1000.0)  # another caller's own bound
    assert await store.create(record("n1", None), max_live=1, now=1000.0)
    assert not await store.create(record("n2", None), max_live=1, now=1000.0)
    done = await store.get("a1")
    assert done is not None
    done.status = "completed"  # a finished task no longer counts
    assert await store.replace(done)
    assert await store.create(record("a3", "alice"), max_live=2, now=1000.0)
    # An expired task (not yet purged) no longer counts either.
    assert await store.create(record("a4", "alice", expires_at=1500.0), max_live=3, now=1000.0)
    assert not await store.create(record("a5", "alice"), max_live=3, now=1000.0)
    assert await store.create(record("a5", "alice"), max_live=3, now=1600.0)


async def test_purge_deletes_only_what_expired(store: TaskStore) -> None:
    await store.create(record("old", expires_at=1500.0), max_live=None, now=1000.0)
    await store.create(record("new", expires_at=2500.0), max_live=None, now=1000.0)
    assert await store.purge(2000.0) == 1
    assert await store.get("old") is None
    assert await store.get("new") is not None


async def test_sqlite_keeps_records_across_a_reopen_and_between_handles(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first = SqliteTaskStore(path)
    await first.create(record(), max_live=None, now=1000.0)
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
        store._records[task_id] = (*store._records[task_id][:4], data)
    elif isinstance(store, SqliteTaskStore):
        with sqlite3.connect(store.path) as conn:
            conn.execute("UPDATE mcp_resolve_tasks SET data = ? WHERE task_id = ?", (data, task_id))
    else:
        from mcp_resolve.stores.redis_tasks import RedisTaskStore

        assert isinstance(store, RedisTaskStore)
        key = store._keys(task_id, None)[0]
        await store.redis.call("test", lambda r: r.hset(key, "json", data))


async def test_a_record_written_before_meta_was_kept_still_loads(store: TaskStore) -> None:
    await store.create(record(), max_live=None, now=1000.0)
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
