"""Task stores: where task records live, so that polling, answers and cancellation find them.

The interface is four awaitables and nothing else, so a networked store (Redis,
with the scale-out work) is a small class: every write is compare-and-set on
the record's `version`, which is all the task runner needs to stay correct
with several workers writing the same task.

Every store is bounded by count and by bytes, per caller (a record's
`holder`) and in all (`TaskLimits`): `create` checks the bounds in the same
atomic step that adds a record, and `replace` checks a record that grows when
asked to. A write past a bound raises `TaskStoreFull` and writes nothing;
expired records are deleted first, so only tasks a client may still read hold
room. A task that has not expired is never evicted: a client polling for its
result must find it.

A store that raises fails the request that used it; nothing is ever reported
from a write that did not land.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from ..tasks.records import TaskLimits, TaskRecord, TaskStoreFull

__all__ = ["MemoryTaskStore", "TaskStore", "TaskStoreFull"]


@runtime_checkable
class TaskStore(Protocol):
    """Task records by id; every write compare-and-set, so concurrent writers cannot lose each other's changes."""

    async def create(self, record: TaskRecord, *, limits: TaskLimits, now: float) -> bool:
        """Store a new record; False if its id is taken. The check and the insert are one atomic step.

        Raises `TaskStoreFull` when the record would pass one of `limits`: its
        holder's live (working or waiting) tasks, kept tasks or bytes, or the
        store's tasks or bytes; only tasks that have not expired by `now` count.
        """
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The stored record (a copy the caller may change), or None."""
        ...

    async def replace(
        self, record: TaskRecord, *, limits: TaskLimits | None = None, now: float = 0.0
    ) -> bool:
        """Store `record` if the stored one still has `record.version`; on success the version goes up by one.

        False (and nothing written) when someone else wrote first or the record is gone: read it again.
        With `limits`, a record that grows past its holder's or the store's
        bytes raises `TaskStoreFull` (nothing written, the version unchanged).
        """
        ...

    async def purge(self, now: float) -> int:
        """Delete every record that expired before `now`; how many."""
        ...


class _Holding:
    """One holder's share of a store: its live task ids, and how many tasks and bytes it keeps."""

    __slots__ = ("bytes", "live", "tasks")

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.tasks = 0
        self.bytes = 0


class MemoryTaskStore:
    """In-process store: right for one process, and for tests; forgets every task on restart.

    Records are kept as their JSON, so what a caller gets back is always a
    copy and anything that would not survive a real store fails here too; the
    counts and bytes the bounds need are kept as records come and go.
    """

    def __init__(self) -> None:
        self._records: dict[str, tuple[str | None, bool, float, int, bytes]] = {}
        """Task id -> (holder, live, expires_at, version, JSON)."""
        self._holders: dict[str | None, _Holding] = {}
        """Holder -> its share: counting it costs what one caller holds, not the store."""
        self._bytes = 0
        self._swept = float("-inf")
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)

    @property
    def held_bytes(self) -> int:
        """The bytes of JSON the store holds (expired records included until purged)."""
        return self._bytes

    async def create(self, record: TaskRecord, *, limits: TaskLimits, now: float) -> bool:
        data = record.encoded()
        with self._lock:
            if record.task_id in self._records:
                return False
            bound = self._passed(record.holder, 1, len(data), limits, now)
            if bound is not None and bound != "max_live_per_principal" and self._sweep(now):
                bound = self._passed(record.holder, 1, len(data), limits, now)
            if bound is not None:
                raise TaskStoreFull(bound)
            self._put(record, data)
            return True

    async def get(self, task_id: str) -> TaskRecord | None:
        with self._lock:
            entry = self._records.get(task_id)
        if entry is None:
            return None
        record = TaskRecord.load(entry[4])
        record.version = entry[3]
        return record

    async def replace(
        self, record: TaskRecord, *, limits: TaskLimits | None = None, now: float = 0.0
    ) -> bool:
        data = record.encoded()
        with self._lock:
            entry = self._records.get(record.task_id)
            if entry is None or entry[3] != record.version:
                return False
            growth = len(data) - len(entry[4])
            if limits is not None and growth > 0:
                bound = self._passed(entry[0], 0, growth, limits, now)
                if bound is not None and self._sweep(now):
                    if record.task_id not in self._records:
                        return False  # it had expired itself
                    bound = self._passed(entry[0], 0, growth, limits, now)
                if bound is not None:
                    raise TaskStoreFull(bound)
            record.version += 1
            self._put(record, data)
            return True

    async def purge(self, now: float) -> int:
        with self._lock:
            return self._purge(now)

    def _passed(
        self, holder: str | None, tasks: int, size: int, limits: TaskLimits, now: float
    ) -> str | None:
        """The first bound that `tasks` more records of `size` more bytes for `holder` would pass, or None."""
        held = self._holders.get(holder) or _Holding()
        if tasks and limits.max_live_per_principal is not None:
            live = sum(1 for task_id in held.live if self._records[task_id][2] > now)
            if live >= limits.max_live_per_principal:
                return "max_live_per_principal"
        if (
            tasks
            and limits.max_tasks_per_principal is not None
            and held.tasks + tasks > limits.max_tasks_per_principal
        ):
            return "max_tasks_per_principal"
        if limits.max_bytes_per_principal is not None and held.bytes + size > limits.max_bytes_per_principal:
            return "max_bytes_per_principal"
        if tasks and limits.max_tasks is not None and len(self._records) + tasks > limits.max_tasks:
            return "max_tasks"
        if limits.max_bytes is not None and self._bytes + size > limits.max_bytes:
            return "max_bytes"
        return None

    def _sweep(self, now: float) -> bool:
        """Purge before refusing, at most once a second: a client refused in a loop must not make
        each refusal walk the whole store. Whether it purged."""
        if now < self._swept + 1.0:
            return False
        self._swept = now
        self._purge(now)
        return True

    def _purge(self, now: float) -> int:
        expired = [task_id for task_id, entry in self._records.items() if entry[2] <= now]
        for task_id in expired:
            self._drop(task_id)
        return len(expired)

    def _drop(self, task_id: str) -> None:
        holder, _live, _expires_at, _version, data = self._records.pop(task_id)
        held = self._holders[holder]
        held.live.discard(task_id)
        held.tasks -= 1
        held.bytes -= len(data)
        self._bytes -= len(data)
        if not held.tasks:
            del self._holders[holder]

    def _put(self, record: TaskRecord, data: bytes) -> None:
        holder = record.holder
        if record.task_id in self._records:
            holder = self._records[record.task_id][0]  # a task's holder never changes
            self._drop(record.task_id)
        held = self._holders.setdefault(holder, _Holding())
        if record.live:
            held.live.add(record.task_id)
        held.tasks += 1
        held.bytes += len(data)
        self._bytes += len(data)
        self._records[record.task_id] = (holder, record.live, record.expires_at, record.version, data)
