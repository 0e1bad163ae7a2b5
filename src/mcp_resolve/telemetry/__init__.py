"""OpenTelemetry traces and metrics for an MCP server: each request, each resolver, each question, each round.

On by default: every server built where `opentelemetry-api` is installed gets
a `Telemetry` (`instrument_by_default`), which observes requests once a global
tracer or meter provider is set; `instrument(mcp, tracer_provider=...)` names
providers explicitly. The server module imports this package only when
OpenTelemetry is installed (and the client only once its caller has loaded
OpenTelemetry), so without `mcp-resolve[otel]` nothing of it is imported; a
request costs one check while no SDK is configured, or with `telemetry=False`.

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
  `record_arguments` opts named tools in to `gen_ai.tool.call.arguments`,
  and `record_questions` a server in to what its questions say
  (`mcp_resolve.question.text`).
  Session ids are recorded as a digest, since on an open server the id
  itself is all it takes to speak in the session.
* Every value that comes from the client is bounded before it goes near a
  span or a metric: unknown methods and tools become `_OTHER` / are left out of
  names and metric attributes (no cardinality explosion), long strings are
  cut, and a `traceparent` that is not a string of sane length is ignored.

The modules, each one part of that: `entry` (`instrument`, and the
`Telemetry` the protocol layer calls), `requests` (a request's span),
`watch` (what a span sees while its request is served, and how it ends),
`resolvers` (resolver and question spans), `rounds` (a task's background
rounds), `sealed_trace` (what rides in requestState between rounds),
`propagation` (W3C trace context in and out), `client` (a `Client` request's
span), `sdk` (whether a global provider is set), `instruments` (the metrics),
`attributes` (the names recorded, and the bounds on what a client sends).
"""

from __future__ import annotations

try:  # first, before any module here imports it: its absence then says what to install
    import opentelemetry.metrics
    import opentelemetry.propagate
    import opentelemetry.trace.propagation.tracecontext  # noqa: F401 - imported for its ImportError
except ImportError as exc:  # pragma: no cover - exercised by the import test in a subprocess
    raise ImportError(
        f"{exc}; mcp_resolve.telemetry needs OpenTelemetry: pip install 'mcp-resolve[otel]'"
    ) from exc

from .entry import INSTRUMENTATION_NAME, Telemetry, instrument, uninstrument
from .propagation import inject_trace_context

__all__ = [
    "INSTRUMENTATION_NAME",
    "Telemetry",
    "inject_trace_context",
    "instrument",
    "uninstrument",
]
