"""Replay claims are bounded in count (issue 35): a full store refuses a NEW claim and never evicts one.

Each single-use round holds one claim until its state expires (plus a
minute). A store at `max_claims` first drops what has expired, then refuses
the new round (-32603 "replay store full", logged and counted), so the tool
does not run; a claim already made is never dropped to make room, since
that would make its token redeemable again (a second refund). Memory, SQLite
(two stores on one file, and a file written before the count existed) and
Redis (a real redis-server, two workers) all follow the same rule.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from mcp_resolve.errors import MCPError
from mcp_resolve.replay import PURGE_GRACE, MemoryReplayStore, ReplayStoreFull, SqliteReplayStore
from mcp_resolve.stores._redis.connection import RedisConnection
from mcp_resolve.stores._redis.replay import RedisReplayStore
from mcp_resolve.telemetry import instrument
from redis_helpers import RedisServer
from servers.state_server import build_refund_desk
from servers.state_wire import FROZEN
from single_use_helpers import REFUND, Desk, next_round, refunds, rounds_to_final

pytestmark = pytest.mark.anyio

NOW = 1_000_000.0
FULL = "replay store full"


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_full_memory_store_refuses_new_claims_and_keeps_every_old_one() -> None:
    clock = Clock()
    store = MemoryReplayStore(clock=clock, max_claims=3)
    assert [await store.claim(f"s{i}", NOW + 10 * (i + 1)) for i in range(3)] == [True] * 3
    with pytest.raises(ReplayStoreFull) as full:
        await store.claim("s3", NOW + 100)
    assert full.value.code == -32603 and FULL in full.value.message and full.value.limit == 3
    assert isinstance(full.value, MCPError)
    assert len(store) == 3
    # Full, yet every claim made still answers: a replay is refused, never let through.
    assert [await store.claim(f"s{i}", NOW + 100) for i in range(3)] == [False] * 3
    assert (await store.claim_round("s0", NOW + 10, "caller")).status == "running"  # never run again
    # s0 expires (plus the grace): its place is free again, and only its.
    clock.now = NOW + 10 + PURGE_GRACE
    assert await store.claim("s3", NOW + 100) is True
    with pytest.raises(ReplayStoreFull):
        await store.claim("s4", NOW + 100)
    assert await store.claim("s1", NOW + 100) is False
    assert await MemoryReplayStore(max_claims=None).claim("x", NOW) is True
    with pytest.raises(ValueError):
        MemoryReplayStore(max_claims=0)


async def test_sqlite_stores_on_one_file_share_the_count_and_an_older_file_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "replay.db"
    with sqlite3.connect(path) as old:  # a file written before claims were counted: two claims in it
        old.execute(
            "CREATE TABLE mcp_resolve_replay (state_id TEXT PRIMARY KEY NOT NULL, expires_at REAL NOT NULL)"
            " WITHOUT ROWID"
        )
        old.executemany(
            "INSERT INTO mcp_resolve_replay VALUES (?, ?)", [("old-1", NOW + 10), ("old-2", NOW + 500)]
        )
    clock = Clock()
    one = SqliteReplayStore(path, clock=clock, max_claims=4)
    two = SqliteReplayStore(path, clock=clock, max_claims=4)
    try:
        assert await one.claim("a", NOW + 500) is True
        assert await two.claim("b", NOW + 500) is True
        with pytest.raises(ReplayStoreFull):
            await one.claim("c", NOW + 500)
        with pytest.raises(ReplayStoreFull):
            await two.claim("c", NOW + 500)
        assert await two.claim("old-1", NOW + 10) is False  # full, and a replay is still a replay
        assert await one.claim("a", NOW + 500) is False
        clock.now = NOW + 10 + PURGE_GRACE  # old-1 expires: one place, purged before refusing
        assert await two.claim("c", NOW + 500) is True
        with pytest.raises(ReplayStoreFull):
            await one.claim("d", NOW + 500)
        with sqlite3.connect(path) as conn:
            rows = {row[0] for row in conn.execute("SELECT state_id FROM mcp_resolve_replay")}
            (counted,) = conn.execute("SELECT claims FROM mcp_resolve_replay_count").fetchone()
        assert rows == {"old-2", "a", "b", "c"} and counted == 4
    finally:
        one.close()
        two.close()


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.slow
async def test_redis_claims_are_counted_in_their_namespace_across_workers(redis: RedisServer) -> None:
    redis.flush()
    connections = [RedisConnection(redis.url, prefix=p) for p in ("ns-a", "ns-a", "ns-b")]
    one, two, other = (RedisReplayStore(c, max_claims=3) for c in connections)
    try:
        now = time.time()
        short = now - PURGE_GRACE + 0.5  # kept for the shortest time a claim is kept: one second
        assert await one.claim("short", short) is True
        assert await two.claim("a", now + 600) is True
        assert (await one.claim_round("b", now + 600, "caller")).status == "won"
        with pytest.raises(ReplayStoreFull):
            await two.claim("c", now + 600)
        with pytest.raises(ReplayStoreFull):
            await one.claim_round("c", now + 600, "caller")
        assert await two.claim("a", now + 600) is False  # full: replays are still refused
        assert (await two.claim_round("b", now + 600, "other")).status == "running"
        assert await other.claim("c", now + 600) is True  # another namespace counts its own
        await anyio.sleep(1.2)  # "short" expires: its place is free, the others keep theirs
        assert await two.claim("c", now + 600) is True
        with pytest.raises(ReplayStoreFull):
            await one.claim("d", now + 600)
        assert await one.claim("c", now + 600) is False
        index = await connections[0].client().zcard(one._index)
        assert index == 3
    finally:
        for connection in connections:
            await connection.aclose()


async def test_a_full_store_refuses_a_single_use_round_without_running_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events = tmp_path / "events"
    server = build_refund_desk({"STATE_SERVER_EVENTS": str(events)})
    server.replay_store = MemoryReplayStore(max_claims=2)  # rounds 2 and 3 of one refund claim a state each
    reader = InMemoryMetricReader()
    instrument(server, meter_provider=MeterProvider(metric_readers=[reader]))
    desk = Desk(server)
    _, final = await rounds_to_final(desk)
    assert "result" in await desk.send(final) and refunds(events) == 1
    round2 = next_round(await desk.result(REFUND), {"full": True})  # a new refund: its first claim
    with caplog.at_level(logging.WARNING):
        refused = await desk.send(round2)
    assert refused["error"]["code"] == -32603 and FULL in refused["error"]["message"], refused
    assert refunds(events) == 1
    assert any("the replay store holds 2 claims" in r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records)
    assert (await desk.send(final))["error"] == FROZEN  # the spent state: still refused, never evicted
    assert refunds(events) == 1
    reasons = _points(reader, "mcp_resolve.request_state.rejections")
    assert reasons == {"store_full": 1, "replayed": 1}


def _points(reader: InMemoryMetricReader, name: str) -> dict[str, int]:
    data = reader.get_metrics_data()
    found: dict[str, int] = {}
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        found[str(point.attributes["mcp_resolve.rejection.reason"])] = point.value
    return found
