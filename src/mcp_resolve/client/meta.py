"""What the client puts in a request's `_meta`: the 2026-07-28 era's keys, a caller's own, trace context.

On 2026-07-28 every request is stateless, so it carries the client's
protocol version, info, capabilities and log level itself; those keys are
the client's, and a caller's `meta=` cannot replace them. A caller that
traces with OpenTelemetry gets a CLIENT span per request, whose trace
context the request carries to parent the server's span.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

__all__ = ["ERA_META_KEYS", "ClientRequestObserver", "callers_meta", "era_meta", "request_observer"]

ERA_META_KEYS = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY})
"""The `_meta` keys the client sets itself on 2026-07-28; a caller's `meta=` cannot replace them."""

ClientRequestObserver = Callable[
    [str, int, dict[str, Any], Callable[[str, int, dict[str, Any]], Awaitable[dict[str, Any]]]],
    Awaitable[dict[str, Any]],
]
"""`async (method, request_id, params, exchange) -> result`: sends a request through `exchange`, observed."""

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


def request_observer() -> ClientRequestObserver | None:
    """What sends each request inside a CLIENT span with its trace context in `_meta`, or None.

    Only a process that traces (or whose libraries do) has loaded
    OpenTelemetry; a caller that does not pays one lookup, and nothing is
    imported. The span is made only once a global tracer or meter provider
    is set; before that the request carries the current trace context alone.
    """
    if _TRACING not in sys.modules:
        return None
    try:
        from ..telemetry.client import observe_client_request
    except ImportError:  # OpenTelemetry half there (its trace module, not its API): nothing to send
        return None
    return observe_client_request
