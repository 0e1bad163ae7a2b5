"""One request's span while it is served, and how it ends: the `RequestWatch` the protocol layer hands down.

The protocol layer passes the watch to the resolver engine (which opens a
resolver span through it), to the questioner it builds, and to the code that
opens and seals requestState. When the answer is made, the watch ends the
span with its outcome: the JSON-RPC error code or `tool_error`, never an
error's text, and whether the call ended or goes on (an `input_required`
round, a task). `UNOBSERVED` stands in when a span could not be started.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Status, StatusCode

from .attributes import (
    ERROR_TYPE,
    KNOWN_VERSIONS,
    LINK_KIND,
    METHOD,
    OTHER,
    PROTOCOL_VERSION,
    REJECTION_REASON,
    RESULT_TYPE,
    ROUND,
    STATUS_CODE,
    TASK_ID,
    task_digest,
)
from .instruments import round_attributes
from .propagation import W3C
from .resolvers import ResolverSpan, WatchedQuestioner
from .sealed_trace import read_note, write_note

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.trace import Span, SpanContext

    from ..resolve.run import Questioner
    from .entry import Telemetry


class Watch:
    """One request's span and measurements; the `RequestWatch` the protocol layer hands down."""

    __slots__ = ("context", "first", "measured", "method", "modern", "round", "span", "telemetry")

    def __init__(
        self,
        telemetry: Telemetry,
        span: Span,
        context: OtelContext,
        method: str,
        modern: bool,
        measured: dict[str, Any],
        round_number: int | None,
    ) -> None:
        self.telemetry = telemetry
        self.span = span
        self.context = context
        self.method = method
        self.modern = modern
        self.measured = measured
        self.round = round_number
        """Which round of its call this request is (2026-07-28); 0 when unknown, None when not a round."""
        self.first: SpanContext | None = None
        """The span context of the call's first round, once a requestState brought it."""

    # -- RunObserver --------------------------------------------------------------------------
    def resolver(self, name: str) -> ResolverSpan:
        return ResolverSpan(self.telemetry, name)

    # -- RequestWatch -------------------------------------------------------------------------
    def questioner(self, inner: Questioner) -> Questioner:
        return WatchedQuestioner(self.telemetry, inner, live=not self.modern)

    def state_opened(self, carried: str | None) -> None:
        first, self.round = read_note(carried)
        if self.round:
            self.span.set_attribute(ROUND, self.round)
        if first is not None:
            self.first = first
            self.span.add_link(first, {LINK_KIND: "first_round"})

    def state_rejected(self, reason: str) -> None:
        self.telemetry.rejections.add(1, {METHOD: self.measured[METHOD], REJECTION_REASON: reason})

    def trace_context(self) -> dict[str, str] | None:
        if not self.span.get_span_context().is_valid:  # no tracer (a no-op provider): nothing to hang under
            return None
        carrier: dict[str, str] = {}
        W3C.inject(carrier, context=self.context)
        return carrier or None

    def carry(self) -> str:
        first = self.first if self.first is not None else self.span.get_span_context()
        return write_note(first, self.round + 1 if self.round else 0)

    # -- the end ------------------------------------------------------------------------------
    def finish(self, message: dict[str, Any] | None, duration: float) -> None:
        """End the span with the answer's outcome; record the request's duration and, at a call's end, its rounds."""
        measured, call_ended = self.end(message)
        telemetry = self.telemetry
        telemetry.operation_duration.record(duration, measured)
        if call_ended and self.round:
            telemetry.rounds.record(self.round, round_attributes(measured))

    def end(self, message: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """End the span with the outcome `message` says; the metric attributes, and whether the call ended."""
        span, measured = self.span, self.measured
        error_type: str | None = None
        call_ended = message is not None
        if message is None:
            error_type = "cancelled"
        elif "error" in message:
            error = message["error"]
            code = error.get("code") if isinstance(error, dict) else None
            error_type = str(code) if isinstance(code, int) else OTHER
            span.set_attribute(STATUS_CODE, error_type)
        else:
            result = message.get("result")
            result = result if isinstance(result, dict) else {}
            if result.get("isError") is True:
                error_type = "tool_error"  # the conventions' value for a CallToolResult with isError
            if self.method == "initialize":
                version = result.get("protocolVersion")
                if isinstance(version, str) and version in KNOWN_VERSIONS:
                    span.set_attribute(PROTOCOL_VERSION, version)
                    measured[PROTOCOL_VERSION] = version
            if result.get("resultType") == "input_required":
                span.set_attribute(RESULT_TYPE, "input_required")
                call_ended = False
            elif result.get("resultType") == "task":  # the call goes on in the task's rounds, which count it
                span.set_attribute(RESULT_TYPE, "task")
                task_id = task_digest(result.get("taskId"))
                if task_id is not None:
                    span.set_attribute(TASK_ID, task_id)
                call_ended = False
        if error_type is not None:
            span.set_attribute(ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR))  # no description: an error's text may quote arguments
            measured = {**measured, ERROR_TYPE: error_type}
        span.end()
        return measured, call_ended


class _Unobserved:
    """The watch of a request whose span could not be started: observes nothing, breaks nothing."""

    __slots__ = ()

    def resolver(self, name: str) -> Any:
        return contextlib.nullcontext()

    def questioner(self, inner: Questioner) -> Questioner:
        return inner

    def state_opened(self, carried: str | None) -> None:
        pass

    def state_rejected(self, reason: str) -> None:
        pass

    def carry(self) -> str | None:
        return None

    def trace_context(self) -> dict[str, str] | None:
        return None


UNOBSERVED: Any = _Unobserved()
