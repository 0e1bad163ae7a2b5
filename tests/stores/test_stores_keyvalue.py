"""The three key-value stores behave the same: memory, a real SQLite file, a real redis-server.

Each test runs against every store. "Two workers" are two store objects over
one backend (two SQLite connections to one file, two Redis connections), as
two processes would have; the memory store is one process, so both are it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_resolve.stores import (
    KeyValueStore,
    KeyValueStoreFull,
    MemoryKeyValueStore,
    RedisConnection,
    RedisKeyValueStore,
    SqliteKeyValueStore,
    StoreUnavailable,
)
from redis_helpers import RedisServer

pytestmark = pytest.mark.anyio

Make = Callable[..., KeyValueStore]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.slow)],
)
async def make(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Make]:
    """Makes a store (with bounds given as keywords); each call after the first is another worker on
    the same backend, except for memory, where every call gives the same store."""
    kind = request.param
    made: list[Any] = []
    memory: dict[str, MemoryKeyValueStore] = {}

    def make(**bounds: Any) -> KeyValueStore:
        if kind == "memory":
            if "one" not in memory:
                memory["one"] = MemoryKeyValueStore(**bounds)
            return memory["one"]
        if kind == "sqlite":
            store: Any = SqliteKeyValueStore(tmp_path / "kv.db", **bounds)
        else:
            connection = RedisConnection(redis.url)
            store = RedisKeyValueStore(connection, **bounds)
        made.append(store)
        return store  # type: ignore[no-any-return]

    if kind == "redis":
        redis: RedisServer = request.getfixturevalue("redis")
        redis.flush()
    try:
        yield make
    finally:
        for store in made:
            if isinstance(store, SqliteKeyValueStore):
                store.close()
            else:
                await store.redis.aclose()


async def test_put_get_overwrite_delete(make: Make) -> None:
    store = make()
    assert await store.get("a") is None
    assert await store.put("a", b"one", ttl=30) is True
    assert await store.get("a") == b"one"
    assert await store.put("a", b"two", ttl=30) is True
    assert await make().get("a") == b"two"  # another worker sees it
    await store.put("b", b"\x00\xff binary", ttl=30)
    await store.delete("a", "b", "never-there")
    assert await store.get("a") is None
    assert await store.get("b") is None
    await store.delete()


async def test_only_new_keeps_the_first_value(make: Make) -> None:
    one, two = make(), make()
    assert await one.put("k", b"first", ttl=30, only_new=True) is True
    assert await two.put("k", b"second", ttl=30, only_new=True) is False
    assert await two.get("k") == b"first"
    assert await two.put("k", b"third", ttl=30) is True  # a plain put overwrites
    assert await one.get("k") == b"third"


async def test_take_is_single_use(make: Make) -> None:
    store = make()
    await store.put("code", b"v", ttl=30)
    assert await store.take("code") == b"v"
    assert await store.take("code") is None
    assert await store.get("code") is None
    assert await store.take("nothing") is None


async def test_expired_entries_are_never_returned_and_free_their_key(make: Make) -> None:
    store = make()
    await store.put("short", b"x", ttl=1.0)  # a second: two SQLite commits on a loaded host fit in it
    await store.put("long", b"y", ttl=30)
    assert await store.get("short") == b"x"
    await asyncio.sleep(1.15)
    assert await store.get("short") is None
    assert await store.take("short") is None
    assert await store.get("long") == b"y"
    assert await store.put("short", b"again", ttl=30, only_new=True) is True
    assert await store.get("short") == b"again"


async def test_bounds_refuse_name_the_bound_and_write_nothing(make: Make) -> None:
    store = make(max_entries=3, max_bytes=200, max_value_bytes=100)
    for key in ("a", "b", "c"):
        await store.put(key, b"v", ttl=30)
    with pytest.raises(KeyValueStoreFull) as refused:
        await store.put("d", b"v", ttl=30)
    assert refused.value.bound == "max_entries"
    assert "max_entries" in str(refused.value)
    assert await store.get("d") is None
    assert await store.put("a", b"overwrite", ttl=30) is True  # an overwrite adds no entry
    with pytest.raises(KeyValueStoreFull) as refused:
        await store.put("a", b"x" * 101, ttl=30)
    assert refused.value.bound == "max_value_bytes"
    assert await store.get("a") == b"overwrite"
    await store.delete("b", "c")
    await store.put("b", b"x" * 99, ttl=30)  # 1 + 99 bytes
    with pytest.raises(KeyValueStoreFull) as refused:
        await store.put("c", b"x" * 95, ttl=30)  # 1 + 95 more: past 200 with "a"'s 10
    assert refused.value.bound == "max_bytes"
    assert await store.get("c") is None
    assert await store.take("b") == b"x" * 99  # a take gives its bytes back
    assert await store.put("c", b"x" * 95, ttl=30) is True


async def test_expired_entries_hold_no_room(make: Make) -> None:
    store = make(max_entries=2)
    await store.put("a", b"1", ttl=1.0)
    await store.put("b", b"2", ttl=1.0)
    with pytest.raises(KeyValueStoreFull):
        await store.put("c", b"3", ttl=30)
    await asyncio.sleep(1.15)
    assert await store.put("c", b"3", ttl=30) is True
    assert await store.put("d", b"4", ttl=30) is True


async def test_concurrent_takes_and_only_new_puts_have_one_winner(make: Make) -> None:
    workers = [make(), make()]
    for round_ in range(5):
        key = f"code-{round_}"
        await workers[0].put(key, b"secret", ttl=30)
        taken = await asyncio.gather(*(workers[i % 2].take(key) for i in range(20)))
        assert taken.count(b"secret") == 1
        assert taken.count(None) == 19
        wrote = await asyncio.gather(
            *(workers[i % 2].put(f"key-{round_}", b"%d" % i, ttl=30, only_new=True) for i in range(20))
        )
        assert wrote.count(True) == 1
        assert await workers[1].get(f"key-{round_}") == b"%d" % wrote.index(True)


async def test_bad_arguments_are_refused(make: Make) -> None:
    store = make()
    for ttl in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="ttl"):
            await store.put("a", b"v", ttl=ttl)
    with pytest.raises(ValueError, match="at most"):
        await store.put("k" * 257, b"v", ttl=30)
    with pytest.raises(ValueError):
        await store.put("", b"v", ttl=30)
    with pytest.raises(TypeError):
        await store.put("a", "text", ttl=30)  # type: ignore[arg-type]


def test_bounds_must_be_whole_positive_numbers(tmp_path: Path) -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError):
            MemoryKeyValueStore(max_entries=bad)
        with pytest.raises(ValueError):
            SqliteKeyValueStore(tmp_path / "x.db", max_bytes=bad)
    with pytest.raises(ValueError):
        SqliteKeyValueStore(":memory:")


async def test_sqlite_keeps_values_across_a_restart(tmp_path: Path) -> None:
    first = SqliteKeyValueStore(tmp_path / "kv.db", max_entries=2)
    await first.put("a", b"kept", ttl=30)
    await first.put("b", b"kept", ttl=30)
    first.close()
    second = SqliteKeyValueStore(tmp_path / "kv.db", max_entries=2)
    try:
        assert await second.get("a") == b"kept"
        with pytest.raises(KeyValueStoreFull):  # the counts came back with the file
            await second.put("c", b"v", ttl=30)
    finally:
        second.close()


async def _fails_closed(operation: Callable[[], Awaitable[object]]) -> None:
    with pytest.raises(StoreUnavailable) as failed:
        await asyncio.wait_for(operation(), 10)
    assert "key-value store unavailable" in str(failed.value)


@pytest.mark.slow
async def test_redis_down_fails_closed_and_recovers(redis: RedisServer) -> None:
    connection = RedisConnection(redis.url, connect_timeout=0.5, timeout=0.5)
    store = RedisKeyValueStore(connection)
    try:
        await store.put("a", b"v", ttl=30)
        redis.stop()
        try:
            await _fails_closed(lambda: store.put("b", b"v", ttl=30))
            await _fails_closed(lambda: store.put("b", b"v", ttl=30, only_new=True))
            await _fails_closed(lambda: store.get("a"))
            await _fails_closed(lambda: store.take("a"))
            await _fails_closed(lambda: store.delete("a"))
        finally:
            redis.start()
        assert await store.put("b", b"back", ttl=30) is True  # the next call tries again
        assert await store.get("b") == b"back"
    finally:
        await connection.aclose()


@pytest.mark.slow
async def test_redis_keys_are_digests_under_the_namespace_with_a_ttl(redis: RedisServer) -> None:
    redis.flush()
    connection = RedisConnection(redis.url, prefix="svc")
    store = RedisKeyValueStore(connection, name="proxy")
    try:
        hostile = ["a:b", "*", "svc:proxy:*", "\r\nFLUSHALL\r\n", "{tag}", "é" * 100]
        for key in hostile:
            await store.put(key, b"v", ttl=30)
        names = sorted(k.decode() for k in await connection.client().keys("*"))
        values = [n for n in names if not n.startswith("svc:proxy-index:")]
        assert len(values) == len(hostile)
        assert all(n.startswith("svc:proxy:") and len(n) == len("svc:proxy:") + 64 for n in values)
        ttl = await connection.client().pttl(values[0])
        assert 0 < ttl <= 30_000
        for key in hostile:
            assert await store.take(key) == b"v"
        remaining = sorted(k.decode() for k in await connection.client().keys("*"))
        assert remaining == []  # no value, and no count or size left behind
    finally:
        await connection.aclose()
