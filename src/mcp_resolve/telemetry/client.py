"""A `Client` request's CLIENT span, and the trace context it carries to the server in `params._meta`.

MCP's semantic conventions give the client a span per request, named like the
server's (`{mcp.method.name} {target}`), whose context the request carries so
that the server's span continues the same trace. The span is made through the
global tracer provider only once one is set (an SDK configured, or
`opentelemetry-instrument`); before that the request still carries whatever
trace context is current, as it always did. What the caller sends
(arguments, URIs' contents, error texts) is not recorded; the names it chose
are, bounded like the server's.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from .attributes import (
    ERROR_TYPE,
    MAX_NAME,
    MAX_URI,
    METHOD,
    OPERATION,
    PROMPT_NAME,
    REQUEST_ID,
    RESOURCE_URI,
    STATUS_CODE,
    TOOL_NAME,
    clip,
    error_type,
)
from .instruments import OPERATION_DURATION_BUCKETS
from .propagation import inject_trace_context
from .sdk import globals_configured

Exchange = Callable[[str, int, dict[str, Any]], Awaitable[dict[str, Any]]]

_NAME = "mcp_resolve.client"
_tracer = trace.get_tracer(_NAME)  # a proxy: the global provider is looked up once it is set
_duration = metrics.get_meter(_NAME).create_histogram(
    "mcp.client.operation.duration",
    unit="s",
    description="MCP request duration as observed on the client, from sending to the answer.",
    explicit_bucket_boundaries_advisory=OPERATION_DURATION_BUCKETS,
)


async def observe_client_request(
    method: str, request_id: int, params: dict[str, Any], exchange: Exchange
) -> dict[str, Any]:
    """Send `params` through `exchange` inside the request's CLIENT span, its context in `_meta`."""
    if not globals_configured():
        inject_trace_context(params)  # nothing to record; pass on whatever context is current
        return await exchange(method, request_id, params)
    attributes, measured, name = _describe(method, request_id, params)
    started = time.perf_counter()
    with _tracer.start_as_current_span(
        name,
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        inject_trace_context(params)
        try:
            result = await exchange(method, request_id, params)
        except BaseException as exc:
            failure = error_type(exc) if isinstance(exc, Exception) else "cancelled"
            span.set_attribute(ERROR_TYPE, failure)
            if str(getattr(exc, "code", "")) == failure:  # an MCPError: its JSON-RPC code
                span.set_attribute(STATUS_CODE, failure)
            span.set_status(
                Status(StatusCode.ERROR)
            )  # no description: a server's message may quote arguments
            _duration.record(time.perf_counter() - started, {**measured, ERROR_TYPE: failure})
            raise
        if method == "tools/call" and result.get("isError") is True:
            span.set_attribute(ERROR_TYPE, "tool_error")
            span.set_status(Status(StatusCode.ERROR))
            measured = {**measured, ERROR_TYPE: "tool_error"}
        _duration.record(time.perf_counter() - started, measured)
        return result


def _describe(
    method: str, request_id: int, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The span's attributes, the metric's (no request id, no URI), and the span's name."""
    method = clip(method, 64)
    attributes: dict[str, Any] = {METHOD: method, REQUEST_ID: str(request_id)}
    target = params.get("name")
    target = clip(target, MAX_NAME) if isinstance(target, str) else None
    if method == "tools/call":
        attributes[OPERATION] = "execute_tool"
        if target is not None:
            attributes[TOOL_NAME] = target
    elif method == "prompts/get" and target is not None:
        attributes[PROMPT_NAME] = target
    else:
        target = None
    uri = params.get("uri")
    if method.startswith("resources/") and isinstance(uri, str):
        attributes[RESOURCE_URI] = clip(uri, MAX_URI)
    measured = {
        key: value for key, value in attributes.items() if key in (METHOD, OPERATION, TOOL_NAME, PROMPT_NAME)
    }
    return attributes, measured, method if target is None else f"{method} {target}"
