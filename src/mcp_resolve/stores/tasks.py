"""Task stores: where task records live, so that polling, answers and cancellation find them.

The interface is four awaitables and nothing else, so a networked store (Redis,
with the scale-out work) is a small class: every write is compare-and-set on
the record's `version`, which is all the task runner needs to stay correct
with several workers writing the same task, and `create` bounds how many live
tasks one principal may hold in the same atomic step that adds one.

A store that raises fails the request that used it; nothing is ever reported
from a write that did not land.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from ..tasks.records import TaskRecord

__all__ = ["MemoryTaskStore", "TaskStore"]


@runtime_checkable
class TaskStore(Protocol):
    """Task records by id; every write compare-and-set, so concurrent writers cannot lose each other's changes."""

    async def create(self, record: TaskRecord, *, max_live: int | None, now: float) -> bool:
        """Store a new record unless its principal already has `max_live` live, unexpired tasks.

        Returns whether it was stored; the check and the insert are one atomic step.
        """
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The stored record (a copy the caller may change), or None."""
        ...

    async def replace(self, record: TaskRecord) -> bool:
        """Store `record` if the stored one still has `record.version`; on success the version goes up by one.

        False (and nothing written) when someone else wrote first or the record is gone: read it again.
        """
        ...

    async def purge(self, now: float) -> int:
        """Delete every record that expired before `now`; how many."""
        ...


class MemoryTaskStore:
    """In-process store: right for one process, and for tests; forgets every task on restart.

    Records are kept as their JSON, so what a caller gets back is always a
    copy and anything that would not survive a real store fails here too.
    """

    def __init__(self) -> None:
        self._records: dict[str, tuple[str | None, bool, float, int, str]] = {}
        """Task id -> (principal, live, expires_at, version, JSON)."""
        self._live: dict[str | None, set[str]] = {}
        """Principal -> ids of its live tasks: counting them costs what one caller holds, not the store."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: TaskRecord, *, max_live: int | None, now: float) -> bool:
        with self._lock:
            if record.task_id in self._records:
                return False
            if max_live is not None:
                held = self._live.get(record.principal, ())
                if sum(1 for task_id in held if self._records[task_id][2] > now) >= max_live:
                    return False
            self._put(record)
            return True

    async def get(self, task_id: str) -> TaskRecord | None:
        with self._lock:
            entry = self._records.get(task_id)
        if entry is None:
            return None
        record = TaskRecord.load(entry[4])
        record.version = entry[3]
        return record

    async def replace(self, record: TaskRecord) -> bool:
        with self._lock:
            entry = self._records.get(record.task_id)
            if entry is None or entry[3] != record.version:
                return False
            record.version += 1
            self._put(record)
            return True

    async def purge(self, now: float) -> int:
        with self._lock:
            expired = [task_id for task_id, entry in self._records.items() if entry[2] <= now]
            for task_id in expired:
                principal = self._records.pop(task_id)[0]
                self._live.get(principal, set()).discard(task_id)
            return len(expired)

    def _put(self, record: TaskRecord) -> None:
        held = self._live.setdefault(record.principal, set())
        if record.live:
            held.add(record.task_id)
        else:
            held.discard(record.task_id)
        self._records[record.task_id] = (
            record.principal,
            record.live,
            record.expires_at,
            record.version,
            record.dump(),
        )
