"""The task runner: each task's rounds as background work of this process, and the lease that shows it alive.

A round is one ordinary run of the tool (`Tool.call`) with the questioner
the core hands the extension (`server/hooks.round_questioner`, the one a
2026-07-28 call's rounds use): the resolver engine is the same one a plain
call uses. A round either finishes the task or stops at questions, which the
task then holds as `input_required` with the round's plaintext question
record; the answers that `tasks/update` brings start the next round, on
whichever worker received them, exactly as an `input_required` retry would.

Rounds run in a task group held by a host task of their own (they outlive the
request that started them) for as long as the server runs (`MCPServer.running`
stops it). While a round runs, its worker renews a lease on the record; a
lease that lapsed means the worker died, and readers report the task failed.

Every round sees the creating request's `_meta` (kept on the record), and on
an instrumented server runs inside a span of its own, a child of the creating
request's span (`ServerTelemetry.observe_task_round`); an uninstrumented one
checks `server.telemetry` once a round and imports nothing.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ..context import Context, RequestScope
from ..errors import INTERNAL_ERROR, MCPError, ToolError
from ..stores.tasks import MemoryTaskStore, TaskStore
from ..tools import BodyGate
from ._extension import ServerTasks
from .records import TaskOptions, TaskRecord, TaskStoreFull, kept_meta, new_task_id

if TYPE_CHECKING:
    from ..protocol.hooks import RequestWatch
    from ..resolve.run import RunObserver
    from ..server import MCPServer
    from ..server.hooks import RoundQuestioner
    from ..tools import Tool

__all__ = ["TaskRunner", "holder_of", "runner_of"]

logger = logging.getLogger("mcp_resolve.tasks")

STOPPED: dict[str, Any] = {
    "code": INTERNAL_ERROR,
    "message": "The server running this task stopped before it finished",
}
CRASHED: dict[str, Any] = {"code": INTERNAL_ERROR, "message": "Internal error while running the task"}
PROGRESS_WRITE_GAP = 0.1
"""Progress reported faster than this is stored with the next report or lease renewal, not each time."""
MAX_STATUS_MESSAGE = 1024
"""The most characters of a tool's progress message a task keeps as its status message (then `TRUNCATED`).

Progress is written to the record outside the task's byte bounds (a report
must never fail the tool), and is sent to the client on every `tasks/get`,
so it is cut here instead: a status message is a line for a person.
"""
TRUNCATED = "… [truncated]"

Outcome = tuple[str, Any]
"""("done", result dict) | ("failed", JSON-RPC error) | ("cancelled", None)."""

_FULL = {
    "max_live_per_principal": (
        "too many tasks in progress for this caller (at most {limit}); wait for one to finish or cancel one"
    ),
    "max_tasks_per_principal": (
        "too many tasks kept for this caller (at most {limit}, finished ones included until they expire); "
        "try again later"
    ),
    "max_bytes_per_principal": (
        "this caller's tasks hold too much data (at most {limit} bytes, finished ones included until they "
        "expire); try again later"
    ),
    "max_tasks": "the server holds as many tasks as it may (at most {limit}); try again later",
    "max_bytes": "the server's tasks hold as much data as they may (at most {limit} bytes); try again later",
}
"""What a caller is told when a write would pass a `TaskOptions` bound, by its name."""


def holder_of(scope: RequestScope) -> str:
    """Whose bounds a task of `scope`'s request counts against: its principal, else its connection or address.

    Without authentication every caller is the same (None) principal, so
    keying by it would let one client's parked tasks block everyone's.
    """
    if scope.principal is not None:
        return f"principal {scope.principal}"
    return scope.peer or "anonymous"


def runner_of(server: MCPServer) -> TaskRunner:
    """The server's runner, made when the first task-supporting call or tasks/* request needs it."""
    tasks = server.task_support
    if not isinstance(tasks, ServerTasks):
        raise RuntimeError("this server has no tasks extension installed")
    return tasks.runner


def _store_of(spec: Any) -> TaskStore:
    if spec is None:
        return MemoryTaskStore()
    if isinstance(spec, TaskStore):
        return spec
    from ..stores import SqliteTaskStore

    return SqliteTaskStore(spec)  # a path


class _Run:
    """One round running (or about to) in this process."""

    __slots__ = ("last_write", "message", "scope", "started", "task_id")

    def __init__(self, task_id: str | None) -> None:
        self.task_id = task_id
        self.scope = anyio.CancelScope()
        self.started = False
        """Its record says so: until then a lease renewal must not mistake it for someone else's."""
        self.message: str | None = None
        self.last_write = 0.0


class _Gate(BodyGate):
    """The Context of a call whose resolvers run before its task exists (`resolve_before_task=True`).

    The tool's body waits here (`hold_body`) while the request creates the
    task; a request that could not create one refuses, and the body never runs.
    """

    __slots__ = ("decided", "reached", "refusal", "wake")

    def __init__(self, scope: RequestScope, wake: anyio.Event, observer: RunObserver | None = None) -> None:
        super().__init__(scope, observer)
        self.wake = wake
        self.reached = False
        self.decided = anyio.Event()
        self.refusal: str | None = None

    async def hold_body(self) -> None:
        """Between the call's resolvers and its body: hold the body until the task exists."""
        self.reached = True
        self.wake.set()
        await self.decided.wait()
        if self.refusal is not None:
            raise ToolError(self.refusal)


class TaskRunner:
    """Starts, resumes, settles and watches over the tasks of one server in this process."""

    def __init__(
        self, server: MCPServer, round_questioner: RoundQuestioner, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.server = server
        self.round_questioner = round_questioner
        self.options: TaskOptions = server.task_options or TaskOptions()
        self.limits = self.options.limits
        self.store: TaskStore = _store_of(server.task_store)
        self.clock = clock
        self.worker = secrets.token_hex(8)
        """This process's name on the records it runs (a restarted process is another worker)."""
        self._runs: dict[str, list[_Run]] = {}
        """Rounds of this process by task: one running, and briefly a claim that may not win its write."""
        self._group: anyio.abc.TaskGroup | None = None
        self._host: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- the host: a task group that outlives requests ----------------------------------------
    async def ensure_host(self) -> anyio.abc.TaskGroup:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (tests): whatever ran on the old one is gone
            self._loop, self._group, self._host, self._ready = loop, None, None, None
            self._runs.clear()
        if self._ready is None:
            self._ready = asyncio.Event()
            self._host = loop.create_task(self._hold(self._ready))
        await self._ready.wait()
        if self._group is None:
            raise MCPError(INTERNAL_ERROR, "the server is stopping and takes no new tasks")
        return self._group

    async def _hold(self, ready: asyncio.Event) -> None:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                ready.set()
                group.start_soon(self._maintain)
                await anyio.sleep_forever()
        finally:
            self._group = None
            ready.set()

    async def shutdown(self) -> None:
        """Stop every round of this process; each records its task failed ("the server stopped")."""
        group, host = self._group, self._host
        self._ready = None
        if group is None or host is None or self._loop is not asyncio.get_running_loop():
            return
        group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.gather(host, return_exceptions=True)
        self._runs.clear()

    # -- starting and running rounds ----------------------------------------------------------
    def claim(self, task_id: str) -> _Run:
        """A round registered before its record says this worker runs it: readers must never see an orphan."""
        run = _Run(task_id)
        self.register(run)
        return run

    def register(self, run: _Run) -> None:
        self._runs.setdefault(str(run.task_id), []).append(run)

    def release(self, run: _Run) -> None:
        """Forget `run` (its round ended, or its claim lost the write); other claims on the task stay."""
        runs = self._runs.get(str(run.task_id))
        if runs is not None and run in runs:
            runs.remove(run)
            if not runs:
                del self._runs[str(run.task_id)]

    def runs_of(self, task_id: str) -> list[_Run]:
        return list(self._runs.get(task_id, ()))

    def new_record(
        self,
        tool: Tool,
        arguments: dict[str, Any] | None,
        scope: RequestScope,
        trace: dict[str, str] | None = None,
    ) -> TaskRecord:
        """The record of a task `scope`'s request creates; `trace`: that request's span (instrumented servers)."""
        now = self.clock()
        return TaskRecord(
            task_id=new_task_id(),
            principal=scope.principal,
            tool=tool.name,
            arguments=arguments,
            client={
                "protocolVersion": scope.protocol_version,
                "capabilities": scope.client_capabilities,
                "info": scope.client_info,
            },
            created_at=now,
            updated_at=now,
            expires_at=now + self.options.ttl_ms / 1000,
            poll_interval_ms=self.options.poll_interval_ms,
            owner=self.worker,
            lease_until=now + self.options.lease_seconds,
            meta=kept_meta(scope.meta),
            trace=trace,
            rounds=1,
            holder=holder_of(scope),
        )

    async def create(self, record: TaskRecord) -> bool:
        """Store a new task's record; `TaskStoreFull` when a bound refuses it."""
        return await self.store.create(record, limits=self.limits, now=self.clock())

    def refusal(self, bound: str) -> str:
        """What the caller is told when a write would pass `bound` (a `TaskOptions` name)."""
        text = _FULL.get(bound, "the task store is full ({bound}); try again later")
        return text.format(limit=getattr(self.options, bound, None), bound=bound)

    def refused(self, reason: str, stage: str) -> None:
        """Count a refusal (`mcp_resolve.tasks.refusals`) on an instrumented server; nothing otherwise.

        `reason`: the bound (or "too_large", one call's own size); `stage`:
        "create", "answer" (tasks/update) or "outcome" (a round's result or questions).
        """
        telemetry = self.server.telemetry
        if telemetry is not None and telemetry.active:
            telemetry.task_refused(reason, stage)

    async def spawn_round(self, run: _Run, record: TaskRecord, trigger: Context) -> None:
        """Run the task's next round in the background; `trigger` is the request that led to it.

        Call `ensure_host` before claiming the run: a first host start forgets the runs of an older loop.
        """
        group = await self.ensure_host()
        group.start_soon(self._round, run, record, trigger)

    async def _round(self, run: _Run, record: TaskRecord, trigger: Context) -> None:
        run.started = True
        try:
            tool = self.server.registered_tool(record.tool)
            telemetry = self.server.telemetry
            if tool is None:
                outcome: Outcome = (
                    "failed",
                    {"code": INTERNAL_ERROR, "message": f"Unknown tool: {record.tool}"},
                )
            elif telemetry is None or not telemetry.active:
                outcome = await self._run_round(run, tool, record, trigger, None)
            else:
                outcome = await telemetry.observe_task_round(
                    tool=tool.name,
                    task_id=record.task_id,
                    round_number=record.rounds,
                    trace_context=record.trace,
                    trigger=trigger.observer,
                    run=partial(self._run_round, run, tool, record, trigger),
                )
            await self.settle_safely(run, outcome)
        finally:
            self.release(run)

    async def _run_round(
        self, run: _Run, tool: Tool, record: TaskRecord, trigger: Context, watch: RequestWatch | None
    ) -> Outcome:
        """One round of the tool; `watch` observes its resolvers and questions on an instrumented server."""
        context: Context[Any, Any] = Context(self._round_scope(run, record, trigger, watch), watch)
        return await self.execute(run, partial(tool.call, record.arguments, context))

    async def settle_safely(self, run: _Run, outcome: Outcome) -> None:
        """`settle`, where a store failure is logged rather than raised into the host (ending every round).

        The task then stays "working" under a lease nobody renews, so readers
        report it failed once the lease lapses: never a wrong outcome, only a late one.
        """
        try:
            await self.settle(run, outcome)
        except Exception:
            logger.exception("could not record the outcome of task %s", run.task_id)

    def _round_scope(
        self, run: _Run, record: TaskRecord, trigger: Context, watch: RequestWatch | None = None
    ) -> RequestScope:
        """A round's request: the creating request's capabilities and `_meta`, the triggering request's identity.

        Answers ride the plaintext record the last round left, never a sealed
        state: the record never leaves the server. Log messages have no channel
        in a task (the extension defines none); progress becomes the status message.
        """
        client = record.client
        questioner = self.round_questioner(record.state, record.answers)
        return RequestScope(
            request_id=trigger.request_id,
            method="tools/call",
            era="modern",
            protocol_version=str(client.get("protocolVersion")),
            client_capabilities=client.get("capabilities") or {},
            client_info=client.get("info"),
            log_level=None,
            progress_token=record.task_id,
            meta=record.round_meta(),
            send_notification=partial(self.notify, run),
            send_request=None,
            lifespan_context=self.server.lifespan_context,
            server=self.server,
            headers=trigger.headers,
            principal=record.principal,
            access_token=trigger.access_token,
            questioner=questioner if watch is None else watch.questioner(questioner),
            request_state=record.state,
            input_responses=dict(record.answers),
        )

    async def execute(self, run: _Run, call: Callable[[], Awaitable[dict[str, Any]]]) -> Outcome:
        """Run `call` under the round's cancel scope; its outcome, or ("cancelled", None) if a client cancelled."""
        outcome: Outcome = ("cancelled", None)
        try:
            with run.scope:
                try:
                    outcome = ("done", await call())
                except MCPError as exc:
                    outcome = ("failed", exc.to_error())
                except Exception:
                    logger.exception("task %s failed", run.task_id)
                    outcome = ("failed", CRASHED)
        except anyio.get_cancelled_exc_class():
            if run.task_id is not None:  # the server is stopping: say so on the record, however briefly
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.settle(run, ("failed", STOPPED))
            raise
        return outcome

    async def settle(self, run: _Run, outcome: Outcome) -> None:
        """Record a round's outcome, unless the task left this worker's hands meanwhile."""
        kind, value = outcome
        while True:
            record = await self.store.get(str(run.task_id))
            if record is None or record.owner != self.worker or record.status != "working":
                return
            if kind == "done" and value.get("resultType") == "input_required":
                if record.cancel_requested:
                    kind, value = "cancelled", None
                else:
                    _park(record, value)
            if kind == "done" and record.status == "working":
                result = dict(value)
                result.pop("resultType", None)
                record.status, record.result, record.status_message = "completed", result, None
            elif kind == "failed":
                record.status, record.error = "failed", value
                record.status_message = str(value.get("message") or "failed")
            elif kind == "cancelled":
                record.status, record.status_message = "cancelled", "Cancelled by the client"
            record.owner = record.lease_until = None
            now = self.clock()
            record.touch(now, self.options.ttl_ms)
            try:
                # A result, questions or an error are what a round adds: bounded. A cancel adds nothing.
                limits = None if record.status == "cancelled" else self.limits
                stored = await self.store.replace(record, limits=limits, now=now)
            except TaskStoreFull as full:
                self.refused(full.bound, "outcome")
                _unkept(record, self.refusal(full.bound))
                stored = await self.store.replace(record)  # a short error instead: no bound applies
            if stored:
                return

    # -- what a running round tells its record ------------------------------------------------
    async def notify(self, run: _Run, method: str, params: dict[str, Any]) -> None:
        """A round's notifications: progress becomes the task's status message; nothing else has a channel."""
        if method != "notifications/progress":
            return
        run.message = status_message(params)
        if self.clock() - run.last_write >= PROGRESS_WRITE_GAP:
            try:
                await self._renew(run)
            except Exception:  # progress is best effort: a store hiccup must not fail the tool
                logger.warning("could not store the progress of task %s", run.task_id, exc_info=True)

    async def _renew(self, run: _Run) -> None:
        """Extend this worker's lease on a running task, store its latest progress, and notice a cancel."""
        for _attempt in range(3):
            record = await self.store.get(str(run.task_id))
            now = self.clock()
            if record is None or record.owner != self.worker or record.status != "working":
                run.scope.cancel()  # gone, expired, or declared dead by a reader: stop working on it
                return
            if record.cancel_requested:
                run.scope.cancel()  # asked on another worker
            record.lease_until = now + self.options.lease_seconds
            if run.message is not None and run.message != record.status_message:
                record.status_message = run.message
                record.touch(now, self.options.ttl_ms)
            else:
                record.expires_at = max(record.expires_at, now + self.options.ttl_ms / 1000)
            run.last_write = now
            if await self.store.replace(record):
                return

    async def _maintain(self) -> None:
        """Renew the leases of the rounds running here and purge expired tasks, for as long as the host lives."""
        next_purge = 0.0
        while True:
            await anyio.sleep(self.options.lease_seconds / 3)
            try:
                for run in [r for runs in self._runs.values() for r in runs if r.started]:
                    await self._renew(run)
                now = self.clock()
                if now >= next_purge:
                    purged = await self.store.purge(now)
                    if purged:
                        logger.debug("purged %d expired tasks", purged)
                    next_purge = now + self.options.purge_interval
            except Exception:  # a store hiccup must not end the host; the next pass tries again
                logger.exception("task maintenance failed")

    def is_orphan(self, record: TaskRecord) -> bool:
        """A working task nobody runs: its worker died (lease lapsed) or is this one and has no round for it."""
        if record.status != "working":
            return False
        if record.owner == self.worker and record.task_id not in self._runs:
            return True
        return record.lease_until is not None and record.lease_until < self.clock()


def status_message(progress: dict[str, Any]) -> str:
    """A progress notification's message (else "progress/total") as a status message: at most
    `MAX_STATUS_MESSAGE` characters, a longer one cut and marked `TRUNCATED`."""
    message = progress.get("message")
    if not isinstance(message, str):
        total = progress.get("total")
        try:
            message = f"{progress.get('progress')}" + (f"/{total}" if total is not None else "")
        except ValueError:  # an int too long to print (int_max_str_digits)
            message = TRUNCATED
    if len(message) > MAX_STATUS_MESSAGE:
        message = message[: MAX_STATUS_MESSAGE - len(TRUNCATED)] + TRUNCATED
    return message


def _unkept(record: TaskRecord, why: str) -> None:
    """A round's outcome the store has no room for: the task fails, saying so, and keeps none of it.

    The message says what was lost, so nobody takes a tool that finished for
    one that did not: its result, its questions or its error.
    """
    if record.status == "input_required":
        message = f"The task's questions could not be kept: {why}"
    elif record.status == "completed":
        message = f"The task finished, but its result could not be kept: {why}"
    else:
        message = f"The task failed, and its error could not be kept: {why}"
    record.status, record.status_message = "failed", message
    record.error = {"code": INTERNAL_ERROR, "message": message}
    record.result, record.state, record.pending, record.answers = None, None, {}, {}


def _park(record: TaskRecord, result: dict[str, Any]) -> None:
    """Hold a round's questions on the record: `input_required`, with keys never shown before in this task."""
    pending: dict[str, dict[str, Any]] = {}
    issued = set(record.issued)
    for key, question in (result.get("inputRequests") or {}).items():
        shown, suffix = key, 2
        while (
            shown in issued
        ):  # the engine asks again under a key already answered: a new key for a new request
            shown, suffix = f"{key}~{suffix}", suffix + 1
        issued.add(shown)
        pending[shown] = {"key": key, "question": question}
    state = result.get("requestState")
    record.status = "input_required"
    record.status_message = f"Waiting for the client to answer {len(pending)} request(s)"
    record.state = state if isinstance(state, str) else None
    record.pending, record.answers = pending, {}
    record.issued = [*record.issued, *pending]
