"""A request's SERVER span: started before the request is served, named and attributed after the conventions.

The span is named `{mcp.method.name} {target}` when the target is a
registered tool or prompt, and only then does the target enter a metric
attribute; an unknown method is `_OTHER`. Its parent is what `propagation`
finds (the client's `_meta`, the ambient HTTP span, the `traceparent`
header). A span that cannot be started costs the client nothing: the request
is then served unobserved.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from .attributes import (
    KNOWN_VERSIONS,
    MAX_ARGUMENTS,
    MAX_NAME,
    MAX_URI,
    METHOD,
    OPERATION,
    OTHER,
    PROMPT_NAME,
    PROTOCOL_VERSION,
    REQUEST_ID,
    RESOURCE_URI,
    ROUND,
    SESSION_ID,
    TASK_ID,
    TOOL_ARGUMENTS,
    TOOL_NAME,
    clip,
    json_text,
    request_id,
    session_digest,
    task_digest,
)
from .propagation import request_parent
from .watch import UNOBSERVED, Watch

if TYPE_CHECKING:
    from ..protocol.hooks import RequestWatch
    from ..protocol.jsonrpc import IncomingRequest
    from .entry import Telemetry

logger = logging.getLogger("mcp_resolve.telemetry")

_MULTI_ROUND = frozenset({"tools/call", "prompts/get", "resources/read"})
_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


async def observe_request(
    telemetry: Telemetry,
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
        watch = _start(telemetry, request, meta, headers, modern, protocol_version)
    except Exception:  # telemetry must never cost a client its answer
        logger.exception("could not start the span of %s; serving it unobserved", request.method)
        return await respond(UNOBSERVED)
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
    telemetry: Telemetry,
    request: IncomingRequest,
    meta: Any,
    headers: Mapping[str, str] | None,
    modern: bool,
    protocol_version: str | None,
) -> Watch:
    server = telemetry._server()  # its tools and prompts now: more may be registered after instrument()
    method, params = request.method, request.params
    known = method in telemetry.methods
    attributes: dict[str, Any] = {
        METHOD: method if known else clip(method, 64),
        REQUEST_ID: request_id(request.id),
    }
    measured: dict[str, Any] = {METHOD: method if known else OTHER}
    target: str | None = None
    if method == "tools/call":
        attributes[OPERATION] = measured[OPERATION] = "execute_tool"
        target = _target(
            params, TOOL_NAME, server.registry.tools if server is not None else {}, attributes, measured
        )
        if target is not None and target in telemetry.record_arguments:
            attributes[TOOL_ARGUMENTS] = clip(json_text(params.get("arguments")), MAX_ARGUMENTS)
    elif method == "prompts/get":
        target = _target(
            params, PROMPT_NAME, server.registry.prompts if server is not None else {}, attributes, measured
        )
    elif method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        uri = params.get("uri")
        if isinstance(uri, str):
            attributes[RESOURCE_URI] = clip(uri, MAX_URI)  # on the span only: unbounded cardinality
    elif method in _TASK_METHODS:
        task_id = task_digest(params.get("taskId"))
        if task_id is not None:
            attributes[TASK_ID] = task_id
    if isinstance(protocol_version, str):
        if protocol_version in KNOWN_VERSIONS:
            attributes[PROTOCOL_VERSION] = measured[PROTOCOL_VERSION] = protocol_version
        else:
            attributes[PROTOCOL_VERSION] = clip(protocol_version, 32)
    if headers is not None:
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        session_id = headers.get("mcp-session-id")
        if isinstance(session_id, str) and session_id:
            attributes[SESSION_ID] = session_digest(session_id)
    round_number: int | None = None
    if modern and method in _MULTI_ROUND and params.get("requestState") is None:
        round_number = attributes[ROUND] = 1
    name = measured[METHOD] if target is None else f"{measured[METHOD]} {target}"
    parent, links = request_parent(meta, headers)
    span = telemetry.tracer.start_span(
        name, context=parent, kind=SpanKind.SERVER, attributes=attributes, links=links
    )
    return Watch(
        telemetry, span, trace.set_span_in_context(span, parent), method, modern, measured, round_number
    )


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
    attributes[attribute] = clip(name, MAX_NAME)
    if name not in registered:
        return None
    measured[attribute] = name
    return name
