"""Whether the process configured OpenTelemetry: a global tracer or meter provider set (an SDK, in practice).

Asked once a request by a server instrumented by default, so it must cost
next to nothing. The API's own `get_tracer_provider()` looks the
`OTEL_PYTHON_TRACER_PROVIDER` variable up in `os.environ` on every call while
no provider is set (microseconds, several per cent of a small request), so
this reads the API modules' globals instead, which `set_tracer_provider` and
`set_meter_provider` write once and never clear. Should an API release move
them, it falls back to the public calls: slower, never wrong.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_api

_MISSING = object()
_TRACE_GLOBALS: dict[str, Any] = vars(trace)
_METRICS_GLOBALS: dict[str, Any] = vars(metrics_api)


def load_named_providers() -> None:
    """Load the providers `OTEL_PYTHON_TRACER_PROVIDER` / `_METER_PROVIDER` name, if any (the API does it lazily)."""
    trace.get_tracer_provider()
    metrics.get_meter_provider()


def globals_configured() -> bool:
    """Whether a global tracer or meter provider is set (by code, `opentelemetry-instrument`, or the env)."""
    tracer_provider = _TRACE_GLOBALS.get("_TRACER_PROVIDER", _MISSING)
    meter_provider = _METRICS_GLOBALS.get("_METER_PROVIDER", _MISSING)
    if tracer_provider is None and meter_provider is None:
        return False  # the common case without an SDK: two dict lookups
    if tracer_provider is _MISSING or meter_provider is _MISSING:
        return _configured_publicly()
    return True


def _configured_publicly() -> bool:
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return True
    return "Proxy" not in type(metrics.get_meter_provider()).__name__
