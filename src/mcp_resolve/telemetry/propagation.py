"""W3C trace context in and out: a request's parent, a question's and a client request's `_meta`.

In: what a client names as the parent of its request (SEP-414 puts it in
`params._meta`; HTTP may carry it as headers), read through the configured
propagators once each value is checked to be a string of sane length. Out:
the current span, put in the `_meta` of what we send (a question on the
handshake era, a `Client` request). A task record keeps its creating span as
plain W3C (`W3C`), whatever propagators the process configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from opentelemetry.trace import Link
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .attributes import LINK_KIND

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.propagators.textmap import TextMapPropagator

    from ..resolve.questions import Question

_CARRIER_LIMITS = (("traceparent", 256), ("tracestate", 1024), ("baggage", 8192))
"""The W3C keys read from `_meta` or headers (SEP-414 names them), each with the longest value taken.

A version-00 `traceparent` is 55 characters; W3C asks platforms to propagate
at least 512 of `tracestate` and 8192 bytes of `baggage`. Anything longer, or
not a string, is dropped before a propagator sees it.
"""
W3C = TraceContextTextMapPropagator()
"""What a task record keeps its creating span in: W3C, whatever propagators the process configured,
so a worker with other settings still reads it."""


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


def question_with_context(question: Question) -> Question:
    """The question with the current (question span's) trace context in its `_meta`: a real request."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    params = question.get("params")
    if not carrier or not isinstance(params, dict):
        return question
    return {**question, "params": {**params, "_meta": {**carrier, **(params.get("_meta") or {})}}}


def request_parent(
    meta: Any, headers: Mapping[str, str] | None
) -> tuple[OtelContext | None, list[Link] | None]:
    """The server span's parent context, and its links (the semantic conventions' order of preference).

    `_meta` first: it travels with the MCP message, whatever carried it. The
    ambient span (an ASGI instrumentation's) is then linked; without `_meta`
    it is the parent itself (None: the current context). The HTTP
    `traceparent` header is read only when nothing instrumented the request.
    """
    remote = extract(meta) if isinstance(meta, dict) else None
    ambient = trace.get_current_span().get_span_context()
    if remote is not None:
        return remote, ([Link(ambient, {LINK_KIND: "transport"})] if ambient.is_valid else None)
    if ambient.is_valid or headers is None:
        return None, None
    return extract(headers), None


def extract(source: Mapping[str, Any], propagator: TextMapPropagator | None = None) -> OtelContext | None:
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
