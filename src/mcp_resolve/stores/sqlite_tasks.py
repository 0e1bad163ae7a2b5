"""The embedded durable task store: SQLite, one file, shared by the workers of one host.

A task outlives the process that created it: after a restart, `tasks/get`
still finds it, a task that was waiting for an answer can still take one, and
a task whose worker died with the old process is reported failed (its lease
lapses, see `TaskOptions.lease_seconds`) instead of "working" forever.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio.to_thread

from ..tasks.records import TaskRecord
from .sqlite_file import SqliteFile

if TYPE_CHECKING:
    pass

__all__ = ["SqliteTaskStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS mcp_resolve_tasks ("
    " task_id TEXT PRIMARY KEY NOT NULL,"
    " principal TEXT,"
    " live INTEGER NOT NULL,"
    " expires_at REAL NOT NULL,"
    " version INTEGER NOT NULL,"
    " data TEXT NOT NULL"
    ") WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS mcp_resolve_tasks_live ON mcp_resolve_tasks (principal, live)",
    "CREATE INDEX IF NOT EXISTS mcp_resolve_tasks_expiry ON mcp_resolve_tasks (expires_at)",
)


class SqliteTaskStore:
    """Task records in a SQLite file (WAL, `synchronous=FULL`: a task acknowledged is a task kept).

    Each call runs on a worker thread; SQLite's write lock makes the bounded
    insert and the compare-and-set update atomic across the processes sharing
    the file. Not for network file systems, whose locking SQLite cannot trust.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self._path = os.fspath(path)
        if self._path == ":memory:" or not self._path:
            raise ValueError("SqliteTaskStore needs a file path; use MemoryTaskStore for in-memory")
        if busy_timeout <= 0:
            raise ValueError("busy_timeout must be positive")
        self._busy_timeout = float(busy_timeout)
        self._file = SqliteFile(self._path, busy_timeout=self._busy_timeout, schema=_SCHEMA)

    @property
    def path(self) -> str:
        return self._path

    async def create(self, record: TaskRecord, *, max_live: int | None, now: float) -> bool:
        return await anyio.to_thread.run_sync(self._create, record, max_live, now)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await anyio.to_thread.run_sync(self._get, task_id)

    async def replace(self, record: TaskRecord) -> bool:
        return await anyio.to_thread.run_sync(self._replace, record)

    async def purge(self, now: float) -> int:
        return await anyio.to_thread.run_sync(self._purge, now)

    def close(self) -> None:
        self._file.close()

    def _create(self, record: TaskRecord, max_live: int | None, now: float) -> bool:
        with self._file.lock:
            conn = self._file.connection()
            conn.execute("BEGIN IMMEDIATE")  # the count and the insert under one write lock
            try:
                if max_live is not None:
                    (live,) = conn.execute(
                        "SELECT COUNT(*) FROM mcp_resolve_tasks"
                        " WHERE principal IS ? AND live = 1 AND expires_at > ?",
                        (record.principal, now),
                    ).fetchone()
                    if live >= max_live:
                        conn.execute("ROLLBACK")
                        return False
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO mcp_resolve_tasks"
                    " (task_id, principal, live, expires_at, version, data) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        record.task_id,
                        record.principal,
                        int(record.live),
                        record.expires_at,
                        record.version,
                        record.dump(),
                    ),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return cursor.rowcount == 1

    def _get(self, task_id: str) -> TaskRecord | None:
        with self._file.lock:
            row = (
                self._file.connection()
                .execute("SELECT version, data FROM mcp_resolve_tasks WHERE task_id = ?", (task_id,))
                .fetchone()
            )
        if row is None:
            return None
        record = TaskRecord.load(row[1])
        record.version = int(row[0])
        return record

    def _replace(self, record: TaskRecord) -> bool:
        expected = record.version
        record.version = expected + 1
        try:
            with self._file.lock:
                cursor = self._file.connection().execute(
                    "UPDATE mcp_resolve_tasks SET live = ?, expires_at = ?, version = ?, data = ?"
                    " WHERE task_id = ? AND version = ?",
                    (
                        int(record.live),
                        record.expires_at,
                        record.version,
                        record.dump(),
                        record.task_id,
                        expected,
                    ),
                )
        except BaseException:
            record.version = expected
            raise
        if cursor.rowcount != 1:
            record.version = expected
            return False
        return True

    def _purge(self, now: float) -> int:
        with self._file.lock:
            cursor = self._file.connection().execute(
                "DELETE FROM mcp_resolve_tasks WHERE expires_at <= ?", (now,)
            )
        return int(cursor.rowcount)
