"""How a server keeps its tasks: `MCPServer(task_options=TaskOptions(...))` and the bounds a task store enforces.

Plain settings, below everything that uses them: the server takes them, the
tasks extension (`mcp_resolve.tasks`, where users import them) and the task
stores (`mcp_resolve.stores`) read them. Neither the server nor a store needs
the extension for that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["TaskLimits", "TaskOptions"]


@dataclass(frozen=True)
class TaskLimits:
    """What a task store may hold, per caller and in all (None: no bound); see `TaskOptions`.

    A caller is a record's `holder`. Every task counts, finished ones too, until
    it expires; a task's bytes are its record as JSON (arguments, kept `_meta`,
    answers, questions and result). The names are `TaskOptions`'s, and a store
    that refuses names the one it would pass (`TaskStoreFull.bound`).
    """

    max_live_per_principal: int | None = 100
    max_tasks_per_principal: int | None = 1000
    max_bytes_per_principal: int | None = 16 * 1024 * 1024
    max_tasks: int | None = 10_000
    max_bytes: int | None = 256 * 1024 * 1024


@dataclass(frozen=True)
class TaskOptions:
    """How a server keeps its tasks (`MCPServer(task_options=TaskOptions(...))`).

    `ttl_ms`: how long a task stays readable after its last change (the TTL a
    client is told counts from creation and grows with the task). A task that
    waits for an answer longer than that expires too, so a client that walks
    away does not hold its slot forever.
    `poll_interval_ms`: the polling interval suggested to clients.
    `max_live_per_principal`: tasks one caller may have working or waiting at
    once. A caller is its principal when authenticated; without one, its
    connection (stdio, a handshake-era session) or its client address (HTTP),
    so anonymous callers do not share one bound.
    `max_tasks_per_principal`, `max_bytes_per_principal`: tasks one caller may
    have kept, finished ones included until they expire, and the bytes of
    JSON they hold (arguments, kept `_meta`, answers, questions, results).
    `max_tasks`, `max_bytes`: the same for the whole store, every caller
    together. A call past a bound is refused with a tool error saying which;
    an answer, an error; a result, the task failed. None for no bound.
    `lease_seconds`: a worker running a task renews its claim this often
    (every third of it); a task whose claim lapsed belongs to a worker that
    died, and is reported failed.
    `purge_interval`: how often expired tasks are deleted from the store.
    """

    ttl_ms: int = 3_600_000
    poll_interval_ms: int = 1000
    max_live_per_principal: int | None = 100
    max_tasks_per_principal: int | None = 1000
    max_bytes_per_principal: int | None = 16 * 1024 * 1024
    max_tasks: int | None = 10_000
    max_bytes: int | None = 256 * 1024 * 1024
    lease_seconds: float = 30.0
    purge_interval: float = 60.0

    def __post_init__(self) -> None:
        for name in ("ttl_ms", "poll_interval_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer number of milliseconds")
        for name in _LIMITS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"{name} must be a positive integer (or None for no bound)")
        for name in ("lease_seconds", "purge_interval"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds")

    @property
    def limits(self) -> TaskLimits:
        """The bounds a store enforces, as a store takes them."""
        return TaskLimits(**{name: getattr(self, name) for name in _LIMITS})


_LIMITS = tuple(f.name for f in fields(TaskLimits))
