"""Tracing on by default: every server gets OpenTelemetry telemetry whenever `opentelemetry-api` is installed.

Both peers do it (the official SDK installs its OpenTelemetry middleware in
every server; FastMCP traces whenever an SDK is configured), so a team that
configures OpenTelemetry for its whole service, or runs it under
`opentelemetry-instrument`, sees our spans and metrics without a line of code.
The telemetry installed here observes a request only once a global tracer or
meter provider is set; before that a request costs one check.

Off with `MCPServer(telemetry=False)` or MCP_RESOLVE_TELEMETRY=false. Without
`opentelemetry-api` nothing changes and nothing of it is imported.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._facade import MCPServer


def telemetry_wanted(given: bool | None) -> bool:
    """The constructor's `telemetry=`, else MCP_RESOLVE_TELEMETRY (read only when some setting is set)."""
    if given is not None:
        return bool(given)
    from .._environment import settings_in_environment

    if not settings_in_environment():
        return True
    from ..settings import load_settings

    return load_settings().telemetry


def trace_by_default(server: MCPServer) -> None:
    """Give `server` telemetry that follows the global providers, if OpenTelemetry's API is installed."""
    try:
        if importlib.util.find_spec("opentelemetry") is None:
            return  # not installed: nothing is imported
    except (ImportError, ValueError):  # hidden by an import hook, or a broken entry in sys.modules
        return
    try:
        from ..telemetry import instrument_by_default
    except ImportError:  # a partial install (the API without its propagators): stay silent, as before
        return
    instrument_by_default(server)
