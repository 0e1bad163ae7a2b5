"""The Redis stores against a real redis-server: claims, events, the bus, sessions, and failing closed.

Two "workers" are two `RedisConnection`s (two clients, two pools), as two
processes would have. Hostile input: ids that try to shape keys (colons,
globs, CRLF, other prefixes) only ever reach Redis as digests or checked
tokens, and nothing a client sends lands outside the server's namespace.
"""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from conftest import initialize_request
from http_helpers import http_server
from mcp_resolve import Elicit, MCPServer, RequestStateSecurity, Resolve
from mcp_resolve.stores._redis.bus import RedisSubscriptionBus
from mcp_resolve.stores._redis.connection import RedisConnection, StoreUnavailable, redact, stop_tasks
from mcp_resolve.stores._redis.events import RedisEventStore
from mcp_resolve.stores._redis.replay import RedisReplayStore
from mcp_resolve.stores.bus import ResourceUpdated, ToolsListChanged
from mcp_resolve.stores.events import UnknownEvent
from mcp_resolve.stores.sessions import RedisSessionStore
from redis_helpers import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOSTILE = ["a:b", "*", "mcp-resolve:x:replay:*", "\r\nFLUSHALL\r\n", "é" * 50, "x" * 10_000, "{tag}", " "]


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


Connect = Callable[[], RedisConnection]


@pytest.fixture
async def connect(redis: RedisServer) -> AsyncIterator[Connect]:
    """Makes a worker's connection to `redis`; each is closed on the test's loop when the test ends."""
    made: list[RedisConnection] = []

    def make() -> RedisConnection:
        made.append(RedisConnection(redis.url))
        return made[-1]

    try:
        yield make
    finally:
        for connection in made:
            await connection.aclose()


async def keys(connection: RedisConnection) -> list[str]:
    return sorted(k.decode() for k in await connection.client().keys("*"))


async def test_claims_are_atomic_across_workers_expire_and_shape_no_key(
    redis: RedisServer, connect: Connect
) -> None:
    redis.flush()
    one, two = RedisReplayStore(connect()), RedisReplayStore(connect())
    expires = time.time() + 30
    results = await asyncio.gather(*(store.claim("state-1", expires) for store in [one, two] * 25))
    assert results.count(True) == 1
    for hostile in HOSTILE:
        assert await one.claim(hostile, expires) and not await two.claim(hostile, expires)
    found = [k for k in await keys(one.redis) if k != one._index]  # and one index, counting them
    assert all(k.startswith("mcp-resolve:replay:") and len(k.split(":")[-1]) == 64 for k in found), found
    assert await one.redis.client().zcard(one._index) == len(found) == 1 + len(HOSTILE)
    ttl = await one.redis.client().pttl(found[0])
    assert 60_000 < ttl <= 91_000  # the token's expiry plus the grace, and no longer


async def test_a_claim_while_redis_is_down_fails_closed_and_a_call_is_refused_then_recovers(
    redis: RedisServer,
) -> None:
    redis.flush()
    mcp = MCPServer(
        "claims",
        request_state_security=RequestStateSecurity(keys=["claims-key-" + "c" * 40]),
        redis_url=redis.url,
    )

    async def ask() -> Elicit[Any]:
        from pydantic import BaseModel

        class Ok(BaseModel):
            ok: bool

        return Elicit("Sure?", Ok)

    runs: list[int] = []

    @mcp.tool(single_use=True)
    async def once(answer: Any = Resolve(ask)) -> str:  # type: ignore[assignment]
        runs.append(1)
        return "ran"

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "once"}

    def body(extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "once", "arguments": {}, "_meta": meta, **extra},
        }

    async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        first = (await http.post(f"{base}/mcp", json=body({}), headers=headers)).json()["result"]
        (key,) = first["inputRequests"]
        retry = body(
            {
                "requestState": first["requestState"],
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            }
        )
        redis.stop()
        try:
            down = (await http.post(f"{base}/mcp", json=retry, headers=headers)).json()
            health = await http.get(f"{base}/health")
        finally:
            redis.start()
        assert down["error"] == {
            "code": -32603,
            "message": "replay store unavailable: the shared store did not answer; try again shortly",
        }
        assert health.status_code == 503 and runs == []
        back = (await http.post(f"{base}/mcp", json=retry, headers=headers)).json()
        again = (await http.post(f"{base}/mcp", json=retry, headers=headers)).json()
        with anyio.fail_after(10):  # the session channel's subscriber reconnects by itself, with backoff
            while (await http.get(f"{base}/health")).status_code != 200:
                await anyio.sleep(0.1)
    assert back["result"]["content"][0]["text"] == "ran" and runs == [1]
    assert again["error"]["message"] == "Invalid or expired requestState"


async def test_events_written_by_one_worker_are_read_by_another_and_a_dead_writer_is_noticed(
    redis: RedisServer, connect: Connect
) -> None:
    redis.flush()
    writer = RedisEventStore(connect(), heartbeat_ttl=0.3)
    reader = RedisEventStore(connect())
    stream = await writer.open_stream("session-a", 42)
    primed = await writer.append(stream, None)
    first = await writer.append(stream, {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
    later = asyncio.get_running_loop().call_later(
        0.2,
        asyncio.ensure_future,
        writer.append(stream, {"jsonrpc": "2.0", "id": 42, "result": {}}, final=True),
    )
    batch = await reader.read_after("session-a", first, wait=2)  # blocks until the answer is written
    later.cancel()
    assert [m for _, m in batch.events] == [{"jsonrpc": "2.0", "id": 42, "result": {}}] and batch.ended
    everything = await reader.read_after("session-a", primed, wait=0)
    assert len(everything.events) == 2 and everything.request_id == 42
    for hostile in [*HOSTILE, stream + ".0-0x", stream.upper() + ".1-0", stream, "." + first]:
        with pytest.raises(UnknownEvent):
            await reader.read_after("session-a", hostile, wait=0)
    with pytest.raises(UnknownEvent):
        await reader.read_after("session-b", first, wait=0)  # another session's stream
    quiet = await writer.open_stream("session-a", 44)
    started = time.monotonic()
    nothing = await reader.read_after("session-a", await writer.append(quiet, None), wait=30)
    # A long wait is served in reads shorter than the socket timeout: no error, the writer is alive.
    assert time.monotonic() - started < 10 and not nothing.events and not nothing.orphaned  # not the 30 s
    orphan = await writer.open_stream("session-a", 43)
    mark = await writer.append(orphan, None)
    assert writer._beating is not None
    await stop_tasks([writer._beating])  # as `aclose` stops it: a lost cancellation is sent again
    await anyio.sleep(0.5)  # its heartbeat lapses: the worker is gone
    lost = await reader.read_after("session-a", mark, wait=0.1)
    assert lost.orphaned and not lost.ended and lost.request_id == 43
    assert all(k.startswith("mcp-resolve:") for k in await keys(reader.redis))


async def test_the_bus_reaches_other_workers_once_and_drops_garbage(
    redis: RedisServer, connect: Connect
) -> None:
    redis.flush()
    a, b = RedisSubscriptionBus(connect()), RedisSubscriptionBus(connect())
    heard_a: list[Any] = []
    heard_b: list[Any] = []
    a.subscribe(heard_a.append)
    b.subscribe(heard_b.append)
    await a.start()
    await b.start()
    await a.publish(ToolsListChanged())
    await a.publish(ResourceUpdated("note://a"))
    for garbage in [
        b"not json",
        b"[]",
        b'{"o":"x","m":"notifications/resources/updated","p":{"uri":5}}',
        b'{"m":"tools/call"}',
    ]:
        await a.redis.client().publish(a.channel, garbage)
    with anyio.fail_after(5):
        while len(heard_b) < 2:
            await anyio.sleep(0.01)
    await anyio.sleep(0.2)
    assert (
        heard_a == heard_b == [ToolsListChanged(), ResourceUpdated("note://a")]
    )  # once each, garbage dropped


async def test_sessions_are_records_under_digests_that_expire(redis: RedisServer, connect: Connect) -> None:
    redis.flush()
    store = RedisSessionStore(connect())
    await store.save("session-one", {"version": "2025-11-25", "principal": None}, ttl=60)
    assert await store.load("session-one", ttl=60) == {"version": "2025-11-25", "principal": None}
    for hostile in HOSTILE:
        assert await store.load(hostile, ttl=60) is None
    await store.save("short", {"version": "x"}, ttl=1)
    await anyio.sleep(1.2)
    assert await store.load("short", ttl=1) is None
    await store.delete("session-one")
    assert await store.load("session-one", ttl=60) is None


async def test_a_dead_redis_is_store_unavailable_everywhere_and_urls_are_never_logged_with_passwords(
    caplog: pytest.LogCaptureFixture,
) -> None:
    connection = RedisConnection("redis://user:s3cret-password@127.0.0.1:1/0")
    assert redact("redis://user:s3cret-password@host:6379/0?password=x") == "redis://user:***@host:6379/0"
    assert "s3cret" not in repr(connection) and "s3cret" not in repr(RedisReplayStore(connection))
    with pytest.raises(StoreUnavailable, match="replay store unavailable"):
        await RedisReplayStore(connection).claim("x", time.time() + 5)
    with pytest.raises(StoreUnavailable, match="event store unavailable"):
        await RedisEventStore(connection).open_stream("s", 1)
    with pytest.raises(StoreUnavailable, match="session store unavailable"):
        await RedisSessionStore(connection).load("s", None)
    with pytest.raises(StoreUnavailable, match="subscription bus unavailable"):
        await RedisSubscriptionBus(connection).publish(ToolsListChanged())
    assert "s3cret" not in caplog.text
    with pytest.raises(ValueError, match="redis://"):
        RedisConnection("http://user:pw@example.com")


async def test_a_server_closes_its_redis_sockets_when_its_lifespan_ends(redis: RedisServer) -> None:
    """Served by uvicorn on a loop of its own: at shutdown the pool and the subscriber close with that loop.

    Left open, each pooled socket is found by the garbage collector after the
    loop is gone (a ResourceWarning per socket, transport and connection).
    """
    redis.flush()
    mcp = MCPServer(
        "closing",
        redis_url=redis.url,
        request_state_security=RequestStateSecurity(keys=["closing-" + "k" * 40]),
    )
    gc.collect()  # what earlier tests left behind is not this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
            headers = {"Accept": "application/json, text/event-stream"}
            opened = await http.post(f"{base}/mcp", json=initialize_request({}), headers=headers)
            assert opened.status_code == 200 and opened.headers["mcp-session-id"]  # a session record in Redis
            with anyio.fail_after(10):  # the session channel's subscriber is up
                while (await http.get(f"{base}/health")).status_code != 200:
                    await anyio.sleep(0.05)
            assert any(k.startswith(b"mcp-resolve:closing:session:") for k in await _raw_keys(redis))
        gc.collect()
    leaked = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaked == []


async def test_closing_a_connection_stops_the_heartbeat_that_would_open_it_again(
    redis: RedisServer, connect: Connect
) -> None:
    connection = connect()
    writer = RedisEventStore(connection, heartbeat_ttl=0.3)
    await writer.append(await writer.open_stream("session-a", 1), None)
    beating = writer._beating
    assert beating is not None and not beating.done()
    await connection.aclose()
    assert beating.cancelled()
    await anyio.sleep(0.3)  # three heartbeat periods: a beat would have made a new client
    assert connection._clients == {}
    await writer.append(await writer.open_stream("session-a", 2), None)  # still usable: it beats again
    assert writer._beating is not None and not writer._beating.done()


async def test_closing_stops_background_work_that_lost_its_cancellation(connect: Connect) -> None:
    # Python 3.11's `asyncio.wait_for` (redis-py writes each command through it) can return instead
    # of raising when a cancellation lands as the write completes: the heartbeat then beats on. A
    # close that awaited it once hung forever (a CI run's teardown did, here).
    connection = connect()
    beats: list[int] = []
    lost: list[bool] = []

    async def heartbeat() -> None:
        while True:
            try:
                await connection.call("test", lambda r: r.ping())
                beats.append(1)
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                if lost:
                    raise
                lost.append(True)  # the first cancellation is lost, as that wait_for loses it

    task = connection.background(heartbeat())
    while len(beats) < 2:
        await asyncio.sleep(0.01)
    with anyio.fail_after(4):
        await connection.aclose()
    assert lost and task.cancelled()
    assert connection._clients == {}


async def _raw_keys(redis: RedisServer) -> list[bytes]:
    import redis.asyncio as client

    connection = client.Redis.from_url(redis.url)
    try:
        return list(await connection.keys("*"))
    finally:
        await connection.aclose()
