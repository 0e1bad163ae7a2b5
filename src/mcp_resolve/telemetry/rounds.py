"""A task's background rounds: an INTERNAL `execute_tool {tool}` span each, under the call that created the task.

A task's rounds run after the request that started them was answered, maybe
on another worker. Each round's span is a child of the creating `tools/call`
span, whose W3C context the task record keeps (written from our own span,
never copied from the client), and is linked to the request that started the
round (a `tasks/update`) when that is another span. The round's resolvers and
questions nest under it as under a direct call's request span. A round records
no request duration (nobody was waiting on it); the task's last round records
the call's rounds.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, SpanKind

from .attributes import LINK_KIND, MAX_NAME, METHOD, OPERATION, ROUND, TASK_ID, TOOL_NAME, clip, task_digest
from .instruments import round_attributes
from .propagation import W3C, extract
from .watch import UNOBSERVED, Watch

if TYPE_CHECKING:
    from ..protocol.hooks import RequestWatch
    from ..resolve.run import RunObserver
    from .entry import Telemetry

logger = logging.getLogger("mcp_resolve.telemetry")


async def observe_task_round(
    telemetry: Telemetry,
    *,
    tool: str,
    task_id: str,
    round_number: int,
    trace_context: Mapping[str, str] | None,
    trigger: RunObserver | None,
    run: Callable[[RequestWatch], Awaitable[tuple[str, Any]]],
) -> tuple[str, Any]:
    """Run one round of a task through `run` inside its span, then record how it went."""
    try:
        watch = _start(telemetry, tool, task_id, round_number, trace_context, trigger)
    except Exception:  # telemetry must never cost a task its round
        logger.exception("could not start the span of a round of %s; running it unobserved", tool)
        return await run(UNOBSERVED)
    token = otel_context.attach(watch.context)
    outcome: tuple[str, Any] | None = None
    try:
        outcome = await run(watch)
        return outcome
    finally:
        otel_context.detach(token)
        try:
            watch.finish_round(outcome)
        except Exception:
            logger.exception("could not finish the span of a round of %s", tool)


def _start(
    telemetry: Telemetry,
    tool: str,
    task_id: str,
    round_number: int,
    trace_context: Mapping[str, str] | None,
    trigger: RunObserver | None,
) -> RoundWatch:
    """The round's span: a child of the creating request's span (a root when the record has none).

    The parent is always explicit: the round's task was spawned by a
    request and inherited that request's current span, which is the
    parent only when it is the creating request itself.
    """
    parent = extract(trace_context, W3C) if isinstance(trace_context, Mapping) else None
    if parent is None:
        parent = otel_context.Context()  # created before the server was instrumented: a trace of its own
    parent_span = trace.get_current_span(parent).get_span_context()
    links: list[Link] = []
    if isinstance(trigger, Watch):
        started_by = trigger.span.get_span_context()
        if started_by.is_valid and started_by.span_id != parent_span.span_id:
            links.append(Link(started_by, {LINK_KIND: "trigger"}))
    attributes: dict[str, Any] = {
        METHOD: "tools/call",
        OPERATION: "execute_tool",
        TOOL_NAME: clip(tool, MAX_NAME),
    }
    digest = task_digest(task_id)
    if digest is not None:
        attributes[TASK_ID] = digest
    if round_number > 0:
        attributes[ROUND] = round_number
    measured = {METHOD: "tools/call", OPERATION: "execute_tool", TOOL_NAME: tool}  # a registered tool
    span = telemetry.tracer.start_span(
        f"execute_tool {tool}",
        context=parent,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        links=links or None,
    )
    return RoundWatch(
        telemetry,
        span,
        trace.set_span_in_context(span, parent),
        "tools/call",
        True,
        measured,
        round_number or None,
    )


class RoundWatch(Watch):
    """One background round of a task: a request's watch, ended by the round's outcome, not by an answer.

    It records no `mcp.server.operation.duration` (no request was waiting on
    it); the task's last round records `mcp_resolve.call.rounds`.
    """

    __slots__ = ()

    def finish_round(self, outcome: tuple[str, Any] | None) -> None:
        kind, value = outcome if outcome is not None else ("cancelled", None)
        message: dict[str, Any] | None = None  # cancelled: by the client, or the server stopped
        if kind == "done" and isinstance(value, dict):
            message = {"result": value}
        elif kind == "failed":
            message = {"error": value}
        measured, call_ended = self.end(message)
        if call_ended and self.round:
            self.telemetry.rounds.record(self.round, round_attributes(measured))
