"""Replay stores: the server-side memory that makes a `requestState` single-use.

Sealing bounds *where* and *how long* a token is valid, but a token is still
just bytes a client can send twice. For tools that must run at most once (a
refund) the spec requires the server to enforce it itself; these stores
record consumed state ids until the tokens would have expired anyway, so
their size is bounded by traffic within one TTL.

A store that raises must be treated by its caller as "not claimed": never
run a single-use call when the claim could not be recorded.

A store that also implements `RoundStore` makes a single-use round
exactly-once from the caller's side: each claim names its owner (a fresh
ticket) and the caller (a digest of state, principal and answers), the
round's answer is kept under the claim, and the same caller retrying after
a lost answer gets that answer back instead of a refusal. Kept answers are
bounded in bytes each and, in memory, in count and bytes overall; dropping
one only turns a retry's receipt into an error, never into a second run.

Claims themselves are bounded in count (`max_claims`, 200,000 by default):
expired ones are purged first, and a store still full refuses a NEW claim
(`ReplayStoreFull`, so the round fails closed with -32603 and runs
nothing). An unexpired claim is never evicted to make room: that would make
its token redeemable again.
"""

from __future__ import annotations

import heapq
import math
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import anyio.to_thread

from .errors import INTERNAL_ERROR, MCPError
from .stores._sqlite.file import SqliteFile

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "MemoryReplayStore",
    "ReplayStore",
    "ReplayStoreFull",
    "RoundClaim",
    "RoundStore",
    "SqliteReplayStore",
]

PURGE_GRACE = 60.0
"""Keep ids this long past expiry, so a wall clock stepping back cannot revive a token."""
MAX_OUTCOME_BYTES = 64 * 1024
"""The largest answer kept for a retry; a larger one is dropped (the retry is told the call ran)."""
RETRY_WAIT = 5.0
"""How long a retry waits for the first copy of its round, still running, to finish."""
MAX_CLAIMS = 200_000
"""The unexpired claims a store holds at most (in memory about 350 bytes each, so about 70 MB): room for
300 single-use rounds a second sustained over a claim's 660 s life. Past it new rounds are refused."""


class ReplayStoreFull(MCPError):
    """The store holds `limit` unexpired claims: a new single-use round is refused (-32603), nothing runs.

    Claims already made are unaffected (a retry still gets its kept answer, a
    replay is still refused); the store has room again as claims expire.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(
            INTERNAL_ERROR, "replay store full: this single-use call cannot be recorded now; try again later"
        )
        self.limit = limit


def _check_max_claims(max_claims: int | None) -> int | None:
    if max_claims is not None and (isinstance(max_claims, bool) or max_claims < 1):
        raise ValueError("max_claims must be a positive number of claims, or None for no bound")
    return max_claims


@runtime_checkable
class ReplayStore(Protocol):
    """Records state ids; the first claim of an id wins, atomically."""

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """True for the first claim of `state_id`, False for every later one."""
        ...


@dataclass(frozen=True)
class RoundClaim:
    """What claiming a single-use round found.

    - "won": this request claimed it and must run it, then `keep_outcome(..., ticket, ...)`.
    - "running": claimed by another request that has not finished (or gave up and is releasing it).
    - "done": the same caller's earlier copy finished; `outcome` is its answer, or None if not kept.
    - "replayed": claimed by someone else, or finished for another caller: refuse.
    """

    status: Literal["won", "running", "done", "replayed"]
    ticket: str = ""
    outcome: bytes | None = None


@runtime_checkable
class RoundStore(Protocol):
    """A replay store that keeps each single-use round's answer for the same caller's retry."""

    retry_wait: float

    async def claim_round(self, state_id: str, expires_at: float, caller: str | None) -> RoundClaim:
        """Claim `state_id` for `caller` (None: anonymous, nothing kept for a retry).

        Never "won" twice for one state id; an error means "not claimed" to the
        caller (the store itself makes sure a claim it could not confirm is released).
        """
        ...

    async def keep_outcome(
        self, state_id: str, expires_at: float, ticket: str, outcome: bytes | None
    ) -> None:
        """Mark the round `ticket` won as finished, with its answer (None: keep none).

        Never raises for a store fault: the answer goes to the caller anyway.
        """
        ...


def _check_claim(state_id: object, expires_at: object) -> float:
    if not isinstance(state_id, str) or not state_id:
        raise ValueError("state_id must be a non-empty str")
    if isinstance(expires_at, bool) or not isinstance(expires_at, (int, float)):
        raise TypeError("expires_at must be a number of epoch seconds")
    if not math.isfinite(expires_at):
        raise ValueError("expires_at must be finite")
    return float(expires_at)


class _Round:
    __slots__ = ("caller", "done", "expiry", "outcome", "ticket")

    def __init__(self, expiry: float, ticket: str, caller: str | None) -> None:
        self.expiry = expiry
        self.ticket = ticket
        self.caller = caller
        self.done = False
        self.outcome: bytes | None = None


class MemoryReplayStore:
    """In-process store: right for one process, forgets everything on restart.

    Guarded by a thread lock as well as being await-free, so a claim stays
    atomic even when handlers run in worker threads. At most `max_claims`
    unexpired claims (None: no bound), then new ones are refused. Kept answers
    are capped at `max_outcome_bytes` each and `max_outcomes` /
    `max_kept_bytes` in all, the oldest dropped first.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        max_outcome_bytes: int = MAX_OUTCOME_BYTES,
        max_outcomes: int = 10_000,
        max_kept_bytes: int = 32 * 1024 * 1024,
        retry_wait: float = RETRY_WAIT,
        max_claims: int | None = MAX_CLAIMS,
    ) -> None:
        if min(max_outcome_bytes, max_outcomes, max_kept_bytes) < 0 or retry_wait < 0:
            raise ValueError("the outcome bounds and retry_wait must not be negative")
        self.max_claims = _check_max_claims(max_claims)
        self._clock = clock
        self._claimed: dict[str, _Round] = {}
        self._expiries: list[tuple[float, str]] = []
        self._kept: OrderedDict[str, int] = (
            OrderedDict()
        )  # state id -> bytes of its kept answer, oldest first
        self._kept_bytes = 0
        self._lock = threading.Lock()
        self.max_outcome_bytes = max_outcome_bytes
        self.max_outcomes = max_outcomes
        self.max_kept_bytes = max_kept_bytes
        self.retry_wait = retry_wait

    def __len__(self) -> int:
        return len(self._claimed)

    @property
    def kept(self) -> tuple[int, int]:
        """(answers kept for retries, their bytes)."""
        return len(self._kept), self._kept_bytes

    async def claim(self, state_id: str, expires_at: float) -> bool:
        return (await self.claim_round(state_id, expires_at, None)).status == "won"

    async def claim_round(self, state_id: str, expires_at: float, caller: str | None) -> RoundClaim:
        expiry = _check_claim(state_id, expires_at)
        with self._lock:
            self._purge(float(self._clock()))
            found = self._claimed.get(state_id)
            if found is None:
                if self.max_claims is not None and len(self._claimed) >= self.max_claims:
                    raise ReplayStoreFull(self.max_claims)
                ticket = secrets.token_hex(16)
                self._claimed[state_id] = _Round(expiry, ticket, caller)
                heapq.heappush(self._expiries, (expiry, state_id))
                return RoundClaim("won", ticket)
            if not found.done:
                return RoundClaim("running")
            if caller is not None and found.caller == caller:
                return RoundClaim("done", outcome=found.outcome)
            return RoundClaim("replayed")

    async def keep_outcome(
        self, state_id: str, expires_at: float, ticket: str, outcome: bytes | None
    ) -> None:
        with self._lock:
            found = self._claimed.get(state_id)
            if found is None or found.ticket != ticket or found.done:
                return
            found.done = True
            if found.caller is None or outcome is None or len(outcome) > self.max_outcome_bytes:
                return
            found.outcome = bytes(outcome)
            self._kept[state_id] = len(outcome)
            self._kept_bytes += len(outcome)
            while self._kept and (
                len(self._kept) > self.max_outcomes or self._kept_bytes > self.max_kept_bytes
            ):
                self._drop_kept(next(iter(self._kept)))

    def _drop_kept(self, state_id: str) -> None:
        self._kept_bytes -= self._kept.pop(state_id, 0)
        found = self._claimed.get(state_id)
        if found is not None:
            found.outcome = None

    def _purge(self, now: float) -> None:
        # A heap makes purging proportional to what actually expired, not to the store size.
        while self._expiries and self._expiries[0][0] + PURGE_GRACE <= now:
            _, state_id = heapq.heappop(self._expiries)
            self._claimed.pop(state_id, None)
            if state_id in self._kept:
                self._kept_bytes -= self._kept.pop(state_id)


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS mcp_resolve_replay ("
    " state_id TEXT PRIMARY KEY NOT NULL,"
    " expires_at REAL NOT NULL"
    ") WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mcp_resolve_replay_expiry ON mcp_resolve_replay (expires_at)",
)
_COUNTED = (
    # The number of claims, kept by triggers in the same transaction as each insert and delete:
    # counting a million rows on every claim would cost more than the claim.
    "CREATE TABLE IF NOT EXISTS mcp_resolve_replay_count ("
    " one INTEGER PRIMARY KEY NOT NULL CHECK (one = 1), claims INTEGER NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS mcp_resolve_replay_added AFTER INSERT ON mcp_resolve_replay"
    " BEGIN UPDATE mcp_resolve_replay_count SET claims = claims + 1; END",
    "CREATE TRIGGER IF NOT EXISTS mcp_resolve_replay_removed AFTER DELETE ON mcp_resolve_replay"
    " BEGIN UPDATE mcp_resolve_replay_count SET claims = claims - 1; END",
)


def _count_claims(conn: sqlite3.Connection) -> None:
    """Give the file its claim counter (counting what a file written before it holds), once."""
    conn.execute("BEGIN IMMEDIATE")  # two workers opening the file at once: one counts
    try:
        if conn.execute("SELECT name FROM sqlite_master WHERE name = 'mcp_resolve_replay_count'").fetchone():
            conn.execute("COMMIT")
            return
        for statement in _COUNTED:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO mcp_resolve_replay_count (one, claims) SELECT 1, COUNT(*) FROM mcp_resolve_replay"
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class SqliteReplayStore:
    """A file-backed store that survives restarts and is shared by the workers of one host.

    SQLite's own write lock makes `INSERT OR IGNORE` the atomic test-and-set;
    WAL lets readers and the other workers proceed while one writes, and the
    busy timeout makes contention a short wait rather than an error.
    `synchronous=FULL` because losing a committed claim to a power cut would
    let a one-time action run twice. Not for network file systems, whose
    locking SQLite cannot trust: use a networked store there. At most
    `max_claims` claims (expired ones are purged first), then new ones are refused.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        purge_interval: float = 60.0,
        clock: Callable[[], float] = time.time,
        max_claims: int | None = MAX_CLAIMS,
    ) -> None:
        self._path = os.fspath(path)
        if self._path == ":memory:" or not self._path:
            raise ValueError("SqliteReplayStore needs a file path; use MemoryReplayStore for in-memory")
        if busy_timeout <= 0 or purge_interval <= 0:
            raise ValueError("busy_timeout and purge_interval must be positive")
        self._busy_timeout = float(busy_timeout)
        self._purge_interval = float(purge_interval)
        self._clock = clock
        self.max_claims = _check_max_claims(max_claims)
        self._file = SqliteFile(
            self._path, busy_timeout=self._busy_timeout, schema=_SCHEMA, upgrade=_count_claims
        )
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
            conn.execute("BEGIN IMMEDIATE")  # the bound and the insert under one write lock
            try:
                if now >= self._next_purge:
                    self._purge(conn, now)
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO mcp_resolve_replay (state_id, expires_at) VALUES (?, ?)",
                    (state_id, expires_at),
                )
                claimed = cursor.rowcount == 1
                if claimed and self._over(conn) and (self._purge(conn, now) == 0 or self._over(conn)):
                    conn.execute("ROLLBACK")
                    raise ReplayStoreFull(int(self.max_claims or 0))
                conn.execute("COMMIT")
            except ReplayStoreFull:
                raise
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return claimed

    def _over(self, conn: sqlite3.Connection) -> bool:
        """Whether the file holds more claims than `max_claims` (the one just inserted included)."""
        if self.max_claims is None:
            return False
        (claims,) = conn.execute("SELECT claims FROM mcp_resolve_replay_count").fetchone()
        return int(claims) > self.max_claims

    def _purge(self, conn: sqlite3.Connection, now: float) -> int:
        self._next_purge = now + self._purge_interval
        cursor = conn.execute("DELETE FROM mcp_resolve_replay WHERE expires_at <= ?", (now - PURGE_GRACE,))
        return int(cursor.rowcount)
