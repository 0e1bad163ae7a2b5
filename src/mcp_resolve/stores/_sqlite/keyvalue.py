"""`SqliteKeyValueStore`: the key-value store in one SQLite file, shared by the workers of one host.

Each put, under SQLite's write lock, drops the entries that expired (an index
range, as long as what expired), checks the bounds against a one-row table of
totals that triggers keep exact, and writes. `take` reads and deletes under the
same lock, so of two workers taking one key exactly one gets it. The file is
opened as every file-backed store opens it (`SqliteFile`: WAL, fully synced).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import anyio.to_thread

from ..keyvalue import (
    MAX_BYTES,
    MAX_ENTRIES,
    MAX_VALUE_BYTES,
    KeyValueStoreFull,
    check_bounds,
    check_key,
    check_put,
)
from .file import SqliteFile

__all__ = ["SqliteKeyValueStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS mcp_resolve_kv ("
    " key TEXT PRIMARY KEY NOT NULL,"
    " expires_at REAL NOT NULL,"
    " size INTEGER NOT NULL,"
    " value BLOB NOT NULL"
    ") WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mcp_resolve_kv_expiry ON mcp_resolve_kv (expires_at)",
    "CREATE TABLE IF NOT EXISTS mcp_resolve_kv_totals ("
    " id INTEGER PRIMARY KEY CHECK (id = 0), entries INTEGER NOT NULL, bytes INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO mcp_resolve_kv_totals VALUES (0, 0, 0)",
    "CREATE TRIGGER IF NOT EXISTS mcp_resolve_kv_added AFTER INSERT ON mcp_resolve_kv BEGIN"
    " UPDATE mcp_resolve_kv_totals SET entries = entries + 1, bytes = bytes + NEW.size WHERE id = 0; END",
    "CREATE TRIGGER IF NOT EXISTS mcp_resolve_kv_removed AFTER DELETE ON mcp_resolve_kv BEGIN"
    " UPDATE mcp_resolve_kv_totals SET entries = entries - 1, bytes = bytes - OLD.size WHERE id = 0; END",
    "CREATE TRIGGER IF NOT EXISTS mcp_resolve_kv_resized AFTER UPDATE OF size ON mcp_resolve_kv BEGIN"
    " UPDATE mcp_resolve_kv_totals SET bytes = bytes - OLD.size + NEW.size WHERE id = 0; END",
)
_DELETE_CHUNK = 500
"""Keys per DELETE statement (SQLite limits the parameters of one)."""


class SqliteKeyValueStore:
    """A `KeyValueStore` in a SQLite file: survives a restart, shared by the processes of one host.

    Each call runs on a worker thread. Not for network file systems, whose
    locking SQLite cannot trust.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_value_bytes: int = MAX_VALUE_BYTES,
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._path = os.fspath(path)
        if self._path == ":memory:" or not self._path:
            raise ValueError("SqliteKeyValueStore needs a file path; use MemoryKeyValueStore for in-memory")
        if busy_timeout <= 0:
            raise ValueError("busy_timeout must be positive")
        check_bounds(max_entries, max_bytes, max_value_bytes)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_value_bytes = max_value_bytes
        self._clock = clock
        self._file = SqliteFile(self._path, busy_timeout=float(busy_timeout), schema=_SCHEMA)

    def __repr__(self) -> str:
        return f"SqliteKeyValueStore({self._path!r})"

    @property
    def path(self) -> str:
        return self._path

    async def put(self, key: str, value: bytes, *, ttl: float, only_new: bool = False) -> bool:
        size = check_put(key, value, ttl, self.max_value_bytes)
        return await anyio.to_thread.run_sync(self._put, key, value, float(ttl), only_new, size)

    async def get(self, key: str) -> bytes | None:
        check_key(key)
        return await anyio.to_thread.run_sync(self._get, key)

    async def take(self, key: str) -> bytes | None:
        check_key(key)
        return await anyio.to_thread.run_sync(self._take, key)

    async def delete(self, *keys: str) -> None:
        for key in keys:
            check_key(key)
        if keys:
            await anyio.to_thread.run_sync(self._delete, keys)

    def close(self) -> None:
        self._file.close()

    def _put(self, key: str, value: bytes, ttl: float, only_new: bool, size: int) -> bool:
        refused: str | None = None
        with self._file.lock:
            conn = self._file.connection()
            conn.execute("BEGIN IMMEDIATE")  # the purge, the bounds and the write under one write lock
            try:
                now = float(self._clock())
                conn.execute("DELETE FROM mcp_resolve_kv WHERE expires_at <= ?", (now,))
                row = conn.execute("SELECT size FROM mcp_resolve_kv WHERE key = ?", (key,)).fetchone()
                if row is not None and only_new:
                    conn.execute("COMMIT")
                    return False
                entries, held = conn.execute(
                    "SELECT entries, bytes FROM mcp_resolve_kv_totals WHERE id = 0"
                ).fetchone()
                if row is None and entries >= self.max_entries:
                    refused = "max_entries"
                elif held - (int(row[0]) if row else 0) + size > self.max_bytes:
                    refused = "max_bytes"
                elif row is None:
                    conn.execute(
                        "INSERT INTO mcp_resolve_kv (key, expires_at, size, value) VALUES (?, ?, ?, ?)",
                        (key, now + ttl, size, value),
                    )
                else:
                    conn.execute(
                        "UPDATE mcp_resolve_kv SET expires_at = ?, size = ?, value = ? WHERE key = ?",
                        (now + ttl, size, value, key),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        if refused is not None:
            raise KeyValueStoreFull(refused)
        return True

    def _get(self, key: str) -> bytes | None:
        with self._file.lock:
            row = (
                self._file.connection()
                .execute(
                    "SELECT value FROM mcp_resolve_kv WHERE key = ? AND expires_at > ?",
                    (key, float(self._clock())),
                )
                .fetchone()
            )
        return None if row is None else bytes(row[0])

    def _take(self, key: str) -> bytes | None:
        with self._file.lock:
            conn = self._file.connection()
            conn.execute("BEGIN IMMEDIATE")  # the read and the delete under one write lock: one taker wins
            try:
                row = conn.execute(
                    "SELECT expires_at, value FROM mcp_resolve_kv WHERE key = ?", (key,)
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM mcp_resolve_kv WHERE key = ?", (key,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        if row is None or float(row[0]) <= float(self._clock()):
            return None
        return bytes(row[1])

    def _delete(self, keys: tuple[str, ...]) -> None:
        with self._file.lock:
            conn = self._file.connection()
            for start in range(0, len(keys), _DELETE_CHUNK):
                chunk = keys[start : start + _DELETE_CHUNK]
                conn.execute(
                    f"DELETE FROM mcp_resolve_kv WHERE key IN ({', '.join('?' * len(chunk))})", chunk
                )
