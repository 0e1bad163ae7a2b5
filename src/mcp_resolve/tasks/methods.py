"""The tasks extension on the wire: `tools/call` that makes a task, and `tasks/get`, `tasks/update`, `tasks/cancel`.

Everything the client sends here is checked before it touches a record: the
extension declared in this very request (else -32021), a task id that is a
short string, a task that exists, has not expired and belongs to the caller
(another caller's task is "not found", never "forbidden": no oracle), and
answers shaped like the results of the requests they answer, of bounded size.
Answers to keys that are not outstanding are ignored, as the extension asks.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import pydantic_core
from mcp_types import CreateMessageResult, CreateMessageResultWithTools, ElicitResult, ListRootsResult
from pydantic import BaseModel, ValidationError

from .._signature import ArgumentError
from ..errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    MCPError,
)
from ..tools import error_result
from .records import (
    MAX_META_BYTES,
    TASKS_EXTENSION,
    TaskRecord,
    TaskStoreFull,
    declares_tasks,
    required_capabilities,
)
from .runner import STOPPED, TaskRunner, _Gate, _Run

if TYPE_CHECKING:
    from ..context import Context
    from ..tools import Tool
    from ._extension import ServerTasks

__all__ = ["MAX_ANSWER_BYTES", "MAX_RECORD_BYTES", "call_task_tool", "serve_task_method"]

MAX_TASK_ID = 128
MAX_ANSWER_BYTES = 256 * 1024
"""One answer, as JSON: far above any form or sampling result, far below what a store should hold."""
MAX_RECORD_BYTES = 1024 * 1024
"""What a caller may make the server keep for one task (arguments, capabilities, `_meta`, answers)."""
_NOT_FOUND = "Failed to retrieve task: Task not found"
_TOO_LARGE = "the call is too large to run as a task"
_META_TOO_LARGE = f"the call's _meta is too large to keep in a task (at most {MAX_META_BYTES} bytes)"
_NOT_CREATED = "the task could not be created; try again"
_ANSWER_MODELS: dict[str, type[BaseModel]] = {
    "elicitation/create": ElicitResult,
    "sampling/createMessage": CreateMessageResult,
    "roots/list": ListRootsResult,
}


async def call_task_tool(
    tasks: ServerTasks, tool: Tool, arguments: dict[str, Any] | None, context: Context
) -> dict[str, Any]:
    """`tools/call` of a task-supporting tool: a task when the request declares the extension, else a plain call."""
    if not (context.is_modern and declares_tasks(context.client_capabilities_dict)):
        if tool.task_support == "required":
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: tool {tool.name} runs only as a task; declare the "
                f"{TASKS_EXTENSION} extension in the request's client capabilities",
                required_capabilities(),
            )
        return await tool.call(arguments, context)
    try:
        tool.signature.validate(arguments)  # bad arguments are answered now, not parked in a task
    except ArgumentError as exc:
        return error_result(tool.name, f"invalid arguments: {exc}")
    runner = tasks.runner
    if tool.resolve_before_task and tool.signature.resolved_params:
        return await _start_after_resolvers(runner, tool, arguments, context)
    return await _start(runner, tool, arguments, context)


def _trace_of(context: Context) -> dict[str, str] | None:
    """The W3C context of the request's own span, when the server is instrumented (None otherwise).

    Asked of the request's watch, which only the telemetry module makes: with
    telemetry off the observer is None and nothing is looked up or imported.
    """
    trace_context = getattr(context.observer, "trace_context", None)
    return None if trace_context is None else trace_context()  # type: ignore[no-any-return]


def _refusal(record: TaskRecord) -> str | None:
    """Why a task cannot keep this record (a tool error's text), or None when it can."""
    if len(pydantic_core.to_json(record.meta)) > MAX_META_BYTES:
        return _META_TOO_LARGE
    if len(record.dump()) > MAX_RECORD_BYTES:
        return _TOO_LARGE
    return None


async def _start(
    runner: TaskRunner, tool: Tool, arguments: dict[str, Any] | None, context: Context
) -> dict[str, Any]:
    scope = context.request_scope
    await runner.ensure_host()
    record = runner.new_record(tool, arguments, scope, _trace_of(context))
    refusal = _refusal(record)
    if refusal is not None:
        runner.refused("too_large", "create")
        return error_result(tool.name, refusal)
    run = runner.claim(record.task_id)
    try:
        created = await runner.create(record)
    except TaskStoreFull as full:
        runner.release(run)
        runner.refused(full.bound, "create")
        return error_result(tool.name, runner.refusal(full.bound))
    except BaseException:
        runner.release(run)
        raise
    if not created:  # its id was taken: only a create retried after it landed gets here
        runner.release(run)
        raise MCPError(INTERNAL_ERROR, _NOT_CREATED)
    try:
        await runner.spawn_round(run, record, context)
    except BaseException:
        runner.release(run)  # the record says working: now its first reader reports it failed
        raise
    return record.created()


async def _start_after_resolvers(
    runner: TaskRunner, tool: Tool, arguments: dict[str, Any] | None, context: Context
) -> dict[str, Any]:
    """Resolve in the request (questions as `input_required` rounds), then run the body as a task.

    The whole call runs in the background from the start, so the resolvers,
    the body and the generator resolvers' cleanup share one task; the request
    waits until the body is about to start (then creates the task and answers
    with it) or the call ends before that (a round's questions, an error).
    """
    scope = context.request_scope
    wake, done = anyio.Event(), anyio.Event()
    gate = _Gate(scope, wake, context.observer)
    run = _Run(None)
    box: dict[str, Any] = {}

    async def work() -> None:
        try:
            outcome = await runner.execute(run, partial(tool.call, arguments, gate))
            if run.task_id is None:
                box["outcome"] = outcome
            else:
                await runner.settle_safely(run, outcome)
        finally:
            runner.release(run)
            done.set()
            wake.set()

    group = await runner.ensure_host()
    group.start_soon(work)
    try:
        await wake.wait()
    except anyio.get_cancelled_exc_class():
        run.scope.cancel()  # the client is gone before anything was promised: stop
        raise
    if not gate.reached:
        return _request_outcome(box.get("outcome"))
    record = runner.new_record(tool, arguments, scope, _trace_of(context))
    run.task_id = record.task_id
    runner.register(run)
    created, refusal = False, _refusal(record)
    if refusal is not None:
        runner.refused("too_large", "create")
    try:
        if refusal is None:
            created = await runner.create(record)
            refusal = None if created else _NOT_CREATED
    except TaskStoreFull as full:
        runner.refused(full.bound, "create")
        refusal = runner.refusal(full.bound)
    finally:
        if not created:
            # No task (refused, or this request failed or was cancelled while making it): no body either.
            runner.release(run)
            run.task_id = None
            gate.refusal = refusal or _NOT_CREATED
            gate.decided.set()
    if not created:
        await done.wait()
        return _request_outcome(box.get("outcome"))
    # From here on the body belongs to the task: its progress is the task's, and it has no request to log to.
    scope.send_notification = partial(runner.notify, run)
    scope.progress_token, scope.log_level = record.task_id, None
    run.started = True
    gate.decided.set()
    return record.created()


def _request_outcome(outcome: Any) -> dict[str, Any]:
    """What the request answers when the call ended before becoming a task."""
    if outcome is None:
        raise MCPError(INTERNAL_ERROR, "the server is stopping and takes no new tasks")
    kind, value = outcome
    if kind == "done":
        return value  # type: ignore[no-any-return]
    if kind == "failed":
        raise MCPError(value["code"], value["message"], value.get("data"))
    raise MCPError(INTERNAL_ERROR, "the call was cancelled")


# -- tasks/get, tasks/update, tasks/cancel ----------------------------------------------------
async def serve_task_method(
    tasks: ServerTasks, method: str, params: dict[str, Any], context: Context
) -> dict[str, Any]:
    if not context.is_modern:
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
    if not declares_tasks(context.client_capabilities_dict):
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"Missing required client capability: {method} needs the {TASKS_EXTENSION} extension "
            "declared in the request's client capabilities",
            required_capabilities(),
        )
    runner = tasks.runner
    record = await _visible(runner, context, params.get("taskId"))
    if method == "tasks/get":
        if runner.is_orphan(record):
            record = await _settle_orphan(runner, record)
        return record.detailed()
    if method == "tasks/update":
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise MCPError(INVALID_PARAMS, "Invalid params: tasks/update needs an inputResponses object")
        await _update(runner, context, record, responses)
    else:
        await _cancel(runner, record)
    return {}


async def _visible(runner: TaskRunner, context: Context, task_id: Any) -> TaskRecord:
    """The caller's own, unexpired task; anything else is the same -32602."""
    if not isinstance(task_id, str) or not task_id:
        raise MCPError(INVALID_PARAMS, "Invalid params: taskId must be a non-empty string")
    record = None if len(task_id) > MAX_TASK_ID else await runner.store.get(task_id)
    if record is None or record.principal != context.request_scope.principal:
        raise MCPError(INVALID_PARAMS, _NOT_FOUND)
    if record.expires_at <= runner.clock():
        raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task has expired")
    return record


async def _reread(runner: TaskRunner, record: TaskRecord) -> TaskRecord:
    fresh = await runner.store.get(record.task_id)
    if fresh is None:
        raise MCPError(INVALID_PARAMS, _NOT_FOUND)
    return fresh


async def _settle_orphan(runner: TaskRunner, record: TaskRecord) -> TaskRecord:
    """A working task whose worker is gone: failed (or cancelled, if that was asked), never working forever."""
    while runner.is_orphan(record):
        if record.cancel_requested:
            record.status, record.status_message = "cancelled", "Cancelled by the client"
        else:
            record.status, record.error = "failed", dict(STOPPED)
            record.status_message = STOPPED["message"]
        record.owner = record.lease_until = None
        record.touch(runner.clock(), runner.options.ttl_ms)
        if await runner.store.replace(record):
            return record
        record = await _reread(runner, record)
    return record


def check_answer(key: str, question: dict[str, Any], answer: Any) -> None:
    """An answer must be the result the request asks for, and small; anything else is the caller's error."""
    if not isinstance(answer, dict):
        raise MCPError(INVALID_PARAMS, f"Invalid params: the answer to {key!r} must be an object")
    if len(pydantic_core.to_json(answer)) > MAX_ANSWER_BYTES:
        raise MCPError(
            INVALID_PARAMS, f"Invalid params: the answer to {key!r} is larger than {MAX_ANSWER_BYTES} bytes"
        )
    method = question.get("method")
    model = _ANSWER_MODELS.get(str(method))
    if method == "sampling/createMessage" and (question.get("params") or {}).get("tools"):
        model = CreateMessageResultWithTools
    if model is None:
        return
    try:
        model.model_validate(answer)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(root)"
        raise MCPError(
            INVALID_PARAMS,
            f"Invalid params: the answer to {key!r} is not a {method} result ({where}: {first['msg']})",
        ) from None


async def _update(
    runner: TaskRunner, context: Context, record: TaskRecord, responses: dict[str, Any]
) -> None:
    """Take the answers to outstanding requests; the last one missing starts the next round, here."""
    await runner.ensure_host()
    while True:
        if record.status != "input_required":
            return  # nothing is outstanding: every answer is to a key that is not, and is ignored
        accepted = {key: answer for key, answer in responses.items() if key in record.pending}
        if not accepted:
            return
        for key, answer in accepted.items():
            check_answer(key, record.pending[key]["question"], answer)
        for key, answer in accepted.items():
            record.answers[record.pending.pop(key)["key"]] = answer
        if len(record.dump()) > MAX_RECORD_BYTES:
            raise MCPError(INVALID_PARAMS, "Invalid params: the answers are too large to keep for this task")
        now = runner.clock()
        record.touch(now, runner.options.ttl_ms)
        run = None
        if not record.pending:
            record.status, record.status_message = "working", None
            record.owner, record.lease_until = runner.worker, now + runner.options.lease_seconds
            record.rounds = record.rounds + 1 if record.rounds else 0
            run = runner.claim(record.task_id)
        try:
            try:
                stored = await runner.store.replace(record, limits=runner.limits, now=now)
            except TaskStoreFull as full:
                runner.refused(full.bound, "answer")
                raise MCPError(
                    INVALID_PARAMS,
                    f"Invalid params: the answers cannot be kept: {runner.refusal(full.bound)}",
                ) from None
            if stored and run is not None:
                await runner.spawn_round(run, record, context)
                run = None
        finally:
            if run is not None:
                runner.release(run)  # no round will come of it: let readers see the task unclaimed
        if stored:
            return
        record = await _reread(runner, record)


async def _cancel(runner: TaskRunner, record: TaskRecord) -> None:
    """Cancel now what nobody runs; ask the worker running it otherwise. Terminal tasks: nothing to do."""
    while record.live:
        if record.status == "input_required" or runner.is_orphan(record):
            record.status, record.status_message = "cancelled", "Cancelled by the client"
            record.owner = record.lease_until = None
            record.touch(runner.clock(), runner.options.ttl_ms)
        elif record.cancel_requested:
            break
        record.cancel_requested = True
        if await runner.store.replace(record):
            break
        record = await _reread(runner, record)
    for run in runner.runs_of(record.task_id):
        run.scope.cancel()
