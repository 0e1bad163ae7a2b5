"""Replay stores: the server-side memory that makes a `requestState` single-use.

Sealing bounds *where* and *how long* a token is valid, but a token is still
just bytes a client can send twice. For tools that must run at most once (a
refund) the spec requires the server to enforce it itself; these stores
record consumed state ids until the tokens would have expired anyway, so
their size is bounded by traffic within one TTL.

A store that raises must be treated by its caller as "not claimed": never
run a single-use call when the claim could not be recorded.
"""

from __future__ import annotations

import heapq
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import anyio.to_thread

from .stores.sqlite_file import SqliteFile

__all__ = ["MemoryReplayStore", "ReplayStore", "SqliteReplayStore"]

PURGE_GRACE = 60.0
"""Keep ids this long past expiry, so a wall clock stepping back cannot revive a token."""


@runtime_checkable
class ReplayStore(Protocol):
    """Records state ids; the first claim of an id wins, atomically."""

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """True for the first claim of `state_id`, False for every later one."""
        ...


def _check_claim(state_id: object, expires_at: object) -> float:
    if not isinstance(state_id, str) or not state_id:
        raise ValueError("state_id must be a non-empty str")
    if isinstance(expires_at, bool) or not isinstance(expires_at, (int, float)):
        raise TypeError("expires_at must be a number of epoch seconds")
    if not math.isfinite(expires_at):
        raise ValueError("expires_at must be finite")
    return float(expires_at)


class MemoryReplayStore:
    """In-process store: right for one process, forgets everything on restart.

    Guarded by a thread lock as well as being await-free, so a claim stays
    atomic even when handlers run in worker threads.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._claimed: dict[str, float] = {}
        self._expiries: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._claimed)

    async def claim(self, state_id: str, expires_at: float) -> bool:
        expiry = _check_claim(state_id, expires_at)
        with self._lock:
            self._purge(float(self._clock()))
            if state_id in self._claimed:
                return False
            self._claimed[state_id] = expiry
            heapq.heappush(self._expiries, (expiry, state_id))
            return True

    def _purge(self, now: float) -> None:
        # A heap makes purging proportional to what actually expired, not to the store size.
        while self._expiries and self._expiries[0][0] + PURGE_GRACE <= now:
            _, state_id = heapq.heappop(self._expiries)
            self._claimed.pop(state_id, None)


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS mcp_resolve_replay ("
    " state_id TEXT PRIMARY KEY NOT NULL,"
    " expires_at REAL NOT NULL"
    ") WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mcp_resolve_replay_expiry ON mcp_resolve_replay (expires_at)",
)


class SqliteReplayStore:
    """A file-backed store that survives restarts and is shared by the workers of one host.

    SQLite's own write lock makes `INSERT OR IGNORE` the atomic test-and-set;
    WAL lets readers and the other workers proceed while one writes, and the
    busy timeout makes contention a short wait rather than an error.
    `synchronous=FULL` because losing a committed claim to a power cut would
    let a one-time action run twice. Not for network file systems, whose
    locking SQLite cannot trust: use a networked store there.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        purge_interval: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._path = os.fspath(path)
        if self._path == ":memory:" or not self._path:
            raise ValueError("SqliteReplayStore needs a file path; use MemoryReplayStore for in-memory")
        if busy_timeout <= 0 or purge_interval <= 0:
            raise ValueError("busy_timeout and purge_interval must be positive")
        self._busy_timeout = float(busy_timeout)
        self._purge_interval = float(purge_interval)
        self._clock = clock
        self._file = SqliteFile(self._path, busy_timeout=self._busy_timeout, schema=_SCHEMA)
        self._next_purge = -math.inf

    @property
    def path(self) -> str:
        return self._path

    async def claim(self, state_id: str, expires_at: float) -> bool:
        expiry = _check_claim(state_id, expires_at)
        # Not abandoned on cancellation: the insert either lands or not, and a
        # claim recorded for a cancelled call only fails closed.
        return await anyio.to_thread.run_sync(self._claim_sync, state_id, expiry)

    def close(self) -> None:
        self._file.close()

    def _claim_sync(self, state_id: str, expires_at: float) -> bool:
        with self._file.lock:
            conn = self._file.connection()
            now = float(self._clock())
            if now >= self._next_purge:
                conn.execute("DELETE FROM mcp_resolve_replay WHERE expires_at <= ?", (now - PURGE_GRACE,))
                self._next_purge = now + self._purge_interval
            cursor = conn.execute(
                "INSERT OR IGNORE INTO mcp_resolve_replay (state_id, expires_at) VALUES (?, ?)",
                (state_id, expires_at),
            )
            return cursor.rowcount == 1
