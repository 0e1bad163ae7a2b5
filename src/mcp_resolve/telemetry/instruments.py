"""The metrics an instrumented server records: their names, units, buckets and attributes.

`Telemetry` makes each once, from its meter, and keeps it under the same name
(`telemetry.rounds` is `rounds(meter)`); the spans' code records into them.
docs/observability.md lists them for users; names and buckets follow
OpenTelemetry's semantic conventions for MCP where they define the metric.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics

from .attributes import ERROR_TYPE, METHOD, PROMPT_NAME, TOOL_NAME

if TYPE_CHECKING:
    import weakref

    from opentelemetry.metrics import CallbackOptions, Counter, Histogram, Meter, Observation

    from ..server import MCPServer

OPERATION_DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
"""The boundaries MCP's semantic conventions give `mcp.server.operation.duration` (and the session's)."""
RESOLVER_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
"""A resolver is often a lookup of a millisecond or less: finer at the bottom than a request's."""
ROUND_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10]


def operation_duration(meter: Meter) -> Histogram:
    return meter.create_histogram(
        "mcp.server.operation.duration",
        unit="s",
        description="MCP request duration as observed on the server, from receipt to answer.",
        explicit_bucket_boundaries_advisory=OPERATION_DURATION_BUCKETS,
    )


def session_duration(meter: Meter) -> Histogram:
    """A handshake-era session, from `initialize` to its end (the stream closed, DELETE, expiry)."""
    return meter.create_histogram(
        "mcp.server.session.duration",
        unit="s",
        description="The duration of the MCP session as observed on the MCP server.",
        explicit_bucket_boundaries_advisory=OPERATION_DURATION_BUCKETS,
    )


def resolver_duration(meter: Meter) -> Histogram:
    return meter.create_histogram(
        "mcp_resolve.resolver.duration",
        unit="s",
        description="How long one resolver took, its question to the client included (handshake era).",
        explicit_bucket_boundaries_advisory=RESOLVER_DURATION_BUCKETS,
    )


def rounds(meter: Meter) -> Histogram:
    """Recorded once a call ends, with `round_attributes` of its last request."""
    return meter.create_histogram(
        "mcp_resolve.call.rounds",
        unit="{round}",
        description="Rounds a 2026-07-28 call took to finish (1: no input_required round).",
        explicit_bucket_boundaries_advisory=ROUND_BUCKETS,
    )


def questions(meter: Meter) -> Counter:
    return meter.create_counter(
        "mcp_resolve.questions",
        unit="{question}",
        description="Questions resolvers asked the client, by kind and outcome.",
    )


def rejections(meter: Meter) -> Counter:
    return meter.create_counter(
        "mcp_resolve.request_state.rejections",
        unit="{rejection}",
        description="Echoed requestState refused: invalid (tampered, expired, moved) or replayed.",
    )


def task_refusals(meter: Meter) -> Counter:
    return meter.create_counter(
        "mcp_resolve.tasks.refusals",
        unit="{refusal}",
        description="Task writes refused because a bound of the task store would be passed, by bound and stage.",
    )


def active_sessions(meter: Meter, server: weakref.ref[MCPServer]) -> None:
    """Observe the server's open sessions, for as long as it lives (the gauge does not keep it alive)."""

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        alive = server()
        if alive is None:
            return []
        return [metrics.Observation(len(alive.connections))]

    meter.create_observable_up_down_counter(
        "mcp_resolve.server.active_sessions",
        callbacks=[observe],
        unit="{session}",
        description="Handshake-era sessions open in this process (2026-07-28 has none).",
    )


def round_attributes(measured: dict[str, Any]) -> dict[str, Any]:
    """A call's rounds are counted by method, tool or prompt, and error: not by version or operation."""
    return {
        key: value for key, value in measured.items() if key in (METHOD, TOOL_NAME, PROMPT_NAME, ERROR_TYPE)
    }
