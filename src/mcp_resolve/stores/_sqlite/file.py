"""One SQLite file as the file-backed stores use it: opened lazily, once per process, WAL, fully synced.

The replay store and the task store share this, so what makes a SQLite file
safe for several workers of one host is written once: a connection opened
on first use and again after a fork (a SQLite handle must not cross
processes), WAL so readers and the other workers proceed while one writes,
`synchronous=FULL` because a committed claim or task lost to a power cut
would let a one-time action run twice, and a busy timeout that turns
contention into a short wait. Not for network file systems, whose locking
SQLite cannot trust.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SqliteFile"]


class SqliteFile:
    """A store's file: take `lock`, then use `connection()`; every call runs on a worker thread."""

    def __init__(
        self,
        path: str,
        *,
        busy_timeout: float,
        schema: Sequence[str],
        upgrade: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.schema = tuple(schema)
        self.upgrade = upgrade
        """Run after `schema` on each new connection: brings a file an older version wrote up to date."""
        self.lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def connection(self) -> sqlite3.Connection:
        """This process's connection (opened, set up and schema'd on first use); call with `lock` held."""
        if self._conn is None or self._pid != os.getpid():
            import sqlite3  # here, not at import: servers without a file-backed store never load it

            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                _enable_wal(conn, self.busy_timeout)
                conn.execute("PRAGMA synchronous = FULL")
                for statement in self.schema:
                    conn.execute(statement)
                if self.upgrade is not None:
                    self.upgrade(conn)
            except BaseException:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def close(self) -> None:
        with self.lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


def _enable_wal(conn: sqlite3.Connection, patience: float) -> None:
    """Switch the file to WAL, retrying while another process holds the lock.

    Changing the journal mode can fail with "database is locked" without
    consulting the busy handler (several workers opening one file at once),
    so wait here the way busy_timeout would.
    """
    import sqlite3

    deadline = time.monotonic() + patience
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
