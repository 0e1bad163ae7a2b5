"""The embedded durable task store: SQLite, one file, shared by the workers of one host.

A task outlives the process that created it: after a restart, `tasks/get`
still finds it, a task that was waiting for an answer can still take one, and
a task whose worker died with the old process is reported failed (its lease
lapses, see `TaskOptions.lease_seconds`) instead of "working" forever.

Each row keeps its holder and its size beside the JSON, and covering indexes
count a holder's (and the file's) unexpired tasks and bytes without reading
any record, so the bounds cost a short index walk under the write lock.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio.to_thread

from ...tasks.records import TaskLimits, TaskRecord, TaskStoreFull
from .file import SqliteFile

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SqliteTaskStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS mcp_resolve_tasks ("
    " task_id TEXT PRIMARY KEY NOT NULL,"
    " principal TEXT,"
    " live INTEGER NOT NULL,"
    " expires_at REAL NOT NULL,"
    " version INTEGER NOT NULL,"
    " data TEXT NOT NULL,"
    " holder TEXT,"
    " size INTEGER NOT NULL DEFAULT 0"
    ") WITHOUT ROWID",
)
_INDEXES = (
    # Covering: the bounds are counted from the indexes alone, never from the records' data.
    "CREATE INDEX IF NOT EXISTS mcp_resolve_tasks_held ON mcp_resolve_tasks (holder, expires_at, live, size)",
    "CREATE INDEX IF NOT EXISTS mcp_resolve_tasks_sizes ON mcp_resolve_tasks (expires_at, size)",
)


def _upgrade(conn: sqlite3.Connection) -> None:
    """Give a file written before tasks were bounded its `holder` and `size` columns, then the indexes.

    An old record's holder is its principal (what its live tasks were counted
    by); an anonymous one's is unknown (NULL), and counts for no one caller.
    """
    conn.execute("BEGIN IMMEDIATE")  # two workers opening an old file at once: one upgrades it
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(mcp_resolve_tasks)")}
        if "holder" not in columns:
            conn.execute("ALTER TABLE mcp_resolve_tasks ADD COLUMN holder TEXT")
            conn.execute("ALTER TABLE mcp_resolve_tasks ADD COLUMN size INTEGER NOT NULL DEFAULT 0")
            conn.execute(
                "UPDATE mcp_resolve_tasks SET size = length(CAST(data AS BLOB)),"
                " holder = CASE WHEN principal IS NULL THEN NULL ELSE 'principal ' || principal END"
            )
        for statement in _INDEXES:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _passed(
    conn: sqlite3.Connection, holder: str | None, tasks: int, size: int, limits: TaskLimits, now: float
) -> str | None:
    """The first bound `tasks` more records of `size` more bytes for `holder` would pass, or None.

    Only records that have not expired count, so nothing needs purging first.
    """
    if tasks and limits.max_live_per_principal is not None:
        (live,) = conn.execute(
            "SELECT COUNT(*) FROM mcp_resolve_tasks WHERE holder IS ? AND expires_at > ? AND live = 1",
            (holder, now),
        ).fetchone()
        if live >= limits.max_live_per_principal:
            return "max_live_per_principal"
    if (tasks and limits.max_tasks_per_principal is not None) or limits.max_bytes_per_principal is not None:
        count, held = conn.execute(
            "SELECT COUNT(*), TOTAL(size) FROM mcp_resolve_tasks WHERE holder IS ? AND expires_at > ?",
            (holder, now),
        ).fetchone()
        if (
            tasks
            and limits.max_tasks_per_principal is not None
            and count + tasks > limits.max_tasks_per_principal
        ):
            return "max_tasks_per_principal"
        if limits.max_bytes_per_principal is not None and held + size > limits.max_bytes_per_principal:
            return "max_bytes_per_principal"
    if (tasks and limits.max_tasks is not None) or limits.max_bytes is not None:
        count, held = conn.execute(
            "SELECT COUNT(*), TOTAL(size) FROM mcp_resolve_tasks WHERE expires_at > ?", (now,)
        ).fetchone()
        if tasks and limits.max_tasks is not None and count + tasks > limits.max_tasks:
            return "max_tasks"
        if limits.max_bytes is not None and held + size > limits.max_bytes:
            return "max_bytes"
    return None


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
        self._file = SqliteFile(self._path, busy_timeout=self._busy_timeout, schema=_SCHEMA, upgrade=_upgrade)

    @property
    def path(self) -> str:
        return self._path

    async def create(self, record: TaskRecord, *, limits: TaskLimits, now: float) -> bool:
        return await anyio.to_thread.run_sync(self._create, record, limits, now)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await anyio.to_thread.run_sync(self._get, task_id)

    async def replace(
        self, record: TaskRecord, *, limits: TaskLimits | None = None, now: float = 0.0
    ) -> bool:
        return await anyio.to_thread.run_sync(self._replace, record, limits, now)

    async def purge(self, now: float) -> int:
        return await anyio.to_thread.run_sync(self._purge, now)

    def close(self) -> None:
        self._file.close()

    def _create(self, record: TaskRecord, limits: TaskLimits, now: float) -> bool:
        data = record.encoded()
        with self._file.lock:
            conn = self._file.connection()
            conn.execute("BEGIN IMMEDIATE")  # the bounds and the insert under one write lock
            try:
                taken = conn.execute(
                    "SELECT 1 FROM mcp_resolve_tasks WHERE task_id = ?", (record.task_id,)
                ).fetchone()
                bound = None if taken else _passed(conn, record.holder, 1, len(data), limits, now)
                if not taken and bound is None:
                    conn.execute(
                        "INSERT INTO mcp_resolve_tasks"
                        " (task_id, principal, live, expires_at, version, data, holder, size)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            record.task_id,
                            record.principal,
                            int(record.live),
                            record.expires_at,
                            record.version,
                            data.decode(),
                            record.holder,
                            len(data),
                        ),
                    )
                conn.execute("COMMIT" if not taken and bound is None else "ROLLBACK")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        if bound is not None:
            raise TaskStoreFull(bound)
        return not taken

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

    def _replace(self, record: TaskRecord, limits: TaskLimits | None, now: float) -> bool:
        expected = record.version
        record.version = expected + 1
        try:
            stored = self._write(record, expected, limits, now)
        except BaseException:
            record.version = expected
            raise
        if not stored:
            record.version = expected
        return stored

    def _write(self, record: TaskRecord, expected: int, limits: TaskLimits | None, now: float) -> bool:
        data = record.encoded()
        update = (
            "UPDATE mcp_resolve_tasks SET live = ?, expires_at = ?, version = ?, data = ?, size = ?"
            " WHERE task_id = ? AND version = ?"
        )
        values = (
            int(record.live),
            record.expires_at,
            record.version,
            data.decode(),
            len(data),
            record.task_id,
            expected,
        )
        with self._file.lock:
            conn = self._file.connection()
            if limits is None:
                return conn.execute(update, values).rowcount == 1
            conn.execute("BEGIN IMMEDIATE")  # the bound and the update under one write lock
            try:
                row = conn.execute(
                    "SELECT holder, size FROM mcp_resolve_tasks WHERE task_id = ? AND version = ?",
                    (record.task_id, expected),
                ).fetchone()
                growth = 0 if row is None else len(data) - int(row[1])
                bound = _passed(conn, row[0], 0, growth, limits, now) if growth > 0 else None
                stored = row is not None and bound is None and conn.execute(update, values).rowcount == 1
                conn.execute("COMMIT" if stored else "ROLLBACK")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        if bound is not None:
            raise TaskStoreFull(bound)
        return stored

    def _purge(self, now: float) -> int:
        with self._file.lock:
            cursor = self._file.connection().execute(
                "DELETE FROM mcp_resolve_tasks WHERE expires_at <= ?", (now,)
            )
        return int(cursor.rowcount)
