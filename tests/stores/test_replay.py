"""Replay stores: a state id is claimed once, across tasks, instances and restarts."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from mcp_resolve.replay import PURGE_GRACE, MemoryReplayStore, ReplayStore, SqliteReplayStore

pytestmark = pytest.mark.anyio

NOW = 1_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_memory_claim_once() -> None:
    store = MemoryReplayStore(clock=Clock())
    assert isinstance(store, ReplayStore)
    assert await store.claim("s1", NOW + 600) is True
    assert await store.claim("s1", NOW + 600) is False
    assert await store.claim("s2", NOW + 600) is True


async def test_memory_concurrent_claims_single_winner() -> None:
    store = MemoryReplayStore(clock=Clock())
    results: list[bool] = []

    async def claim() -> None:
        results.append(await store.claim("same", NOW + 600))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(claim)
    assert results.count(True) == 1 and len(results) == 50


async def test_memory_threads_single_winner() -> None:
    store = MemoryReplayStore(clock=Clock())
    results: list[bool] = []
    lock = threading.Lock()

    def claim() -> None:
        won = anyio.from_thread.run(store.claim, "same", NOW + 600)
        with lock:
            results.append(won)

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(anyio.to_thread.run_sync, claim)
    assert results.count(True) == 1


async def test_memory_purges_after_expiry_and_grace() -> None:
    clock = Clock()
    store = MemoryReplayStore(clock=clock)
    await store.claim("short", NOW + 10)
    await store.claim("long", NOW + 1000)
    clock.now = NOW + 10 + PURGE_GRACE - 1
    assert await store.claim("short", NOW + 10) is False  # still remembered within the grace
    clock.now = NOW + 10 + PURGE_GRACE
    await store.claim("other", NOW + 1000)
    assert len(store) == 2  # "short" purged, "long" and "other" kept
    assert await store.claim("long", NOW + 1000) is False


@pytest.mark.parametrize("state_id", ["", None, 5])
async def test_bad_state_id_refused(state_id: object, tmp_path: Path) -> None:
    for store in (MemoryReplayStore(), SqliteReplayStore(tmp_path / "r.db")):
        with pytest.raises(ValueError):
            await store.claim(state_id, NOW)  # type: ignore[arg-type]


async def test_bad_expiry_refused(tmp_path: Path) -> None:
    store = SqliteReplayStore(tmp_path / "r.db")
    with pytest.raises(ValueError):
        await store.claim("s", float("nan"))
    with pytest.raises(TypeError):
        await store.claim("s", "soon")  # type: ignore[arg-type]


async def test_sqlite_claim_once(tmp_path: Path) -> None:
    store = SqliteReplayStore(tmp_path / "replay.db", clock=Clock())
    assert isinstance(store, ReplayStore)
    assert await store.claim("s1", NOW + 600) is True
    assert await store.claim("s1", NOW + 600) is False
    assert await store.claim("s2", NOW + 600) is True
    store.close()


async def test_sqlite_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "replay.db"
    first = SqliteReplayStore(path, clock=Clock())
    assert await first.claim("refund-1", NOW + 600) is True
    first.close()
    restarted = SqliteReplayStore(str(path), clock=Clock())
    assert await restarted.claim("refund-1", NOW + 600) is False
    assert await restarted.claim("refund-2", NOW + 600) is True
    restarted.close()


async def test_sqlite_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "replay.db"
    store = SqliteReplayStore(path)
    await store.claim("s", NOW + 600)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


async def test_sqlite_two_stores_one_file_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    stores = [SqliteReplayStore(path, clock=Clock()), SqliteReplayStore(path, clock=Clock())]
    wins: dict[str, int] = {}

    async def claim(store: SqliteReplayStore, state_id: str) -> None:
        if await store.claim(state_id, NOW + 600):
            wins[state_id] = wins.get(state_id, 0) + 1

    ids = [f"state-{n}" for n in range(40)]
    async with anyio.create_task_group() as tg:
        for state_id in ids:
            for store in stores:
                for _ in range(2):
                    tg.start_soon(claim, store, state_id)
    assert wins == dict.fromkeys(ids, 1)
    for store in stores:
        store.close()


async def test_sqlite_purges_expired_rows(tmp_path: Path) -> None:
    path = tmp_path / "replay.db"
    clock = Clock()
    store = SqliteReplayStore(path, clock=clock, purge_interval=1.0)
    await store.claim("old", NOW + 10)
    await store.claim("young", NOW + 1000)
    clock.now = NOW + 10 + PURGE_GRACE + 1
    await store.claim("new", NOW + 2000)
    with sqlite3.connect(path) as conn:
        rows = {row[0] for row in conn.execute("SELECT state_id FROM mcp_resolve_replay")}
    assert rows == {"young", "new"}
    assert await store.claim("young", NOW + 1000) is False
    store.close()


def test_sqlite_refuses_memory_path() -> None:
    with pytest.raises(ValueError, match="MemoryReplayStore"):
        SqliteReplayStore(":memory:")


async def test_sqlite_reopens_after_close(tmp_path: Path) -> None:
    store = SqliteReplayStore(tmp_path / "replay.db", clock=Clock())
    assert await store.claim("a", NOW + 600) is True
    store.close()
    assert await store.claim("a", NOW + 600) is False
    store.close()


WORKER = """
import sys, anyio
from mcp_resolve.replay import SqliteReplayStore

async def main() -> None:
    store = SqliteReplayStore(sys.argv[1])
    for n in range(int(sys.argv[2])):
        if await store.claim(f"state-{n}", 4e9):
            print(n)
    store.close()

anyio.run(main)
"""


@pytest.mark.slow
def test_sqlite_worker_processes_share_one_file(tmp_path: Path) -> None:
    path, count = tmp_path / "workers.db", 150
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(count)], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(4)
    ]
    won: list[int] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=120)
        assert worker.returncode == 0
        won.extend(int(line) for line in out.split())
    assert sorted(won) == list(range(count))
