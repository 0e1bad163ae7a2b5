"""Tracing on by default: every server observes its requests once the process configures OpenTelemetry.

Both peers do it (the official SDK installs its OpenTelemetry middleware in
every server; FastMCP traces whenever an SDK is configured), so a team that
configures OpenTelemetry for its whole service, or runs it under
`opentelemetry-instrument`, sees our spans and metrics without a line of code.

A server gets a `DefaultTelemetry` at construction. It imports nothing: a
process can only have configured OpenTelemetry once it has imported
`opentelemetry.trace`, so until then a request costs a `sys.modules` lookup.
Once it is imported, the real `mcp_resolve.telemetry.Telemetry` is built
(following the global providers) and takes the server's `telemetry` slot;
it observes a request only once a global tracer or meter provider is set.
A provider named by `OTEL_PYTHON_TRACER_PROVIDER` / `_METER_PROVIDER` is
loaded at construction, since nothing else may import the API for it.

Off with `MCPServer(telemetry=False)` or MCP_RESOLVE_TELEMETRY=false. Without
`opentelemetry-api`, nothing changes and nothing of it is imported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocol.hooks import RequestWatch, ServerTelemetry
    from ..protocol.jsonrpc import IncomingRequest
    from ..resolve.run import RunObserver
    from ._facade import MCPServer


_LOADED = "opentelemetry.trace"
_NAMED_PROVIDERS = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")


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
    """Give `server` the telemetry every server has unless turned off."""
    pending = DefaultTelemetry(server)
    server.telemetry = pending
    if any(name in os.environ for name in _NAMED_PROVIDERS):
        pending.load()  # the environment names an SDK: load it now, the API would only on first use


class DefaultTelemetry:
    """A server's telemetry until OpenTelemetry is imported; then it builds the real one and hands over.

    The real one replaces it as `server.telemetry`; a request that found
    this one before is passed on to it.
    """

    __slots__ = ("_real", "_server")

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self._real: ServerTelemetry | None = None

    @property
    def active(self) -> bool:
        real = self._real
        if real is None:
            if _LOADED not in sys.modules:
                return False  # nothing imported OpenTelemetry, so nothing configured it
            real = self.load()
            if real is None:
                return False
        return real.active

    def load(self) -> ServerTelemetry | None:
        """Build the real telemetry (OpenTelemetry is importable); None when it cannot be."""
        try:
            from ..telemetry.entry import instrument_by_default
        except ImportError:  # only part of OpenTelemetry there: stay silent, as without it
            self._server.telemetry = None
            return None
        if self._server.telemetry is self:  # not replaced since (instrument, or turned off)
            self._real = instrument_by_default(self._server)
        else:
            self._real = self._server.telemetry
        return self._real

    def _loaded(self) -> ServerTelemetry:
        assert self._real is not None, "asked to observe before `active` said so"
        return self._real

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
        return await self._loaded().observe(
            request, meta, headers, respond, modern=modern, protocol_version=protocol_version
        )

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
        return await self._loaded().observe_task_round(
            tool=tool,
            task_id=task_id,
            round_number=round_number,
            trace_context=trace_context,
            trigger=trigger,
            run=run,
        )

    def session_ended(self, duration: float, protocol_version: str | None, *, http: bool) -> None:
        self._loaded().session_ended(duration, protocol_version, http=http)

    def task_refused(self, reason: str, stage: str) -> None:
        self._loaded().task_refused(reason, stage)
