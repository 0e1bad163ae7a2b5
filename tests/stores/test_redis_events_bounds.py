"""The Redis event store is bounded like the memory one (issue 35): streams, events, bytes, per namespace.

It used to cap events per stream (about 1,000) and expire streams after an
hour, with no bound on the number of streams or their bytes: only Redis's
`maxmemory` stopped it, and then every write failed, claims and tasks
included. Against a real redis-server, two workers (two connections) share
one store's bounds: past `max_streams` or `max_bytes` the least recently
written streams go first, a stream that alone passes `max_bytes` loses its
oldest events, a dropped stream is an unknown event id and takes no more
events (nor makes a key), expired streams give their room back, and another
namespace counts its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mcp_resolve.stores._redis.connection import RedisConnection
from mcp_resolve.stores._redis.events import RedisEventStore
from mcp_resolve.stores.events import UnknownEvent
from redis_helpers import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SESSION = "session-a"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def message(size: int) -> dict[str, Any]:
    """A notification whose JSON is exactly `size` bytes."""
    bare = {"jsonrpc": "2.0", "method": "n", "params": {"p": ""}}  # 48 bytes as compact JSON
    return {**bare, "params": {"p": "x" * (size - 48)}}


async def counted_bytes(store: RedisEventStore) -> int:
    """The bytes of every event actually in Redis under the store's namespace, counted from the streams."""
    client = store.redis.client()
    total = 0
    async for key in client.scan_iter(match=store.redis.key("events", "*")):
        for _, fields in await client.xrange(key):
            total += len(fields.get(b"m", b""))
    return total


async def alive(store: RedisEventStore, event_id: str) -> bool:
    try:
        await store.read_after(SESSION, event_id, wait=0)
    except UnknownEvent:
        return False
    return True


async def test_past_max_streams_the_least_recently_written_go_first_across_workers(
    redis: RedisServer,
) -> None:
    redis.flush()
    one_c, two_c = RedisConnection(redis.url, prefix="ev"), RedisConnection(redis.url, prefix="ev")
    one, two = RedisEventStore(one_c, max_streams=4), RedisEventStore(two_c, max_streams=4)
    try:
        firsts = []
        for index in range(4):
            store = one if index % 2 else two
            stream = await store.open_stream(SESSION, index)
            firsts.append((stream, await store.append(stream, message(100))))
        await one.append(firsts[0][0], message(100))  # the oldest is written again: now the newest
        for index in range(4, 6):
            stream = await two.open_stream(SESSION, index)
            firsts.append((stream, await two.append(stream, message(100))))
        kept = [await alive(one, event_id) for _, event_id in firsts]
        assert kept == [True, False, False, True, True, True], kept  # streams 1 and 2 dropped, 0 kept
        assert await one.held() == (4, await counted_bytes(one)) == (4, 5 * 100)
        dropped = firsts[1][0]
        late = await two.append(dropped, message(100), final=True)  # its request still runs
        assert late == f"{dropped}.0-0" and not await alive(one, late)
        assert not await one.redis.client().exists(*one._keys(dropped))  # no key made again
        assert await two.held() == (4, 500)
    finally:
        await one_c.aclose()
        await two_c.aclose()


async def test_past_max_bytes_old_streams_then_old_events_go_and_namespaces_are_apart(
    redis: RedisServer,
) -> None:
    redis.flush()
    conn, other_conn = RedisConnection(redis.url, prefix="ev"), RedisConnection(redis.url, prefix="other")
    store = RedisEventStore(conn, max_bytes=10_000, max_events=5)
    other = RedisEventStore(other_conn, max_bytes=10_000)
    try:
        streams = [await store.open_stream(SESSION, index) for index in range(3)]
        for stream in streams:
            for _ in range(3):
                await store.append(stream, message(1000))
        assert await store.held() == (3, 9000)
        for _ in range(7):  # max_events: the stream keeps its last five
            await store.append(streams[2], message(100))
        assert (
            await store.held() == (3, 6500)
            and len(await conn.client().xrange(store._keys(streams[2])[0])) == 5
        )
        big = await store.append(streams[1], message(6000))  # 15,500 bytes: stream 0, the oldest, goes
        assert await store.held() == (2, 9500) == (2, await counted_bytes(store))
        head = await store.open_stream(SESSION, 9)
        first = await store.append(head, message(9800))  # alone nearly all: every other stream goes
        assert await store.held() == (1, 9800)
        await store.append(head, message(5000))  # too much with its own first event: that one goes
        assert await store.held() == (1, 5000) == (1, await counted_bytes(store))
        batch = await store.read_after(SESSION, first, wait=0)
        assert [m for _, m in batch.events] == [message(5000)]
        assert not await alive(store, big)
        stranger = await other.open_stream(SESSION, 1)
        await other.append(stranger, message(9000))
        assert await other.held() == (1, 9000) and await store.held() == (1, 5000)  # each its own bounds
    finally:
        await conn.aclose()
        await other_conn.aclose()


async def test_expired_streams_give_their_room_back(redis: RedisServer) -> None:
    redis.flush()
    conn = RedisConnection(redis.url, prefix="ev")
    store = RedisEventStore(conn, ttl=1.0)
    try:
        stream = await store.open_stream(SESSION, 1)
        await store.append(stream, message(3000))
        assert await store.held() == (1, 3000)
        await anyio.sleep(1.2)
        fresh = await store.open_stream(SESSION, 2)
        await store.append(fresh, message(200))
        assert await store.held() == (1, 200)
        streams = await conn.client().zrange(store._index[0], 0, -1)
        assert streams == [fresh.encode()]
    finally:
        await conn.aclose()


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RedisEventStore("redis://127.0.0.1:1/0", max_bytes=0)
