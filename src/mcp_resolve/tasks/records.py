"""What the server keeps about one task, and the wire shapes made from it.

A record is everything a worker needs to report a task and to carry it on:
its status and outcome for `tasks/get`, and, while it waits for the client,
the round's plaintext question record and the answers gathered so far, so any
worker holding the store can run the next round (the record, not a coroutine
in one process, is the task). Stores keep records as JSON (`dump`/`load`) and
know only a few of their fields: the id, the principal, whether it is live and
when it expires.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal

import pydantic_core
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from .._task_options import TaskLimits, TaskOptions

__all__ = [
    "MAX_META_BYTES",
    "TASKS_EXTENSION",
    "TERMINAL",
    "TaskLimits",
    "TaskOptions",
    "TaskRecord",
    "TaskStatus",
    "TaskStoreFull",
    "declares_tasks",
    "iso_time",
    "kept_meta",
    "new_task_id",
    "required_capabilities",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
MAX_META_BYTES = 64 * 1024
"""The most of a creating request's `_meta` (as JSON) a task keeps for its rounds; a call beyond it is refused.

A real `_meta` is an envelope, a progress token, trace context and a few
application keys: a few KiB at most. Every byte kept is stored for the task's
whole TTL and read by each of its rounds, so a hostile client gets no more.
"""
_NOT_KEPT = frozenset(
    {
        PROTOCOL_VERSION_META_KEY,
        CLIENT_CAPABILITIES_META_KEY,
        CLIENT_INFO_META_KEY,
        LOG_LEVEL_META_KEY,
        "traceparent",
        "tracestate",
    }
)
"""`_meta` keys a task does not keep as sent (see `kept_meta`)."""


def declares_tasks(client_capabilities: dict[str, Any] | None) -> bool:
    """Whether a request's own capabilities declare the tasks extension (per request, never per session)."""
    extensions = (client_capabilities or {}).get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def required_capabilities() -> dict[str, Any]:
    """The `data` of the -32021 error a request without the extension gets where it needs it."""
    return {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def new_task_id() -> str:
    """192 random bits: a task id is all another caller would need to guess, so it must not be guessable."""
    return secrets.token_urlsafe(24)


def kept_meta(meta: Any) -> dict[str, Any]:
    """What a task keeps of its creating request's `_meta`, for every round's `ctx.meta`.

    Kept: everything the client chose to send (`progressToken`, `baggage`,
    its own and its extensions' keys), so a tool reads in a task what it
    reads in a direct call. Not kept as sent:

    * the protocol version, client capabilities and client info: the record
      keeps them already (`client`), and each round's `ctx.meta` shows them
      from there (`TaskRecord.round_meta`), so they are stored once;
    * the log level: a task has no channel for log messages, so a round must
      not be told the client reads them;
    * `traceparent` and `tracestate`: they name the client's span for that one
      request. A round is not that request; on an instrumented server its span
      hangs under the creating request's span, whose context the record keeps
      (`trace`), and code that propagates `ctx.meta` onward would otherwise
      attach the background work to a span that ended long ago.
    """
    if not isinstance(meta, dict):
        return {}
    return {key: value for key, value in meta.items() if key not in _NOT_KEPT}


def iso_time(epoch: float) -> str:
    return (
        datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


class TaskStoreFull(Exception):
    """A store refused a write that would pass one of its `TaskLimits`; nothing was written.

    `bound` names the limit (a `TaskLimits` field, so a `TaskOptions` one).
    """

    def __init__(self, bound: str) -> None:
        super().__init__(f"the task store is full ({bound})")
        self.bound = bound


@dataclass
class TaskRecord:
    """One task. Only a store and the task runner write it; `version` makes every write compare-and-set."""

    task_id: str
    principal: str | None
    tool: str
    arguments: dict[str, Any] | None
    client: dict[str, Any]
    """The creating request's protocol version, capabilities and client info: later rounds ask as it could."""
    created_at: float
    updated_at: float
    expires_at: float
    poll_interval_ms: int
    status: TaskStatus = "working"
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    state: str | None = None
    """The plaintext question record of the round that asked (never leaves the server, so never sealed)."""
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Outstanding requests by the key the client sees: {"key": the engine's key, "question": request}."""
    answers: dict[str, Any] = field(default_factory=dict)
    """Answers taken so far for the next round, by the engine's key."""
    issued: list[str] = field(default_factory=list)
    """Every key ever shown to the client: a key names one request for the task's whole life."""
    owner: str | None = None
    """The worker running the current round (None while waiting, or done)."""
    lease_until: float | None = None
    cancel_requested: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    """The creating request's `_meta` as `kept_meta` keeps it; {} in a record written before it was kept."""
    trace: dict[str, str] | None = None
    """W3C trace context (`traceparent`, `tracestate`) of the creating request's span, on an instrumented
    server: each round's span is its child. Written by the server from its own span, never the client's."""
    rounds: int = 0
    """Rounds started so far (the current one included); 0 when unknown (a record from before it was counted)."""
    holder: str | None = None
    """Whose bounds the task counts against: "principal ..." when authenticated, else the creating
    request's connection or address ("connection ...", "address ..."); None in an older record."""
    version: int = 0

    @property
    def live(self) -> bool:
        return self.status not in TERMINAL

    def dump(self) -> str:
        return self.encoded().decode()

    def encoded(self) -> bytes:
        """The record as UTF-8 JSON: what a store keeps, and what its size is counted in."""
        return pydantic_core.to_json(asdict(self))

    @classmethod
    def load(cls, data: str | bytes) -> TaskRecord:
        raw = pydantic_core.from_json(data)
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in names})

    def round_meta(self) -> dict[str, Any]:
        """A round's `ctx.meta`: the creating request's, with the envelope parts the record keeps in `client`."""
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_META_KEY: self.client.get("protocolVersion"),
            CLIENT_CAPABILITIES_META_KEY: self.client.get("capabilities") or {},
        }
        if self.client.get("info") is not None:
            meta[CLIENT_INFO_META_KEY] = self.client["info"]
        meta.update(self.meta)
        return meta

    def touch(self, now: float, ttl_ms: int) -> None:
        """A change: stamp it, and keep the task at least `ttl_ms` from now."""
        self.updated_at = now
        self.expires_at = max(self.expires_at, now + ttl_ms / 1000)

    def task(self) -> dict[str, Any]:
        """The `Task` fields every shape shares."""
        task: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        task["createdAt"] = iso_time(self.created_at)
        task["lastUpdatedAt"] = iso_time(self.updated_at)
        task["ttlMs"] = max(1, round((self.expires_at - self.created_at) * 1000))
        task["pollIntervalMs"] = self.poll_interval_ms
        return task

    def created(self) -> dict[str, Any]:
        """The `CreateTaskResult`: flat, and nothing that belongs to `tasks/get` (result, error, requests)."""
        return {"resultType": "task", **self.task()}

    def detailed(self) -> dict[str, Any]:
        """The `DetailedTask` of `tasks/get`: the task plus what its status carries."""
        task = self.task()
        if self.status == "completed" and self.result is not None:
            task["result"] = self.result
        elif self.status == "failed":
            task["error"] = self.error or {"code": -32603, "message": "Internal error"}
        elif self.status == "input_required":
            task["inputRequests"] = {key: entry["question"] for key, entry in self.pending.items()}
        return task
