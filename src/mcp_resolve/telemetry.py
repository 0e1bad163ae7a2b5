"""OpenTelemetry traces and metrics for an MCP server: each request, each resolver, each question, each round.

Opt-in per server: `instrument(mcp)` sets `mcp.telemetry`, and only then does
the protocol layer call in here. Nothing else in the package imports this
module (the client loads it only once its caller has loaded OpenTelemetry), so
a server without `mcp-resolve[otel]` never imports OpenTelemetry, and an
uninstrumented one pays one attribute check a request.

What is recorded, and why it is shaped so (docs/observability.md has the list):

* One SERVER span per request, on both eras and every transport, named and
  attributed after OpenTelemetry's semantic conventions for MCP
  (`{mcp.method.name} {target}`, `mcp.method.name`, `jsonrpc.request.id`,
  `mcp.protocol.version`, `gen_ai.tool.name`, `error.type`, ...). Its parent
  is the trace context the client put in `params._meta` (SEP-414); failing
  that, the ambient span (an ASGI instrumentation's HTTP span, which is then
  the parent, so there is no second transport span); failing that, the
  `traceparent` header. When `_meta` wins, the ambient span is linked.
* One INTERNAL span per resolver, current while the resolver runs (the
  resolver's own spans nest under it; concurrent resolvers are overlapping
  siblings), saying whether it asked and how it ended.
* One span per question: CLIENT on the handshake era, where it is a real
  request to the client and lasts as long as the person takes; INTERNAL on
  2026-07-28, where it marks the question going out in an `input_required`
  round ("pending") or its answer coming back. An answer recorded in the
  requestState from an earlier round is not counted again.
* The rounds of one 2026-07-28 call are tied together: the first round's span
  context and the round number ride in the sealed requestState (`carry`), so
  each later round's span links to the first and knows its number.
* A task's rounds run in the background, after the request that started them
  was answered: each gets an INTERNAL `execute_tool {tool}` span, a child of
  the creating `tools/call` span (its W3C context is kept on the task record,
  written from our own span, never copied from the client), linked to the
  `tasks/update` that started it, with the round's resolvers and questions
  under it as under a direct call's request span.
* Argument values, answers, error messages and exception texts are never
  recorded: they carry what the person typed or what a tool was called with.
  `record_arguments` opts named tools in to `gen_ai.tool.call.arguments`.
  Session ids are recorded as a digest, since on an open server the id
  itself is all it takes to speak in the session.
* Every value that comes from the client is bounded before it goes near a
  span or a metric: unknown methods and tools become `_OTHER` / are left out of
  names and metric attributes (no cardinality explosion), long strings are
  cut, and a `traceparent` that is not a string of sane length is ignored.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import re
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, propagate, trace
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError as exc:  # pragma: no cover - exercised by the import test in a subprocess
    raise ImportError(
        f"{exc}; mcp_resolve.telemetry needs OpenTelemetry: pip install 'mcp-resolve[otel]'"
    ) from exc

import pydantic_core
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from .resolve.run import PENDING
from .resolve.state import question_digest

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
    from opentelemetry.propagators.textmap import TextMapPropagator
    from opentelemetry.trace import Span, TracerProvider

    from .protocol.hooks import RequestWatch
    from .protocol.jsonrpc import IncomingRequest
    from .resolve.questions import Question
    from .resolve.run import Questioner, RunObserver
    from .server import MCPServer

__all__ = [
    "INSTRUMENTATION_NAME",
    "Telemetry",
    "inject_trace_context",
    "instrument",
    "uninstrument",
]

logger = logging.getLogger("mcp_resolve.telemetry")

INSTRUMENTATION_NAME = "mcp_resolve"

OPERATION_DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
"""The boundaries MCP's semantic conventions give `mcp.server.operation.duration`."""
RESOLVER_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
"""A resolver is often a lookup of a millisecond or less: finer at the bottom than a request's."""
ROUND_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10]

# Attribute names: the semantic conventions' where they have one, ours under `mcp_resolve.` otherwise.
METHOD = "mcp.method.name"
REQUEST_ID = "jsonrpc.request.id"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
RESOURCE_URI = "mcp.resource.uri"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
RESULT_TYPE = "mcp_resolve.result_type"
ROUND = "mcp_resolve.round"
LINK_KIND = "mcp_resolve.link.kind"
RESOLVER_NAME = "mcp_resolve.resolver.name"
RESOLVER_ASKED = "mcp_resolve.resolver.asked"
RESOLVER_OUTCOME = "mcp_resolve.resolver.outcome"
QUESTION_KIND = "mcp_resolve.question.kind"
QUESTION_KEY = "mcp_resolve.question.key"
QUESTION_OUTCOME = "mcp_resolve.question.outcome"
REJECTION_REASON = "mcp_resolve.rejection.reason"
TASK_ID = "mcp_resolve.task.id"

_OTHER = "_OTHER"
_PROTOCOL_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "server/discover",
    }
)
"""Methods the protocol layer answers itself, beside the server's method table."""
_MULTI_ROUND = frozenset({"tools/call", "prompts/get", "resources/read"})
_KNOWN_VERSIONS = frozenset((*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS))
_QUESTION_KINDS = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
_ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})

_CARRIER_LIMITS = (("traceparent", 256), ("tracestate", 1024), ("baggage", 8192))
"""The W3C keys read from `_meta` or headers (SEP-414 names them), each with the longest value taken.

A version-00 `traceparent` is 55 characters; W3C asks platforms to propagate
at least 512 of `tracestate` and 8192 bytes of `baggage`. Anything longer, or
not a string, is dropped before a propagator sees it.
"""
_W3C = TraceContextTextMapPropagator()
"""What a task record keeps its creating span in: W3C, whatever propagators the process configured,
so a worker with other settings still reads it."""
_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
_MAX_TASK_ID = 128
_CARRY = re.compile(r"(?:([0-9a-f]{32})([0-9a-f]{16})([0-9a-f]{2})|-)/([0-9]{1,4})")
_MAX_ID, _MAX_NAME, _MAX_URI, _MAX_ARGUMENTS = 128, 128, 256, 4096

_current_resolver: contextvars.ContextVar[_ResolverSpan | None] = contextvars.ContextVar(
    "mcp_resolve_current_resolver", default=None
)
"""The resolver whose span is open in this task: its question marks it as having asked."""


def instrument(
    server: MCPServer,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    record_arguments: Iterable[str] = (),
) -> Telemetry:
    """Trace and measure every request `server` serves, on every transport and both eras.

    Without providers, the global ones are used (`opentelemetry.trace` and
    `opentelemetry.metrics`), looked up when each span or measurement is made,
    so the SDK may be configured before or after this call. `record_arguments`
    names the tools whose call arguments are recorded
    (`gen_ai.tool.call.arguments`); for every other tool they never are.
    """
    telemetry = Telemetry(
        server,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        record_arguments=record_arguments,
    )
    server.telemetry = telemetry
    return telemetry


def uninstrument(server: MCPServer) -> None:
    """Stop observing `server`: its requests go back to costing one check each."""
    server.telemetry = None


def inject_trace_context(params: dict[str, Any]) -> None:
    """Put the current trace context in a request's `params._meta`, with the configured propagators.

    What `Client` does to each request when its process traces. A `_meta`
    key the caller set explicitly is kept.
    """
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if carrier:
        meta = params.get("_meta")
        params["_meta"] = {**carrier, **meta} if isinstance(meta, dict) else carrier


class Telemetry:
    """A server's tracer, meter and instruments; `MCPServer.telemetry` once `instrument` set it."""

    def __init__(
        self,
        server: MCPServer,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        record_arguments: Iterable[str] = (),
    ) -> None:
        from . import __version__

        if isinstance(record_arguments, str):
            raise TypeError("record_arguments takes tool names, e.g. ['refund_order']")
        self._server = weakref.ref(server)
        self.record_arguments = frozenset(record_arguments)
        self.methods = frozenset(getattr(server, "_handlers", ())) | _PROTOCOL_METHODS
        self.tracer = trace.get_tracer(INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(INSTRUMENTATION_NAME, __version__, meter_provider=meter_provider)
        self.operation_duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="MCP request duration as observed on the server, from receipt to answer.",
            explicit_bucket_boundaries_advisory=OPERATION_DURATION_BUCKETS,
        )
        self.resolver_duration = meter.create_histogram(
            "mcp_resolve.resolver.duration",
            unit="s",
            description="How long one resolver took, its question to the client included (handshake era).",
            explicit_bucket_boundaries_advisory=RESOLVER_DURATION_BUCKETS,
        )
        self.rounds = meter.create_histogram(
            "mcp_resolve.call.rounds",
            unit="{round}",
            description="Rounds a 2026-07-28 call took to finish (1: no input_required round).",
            explicit_bucket_boundaries_advisory=ROUND_BUCKETS,
        )
        self.questions = meter.create_counter(
            "mcp_resolve.questions",
            unit="{question}",
            description="Questions resolvers asked the client, by kind and outcome.",
        )
        self.rejections = meter.create_counter(
            "mcp_resolve.request_state.rejections",
            unit="{rejection}",
            description="Echoed requestState refused: invalid (tampered, expired, moved) or replayed.",
        )
        meter.create_observable_up_down_counter(
            "mcp_resolve.server.active_sessions",
            callbacks=[self._active_sessions],
            unit="{session}",
            description="Handshake-era sessions open in this process (2026-07-28 has none).",
        )

    # -- a request ---------------------------------------------------------------------------
    async def observe(
        self,
        request: IncomingRequest,
        meta: Any,
        headers: Mapping[str, str] | None,
        respond: Callable[[RequestWatch], Awaitable[dict[str, Any]]],
        *,
        modern: bool,
        protocol_version: str | None,
    ) -> dict[str, Any]:
        """Serve `request` through `respond` inside its span, then record how it went."""
        try:
            watch = self._start(request, meta, headers, modern, protocol_version)
        except Exception:  # telemetry must never cost a client its answer
            logger.exception("could not start the span of %s; serving it unobserved", request.method)
            return await respond(_UNOBSERVED)
        token = otel_context.attach(watch.context)
        started = time.perf_counter()
        message: dict[str, Any] | None = None
        try:
            message = await respond(watch)
            return message
        finally:
            otel_context.detach(token)
            try:
                watch.finish(message, time.perf_counter() - started)
            except Exception:
                logger.exception("could not finish the span of %s", request.method)

    def _start(
        self,
        request: IncomingRequest,
        meta: Any,
        headers: Mapping[str, str] | None,
        modern: bool,
        protocol_version: str | None,
    ) -> _RequestWatch:
        server = self._server()
        method, params = request.method, request.params
        known = method in self.methods
        attributes: dict[str, Any] = {
            METHOD: method if known else _clip(method, 64),
            REQUEST_ID: _request_id(request.id),
        }
        measured: dict[str, Any] = {METHOD: method if known else _OTHER}
        target: str | None = None
        if method == "tools/call":
            attributes[OPERATION] = measured[OPERATION] = "execute_tool"
            target = self._target(params, TOOL_NAME, getattr(server, "_tools", {}), attributes, measured)
            if target is not None and target in self.record_arguments:
                attributes[TOOL_ARGUMENTS] = _clip(_json(params.get("arguments")), _MAX_ARGUMENTS)
        elif method == "prompts/get":
            target = self._target(params, PROMPT_NAME, getattr(server, "_prompts", {}), attributes, measured)
        elif method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
            uri = params.get("uri")
            if isinstance(uri, str):
                attributes[RESOURCE_URI] = _clip(uri, _MAX_URI)  # on the span only: unbounded cardinality
        elif method in _TASK_METHODS:
            task_id = _task_digest(params.get("taskId"))
            if task_id is not None:
                attributes[TASK_ID] = task_id
        if isinstance(protocol_version, str):
            if protocol_version in _KNOWN_VERSIONS:
                attributes[PROTOCOL_VERSION] = measured[PROTOCOL_VERSION] = protocol_version
            else:
                attributes[PROTOCOL_VERSION] = _clip(protocol_version, 32)
        if headers is not None:
            attributes["network.transport"] = "tcp"
            attributes["network.protocol.name"] = "http"
            session_id = headers.get("mcp-session-id")
            if isinstance(session_id, str) and session_id:
                attributes[SESSION_ID] = _session_digest(session_id)
        round_number: int | None = None
        if modern and method in _MULTI_ROUND and params.get("requestState") is None:
            round_number = attributes[ROUND] = 1
        name = measured[METHOD] if target is None else f"{measured[METHOD]} {target}"
        parent, links = _parent(meta, headers)
        span = self.tracer.start_span(
            name, context=parent, kind=SpanKind.SERVER, attributes=attributes, links=links
        )
        return _RequestWatch(
            self, span, trace.set_span_in_context(span, parent), method, modern, measured, round_number
        )

    @staticmethod
    def _target(
        params: dict[str, Any],
        attribute: str,
        registered: Mapping[str, Any],
        attributes: dict[str, Any],
        measured: dict[str, Any],
    ) -> str | None:
        """The tool or prompt a request names: in the span name and metrics only if it is registered."""
        name = params.get("name")
        if not isinstance(name, str):
            return None
        attributes[attribute] = _clip(name, _MAX_NAME)
        if name not in registered:
            return None
        measured[attribute] = name
        return name

    # -- a task's background round -------------------------------------------------------------
    async def observe_task_round(
        self,
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
            watch = self._start_round(tool, task_id, round_number, trace_context, trigger)
        except Exception:  # telemetry must never cost a task its round
            logger.exception("could not start the span of a round of %s; running it unobserved", tool)
            return await run(_UNOBSERVED)
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

    def _start_round(
        self,
        tool: str,
        task_id: str,
        round_number: int,
        trace_context: Mapping[str, str] | None,
        trigger: RunObserver | None,
    ) -> _RoundWatch:
        """The round's span: a child of the creating request's span (a root when the record has none).

        The parent is always explicit: the round's task was spawned by a
        request and inherited that request's current span, which is the
        parent only when it is the creating request itself.
        """
        parent = _extract(trace_context, _W3C) if isinstance(trace_context, Mapping) else None
        if parent is None:
            parent = otel_context.Context()  # created before the server was instrumented: a trace of its own
        parent_span = trace.get_current_span(parent).get_span_context()
        links: list[Link] = []
        if isinstance(trigger, _RequestWatch):
            started_by = trigger.span.get_span_context()
            if started_by.is_valid and started_by.span_id != parent_span.span_id:
                links.append(Link(started_by, {LINK_KIND: "trigger"}))
        attributes: dict[str, Any] = {
            METHOD: "tools/call",
            OPERATION: "execute_tool",
            TOOL_NAME: _clip(tool, _MAX_NAME),
        }
        digest = _task_digest(task_id)
        if digest is not None:
            attributes[TASK_ID] = digest
        if round_number > 0:
            attributes[ROUND] = round_number
        measured = {METHOD: "tools/call", OPERATION: "execute_tool", TOOL_NAME: tool}  # a registered tool
        span = self.tracer.start_span(
            f"execute_tool {tool}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links or None,
        )
        return _RoundWatch(
            self,
            span,
            trace.set_span_in_context(span, parent),
            "tools/call",
            True,
            measured,
            round_number or None,
        )

    def _active_sessions(self, options: CallbackOptions) -> Iterable[Observation]:
        server = self._server()
        if server is None:
            return []
        return [metrics.Observation(len(server.connections))]


class _RequestWatch:
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
    def resolver(self, name: str) -> _ResolverSpan:
        return _ResolverSpan(self.telemetry, name)

    # -- RequestWatch -------------------------------------------------------------------------
    def questioner(self, inner: Questioner) -> Questioner:
        return _WatchedQuestioner(self.telemetry, inner, live=not self.modern)

    def state_opened(self, carried: str | None) -> None:
        match = _CARRY.fullmatch(carried) if carried is not None else None
        if match is None:  # sealed by a server that was not instrumented: which round, nobody knows
            self.round = 0
            return
        trace_id, span_id, flags, round_number = match.groups()
        self.round = int(round_number)
        if self.round:
            self.span.set_attribute(ROUND, self.round)
        if trace_id is not None:
            first = SpanContext(int(trace_id, 16), int(span_id, 16), True, TraceFlags(int(flags, 16)))
            if first.is_valid:
                self.first = first
                self.span.add_link(first, {LINK_KIND: "first_round"})

    def state_rejected(self, reason: str) -> None:
        self.telemetry.rejections.add(1, {METHOD: self.measured[METHOD], REJECTION_REASON: reason})

    def trace_context(self) -> dict[str, str] | None:
        if not self.span.get_span_context().is_valid:  # no tracer (a no-op provider): nothing to hang under
            return None
        carrier: dict[str, str] = {}
        _W3C.inject(carrier, context=self.context)
        return carrier or None

    def carry(self) -> str:
        first = self.first if self.first is not None else self.span.get_span_context()
        next_round = self.round + 1 if self.round else 0
        if not first.is_valid:  # no tracer (a no-op provider): the round number still counts
            return f"-/{min(next_round, 9999)}"
        return (
            f"{first.trace_id:032x}{first.span_id:016x}{int(first.trace_flags):02x}/{min(next_round, 9999)}"
        )

    # -- the end ------------------------------------------------------------------------------
    def finish(self, message: dict[str, Any] | None, duration: float) -> None:
        """End the span with the answer's outcome; record the request's duration and, at a call's end, its rounds."""
        measured, call_ended = self._end(message)
        telemetry = self.telemetry
        telemetry.operation_duration.record(duration, measured)
        if call_ended and self.round:
            telemetry.rounds.record(self.round, _round_attributes(measured))

    def _end(self, message: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        """End the span with the outcome `message` says; the metric attributes, and whether the call ended."""
        span, measured = self.span, self.measured
        error_type: str | None = None
        call_ended = message is not None
        if message is None:
            error_type = "cancelled"
        elif "error" in message:
            error = message["error"]
            code = error.get("code") if isinstance(error, dict) else None
            error_type = str(code) if isinstance(code, int) else _OTHER
            span.set_attribute(STATUS_CODE, error_type)
        else:
            result = message.get("result")
            result = result if isinstance(result, dict) else {}
            if result.get("isError") is True:
                error_type = "tool_error"  # the conventions' value for a CallToolResult with isError
            if self.method == "initialize":
                version = result.get("protocolVersion")
                if isinstance(version, str) and version in _KNOWN_VERSIONS:
                    span.set_attribute(PROTOCOL_VERSION, version)
                    measured[PROTOCOL_VERSION] = version
            if result.get("resultType") == "input_required":
                span.set_attribute(RESULT_TYPE, "input_required")
                call_ended = False
            elif result.get("resultType") == "task":  # the call goes on in the task's rounds, which count it
                span.set_attribute(RESULT_TYPE, "task")
                task_id = _task_digest(result.get("taskId"))
                if task_id is not None:
                    span.set_attribute(TASK_ID, task_id)
                call_ended = False
        if error_type is not None:
            span.set_attribute(ERROR_TYPE, error_type)
            span.set_status(Status(StatusCode.ERROR))  # no description: an error's text may quote arguments
            measured = {**measured, ERROR_TYPE: error_type}
        span.end()
        return measured, call_ended


class _RoundWatch(_RequestWatch):
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
        measured, call_ended = self._end(message)
        if call_ended and self.round:
            self.telemetry.rounds.record(self.round, _round_attributes(measured))


class _ResolverSpan:
    """One resolver's span, current in the resolver's task while it runs; its duration measured too."""

    __slots__ = ("_reset", "_started", "_token", "asked", "name", "pending", "span", "telemetry")

    def __init__(self, telemetry: Telemetry, name: str) -> None:
        self.telemetry = telemetry
        self.name = name
        self.asked = False
        self.pending = False

    def __enter__(self) -> _ResolverSpan:
        self.span = self.telemetry.tracer.start_span(
            f"resolve {self.name}", kind=SpanKind.INTERNAL, attributes={RESOLVER_NAME: self.name}
        )
        self._token = otel_context.attach(trace.set_span_in_context(self.span))
        self._reset = _current_resolver.set(self)
        self._started = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        duration = time.perf_counter() - self._started
        _current_resolver.reset(self._reset)
        otel_context.detach(self._token)
        span = self.span
        if exc is None:
            outcome = "pending" if self.pending else "ok"
        elif isinstance(exc, Exception):
            outcome = "error"
            span.set_attribute(ERROR_TYPE, _error_type(exc))
            span.set_status(Status(StatusCode.ERROR))  # the type only: the message may quote arguments
        else:  # cancelled: a sibling earlier in the order failed, or the request was
            outcome = "cancelled"
        span.set_attribute(RESOLVER_ASKED, self.asked)
        span.set_attribute(RESOLVER_OUTCOME, outcome)
        span.end()
        self.telemetry.resolver_duration.record(
            duration, {RESOLVER_NAME: self.name, RESOLVER_OUTCOME: outcome}
        )


class _WatchedQuestioner:
    """A request's questioner, with a span and a count for each question put to the client."""

    __slots__ = ("_inner", "_live", "_telemetry")

    def __init__(self, telemetry: Telemetry, inner: Questioner, *, live: bool) -> None:
        self._telemetry = telemetry
        self._inner = inner
        self._live = live

    async def ask(self, wire_key: str, question: Question) -> Any:
        resolver = _current_resolver.get()
        if resolver is not None:
            resolver.asked = True
        if self._answered_earlier(wire_key, question):
            # The answer is in the requestState: a round before this one received it, and counted it.
            return await self._inner.ask(wire_key, question)
        method = question.get("method")
        kind = _QUESTION_KINDS.get(method, _OTHER) if isinstance(method, str) else _OTHER
        name = method if isinstance(method, str) and kind != _OTHER else _OTHER
        span = self._telemetry.tracer.start_span(
            name,
            kind=SpanKind.CLIENT if self._live else SpanKind.INTERNAL,
            attributes={METHOD: name, QUESTION_KIND: kind, QUESTION_KEY: wire_key},
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        outcome = "error"
        try:
            answer = await self._inner.ask(wire_key, self._with_context(question) if self._live else question)
        except Exception as exc:
            span.set_attribute(ERROR_TYPE, _error_type(exc))
            span.set_status(Status(StatusCode.ERROR))
            raise
        except BaseException:
            outcome = "cancelled"
            raise
        else:
            if answer is PENDING:
                outcome = "pending"
                if resolver is not None:
                    resolver.pending = True
            else:
                outcome = _outcome(method, answer)
            return answer
        finally:
            otel_context.detach(token)
            span.set_attribute(QUESTION_OUTCOME, outcome)
            span.end()
            self._telemetry.questions.add(1, {QUESTION_KIND: kind, QUESTION_OUTCOME: outcome})

    def input_required(self, pending: dict[str, Question], carried: Mapping[str, Any] | None = None) -> Any:
        return self._inner.input_required(pending, carried)

    def carried(self) -> Mapping[str, Any]:
        return self._inner.carried()

    def _answered_earlier(self, wire_key: str, question: Question) -> bool:
        """Whether the 2026-07-28 questioner will answer from its requestState record (as it does when the
        recorded answer is for this exact wording): the question was asked and answered rounds ago."""
        record = getattr(self._inner, "record", None)
        recorded = None if record is None else record.answers.get(wire_key)
        return recorded is not None and recorded[0] == question_digest(question)

    @staticmethod
    def _with_context(question: Question) -> Question:
        """The question with the current (question span's) trace context in its `_meta`: a real request."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        params = question.get("params")
        if not carrier or not isinstance(params, dict):
            return question
        return {**question, "params": {**params, "_meta": {**carrier, **(params.get("_meta") or {})}}}


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


_UNOBSERVED: Any = _Unobserved()


def _parent(meta: Any, headers: Mapping[str, str] | None) -> tuple[OtelContext | None, list[Link] | None]:
    """The server span's parent context, and its links (the semantic conventions' order of preference).

    `_meta` first: it travels with the MCP message, whatever carried it. The
    ambient span (an ASGI instrumentation's) is then linked; without `_meta`
    it is the parent itself (None: the current context). The HTTP
    `traceparent` header is read only when nothing instrumented the request.
    """
    remote = _extract(meta) if isinstance(meta, dict) else None
    ambient = trace.get_current_span().get_span_context()
    if remote is not None:
        return remote, ([Link(ambient, {LINK_KIND: "transport"})] if ambient.is_valid else None)
    if ambient.is_valid or headers is None:
        return None, None
    return _extract(headers), None


def _extract(source: Mapping[str, Any], propagator: TextMapPropagator | None = None) -> OtelContext | None:
    """The context a client's trace headers name, or None: anything malformed or oversized is ignored.

    With the configured propagators, unless `propagator` says which (a task record's W3C context).
    """
    carrier: dict[str, str] = {}
    for key, limit in _CARRIER_LIMITS:
        value = source.get(key)
        if isinstance(value, str) and len(value) <= limit:
            carrier[key] = value
    if "traceparent" not in carrier:
        return None
    try:
        context = propagate.extract(carrier) if propagator is None else propagator.extract(carrier)
    except Exception:  # a propagator that chokes on what a client wrote is the client's loss, not the call's
        return None
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def _outcome(method: Any, answer: Any) -> str:
    """accept, decline or cancel: an elicitation's action; sampling and roots answers are accepts."""
    if not isinstance(answer, dict):
        return "invalid"
    if method == "elicitation/create":
        action = answer.get("action")
        return action if isinstance(action, str) and action in _ELICITATION_ACTIONS else "invalid"
    return "accept"


def _error_type(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return str(code)  # an MCPError: its JSON-RPC code, as the conventions ask
    return type(exc).__qualname__


def _round_attributes(measured: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value for key, value in measured.items() if key in (METHOD, TOOL_NAME, PROMPT_NAME, ERROR_TYPE)
    }


def _request_id(value: int | str) -> str:
    """The id as the conventions want it, a string; cut, and an absurd integer not even converted."""
    if isinstance(value, int):
        return str(value) if -(10**20) < value < 10**20 else _OTHER  # str() of a huge int raises, or crawls
    return _clip(value, _MAX_ID)


def _session_digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _task_digest(task_id: Any) -> str | None:
    """A task id as spans carry it: a digest, since the id itself is all it takes to read or answer the task."""
    if not isinstance(task_id, str) or not task_id or len(task_id) > _MAX_TASK_ID:
        return None
    return _session_digest(task_id)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    try:
        return pydantic_core.to_json(value, fallback=repr).decode()
    except Exception:
        return repr(value)
