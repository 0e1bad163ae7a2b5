"""What the client puts in a request's `_meta`: the 2026-07-28 era's keys, a caller's own, trace context.

On 2026-07-28 every request is stateless, so it carries the client's
protocol version, info, capabilities and log level itself; those keys are
the client's, and a caller's `meta=` cannot replace them. A caller that
traces with OpenTelemetry also sends its trace context, to parent the
server's span.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

__all__ = ["ERA_META_KEYS", "callers_meta", "era_meta", "traced"]

ERA_META_KEYS = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY})
"""The `_meta` keys the client sets itself on 2026-07-28; a caller's `meta=` cannot replace them."""

_TRACING = "opentelemetry.trace"
"""Loaded only in a process that traces (or whose libraries do): then requests carry its trace context."""


def era_meta(
    version: str, capabilities: dict[str, Any], client_info: dict[str, Any], log_level: str | None
) -> dict[str, Any]:
    """The `_meta` a 2026-07-28 request carries: who the client is and what it can do, at `version`."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION_META_KEY: version,
        CLIENT_CAPABILITIES_META_KEY: capabilities,
        CLIENT_INFO_META_KEY: client_info,
    }
    if log_level is not None:
        meta[LOG_LEVEL_META_KEY] = log_level
    return meta


def callers_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """A caller's `meta=`, without the keys the client owns."""
    return {key: value for key, value in meta.items() if key not in ERA_META_KEYS}


def traced(params: dict[str, Any]) -> dict[str, Any]:
    """`params`, with the caller's trace context (W3C `traceparent`, `tracestate`, `baggage`) in `_meta`.

    Only a caller that traces has loaded OpenTelemetry; its context travels in
    `_meta`, where MCP's semantic conventions put it, to parent the server's
    span. A caller that does not pays one lookup, and nothing is imported.
    """
    if _TRACING not in sys.modules:
        return params
    try:
        from ..telemetry import inject_trace_context
    except ImportError:  # OpenTelemetry half there (its trace module, not its API): nothing to send
        return params
    inject_trace_context(params)
    return params
