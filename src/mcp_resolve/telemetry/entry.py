"""The entry: `instrument(server)` gives the server a `Telemetry`, which the protocol layer then calls.

`Telemetry` is what `MCPServer.telemetry` holds (the `ServerTelemetry` of
`protocol/hooks.py`): the server's tracer, meter and instruments, and the two
calls the protocol layer makes, one per request (`requests`) and one per
background round of a task (`rounds`).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace

from . import instruments
from .attributes import KNOWN_VERSIONS, PROTOCOL_VERSION, TASK_REFUSAL_REASON, TASK_REFUSAL_STAGE
from .requests import observe_request
from .rounds import observe_task_round
from .sdk import globals_configured, load_named_providers

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ..protocol.hooks import RequestWatch
    from ..protocol.jsonrpc import IncomingRequest
    from ..resolve.run import RunObserver
    from ..server import MCPServer

INSTRUMENTATION_NAME = "mcp_resolve"

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


def instrument(
    server: MCPServer,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    record_arguments: Iterable[str] = (),
    record_questions: bool = False,
) -> Telemetry:
    """Trace and measure every request `server` serves, on every transport and both eras.

    Without providers, the global ones are used (`opentelemetry.trace` and
    `opentelemetry.metrics`), looked up when each span or measurement is made,
    so the SDK may be configured before or after this call. `record_arguments`
    names the tools whose call arguments are recorded
    (`gen_ai.tool.call.arguments`); for every other tool they never are.
    `record_questions=True` records what each question says on its span
    (`mcp_resolve.question.text`: the `Elicit` message, the `Sample` prompt);
    off by default, since that wording often quotes personal data.
    """
    telemetry = Telemetry(
        server,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        record_arguments=record_arguments,
        record_questions=record_questions,
    )
    server.telemetry = telemetry
    return telemetry


def instrument_by_default(server: MCPServer) -> Telemetry:
    """What every server gets at construction (unless turned off): telemetry that follows the globals.

    Unlike `instrument`, it observes a request only once a global tracer or
    meter provider is set (an SDK configured in code, or by
    `opentelemetry-instrument`): until then a request costs one check and
    no OpenTelemetry call at all.
    """
    telemetry = Telemetry(server, follow_globals=True)
    server.telemetry = telemetry
    return telemetry


def uninstrument(server: MCPServer) -> None:
    """Stop observing `server`: its requests go back to costing one check each."""
    server.telemetry = None


class Telemetry:
    """A server's tracer, meter and instruments; `MCPServer.telemetry` once `instrument` set it."""

    def __init__(
        self,
        server: MCPServer,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        record_arguments: Iterable[str] = (),
        record_questions: bool = False,
        follow_globals: bool = False,
    ) -> None:
        from .. import __version__

        if isinstance(record_arguments, str):
            raise TypeError("record_arguments takes tool names, e.g. ['refund_order']")
        self._server = weakref.ref(server)
        self._following = follow_globals and tracer_provider is None and meter_provider is None
        if self._following:
            load_named_providers()  # one named by OTEL_PYTHON_*_PROVIDER is loaded now, not per request
        self.record_arguments = frozenset(record_arguments)
        self.record_questions = bool(record_questions)
        self.methods = server.served_methods() | _PROTOCOL_METHODS
        self.tracer = trace.get_tracer(INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(INSTRUMENTATION_NAME, __version__, meter_provider=meter_provider)
        self.operation_duration = instruments.operation_duration(meter)
        self.session_duration = instruments.session_duration(meter)
        self.resolver_duration = instruments.resolver_duration(meter)
        self.rounds = instruments.rounds(meter)
        self.questions = instruments.questions(meter)
        self.rejections = instruments.rejections(meter)
        self.task_refusals = instruments.task_refusals(meter)
        instruments.active_sessions(meter, self._server)

    @property
    def active(self) -> bool:
        """Whether to observe now: always once instrumented, by default once a global provider is set.

        A global provider is set once and never unset, so once seen it is
        not looked up again.
        """
        if self._following and not globals_configured():
            return False
        self._following = False
        return True

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
        return await observe_request(
            self, request, meta, headers, respond, modern=modern, protocol_version=protocol_version
        )

    def session_ended(self, duration: float, protocol_version: str | None, *, http: bool) -> None:
        """A handshake-era session closed after `duration` seconds: `mcp.server.session.duration`."""
        attributes: dict[str, Any] = {"network.transport": "tcp" if http else "pipe"}
        if http:
            attributes["network.protocol.name"] = "http"
        if protocol_version in KNOWN_VERSIONS:
            attributes[PROTOCOL_VERSION] = protocol_version
        self.session_duration.record(duration, attributes)

    def task_refused(self, reason: str, stage: str) -> None:
        """A task write refused: `reason` the bound (a `TaskOptions` name, or "too_large"), `stage` where."""
        self.task_refusals.add(1, {TASK_REFUSAL_REASON: reason, TASK_REFUSAL_STAGE: stage})

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
        return await observe_task_round(
            self,
            tool=tool,
            task_id=task_id,
            round_number=round_number,
            trace_context=trace_context,
            trigger=trigger,
            run=run,
        )
