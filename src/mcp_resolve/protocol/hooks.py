"""What the protocol layer calls on an instrumented server: the shape of `mcp_resolve.telemetry`.

Declared here, free of any telemetry library, so that `session.py` and
`protocol.modern` can call the hooks (and be type-checked) without importing
OpenTelemetry. A server without OpenTelemetry installed, or with telemetry
turned off, has `telemetry = None`; then, and while the default telemetry is
not `active` (no SDK configured), a request is served without a watch.

The hooks are handed down the way the questioner is: the protocol layer asks
`ServerTelemetry.observe` to serve a request, gets a `RequestWatch` for it,
and passes that watch on to the Context (which hands it to the resolver
engine as its `RunObserver`), to the questioner it builds, and to the
functions that open and seal `requestState`. A task's rounds, which run after
their request has been answered, are served the same way through
`ServerTelemetry.observe_task_round`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..resolve.run import RunObserver

if TYPE_CHECKING:
    from ..resolve.run import Questioner
    from .jsonrpc import IncomingRequest

__all__ = ["RequestWatch", "ServerTelemetry"]


class RequestWatch(RunObserver, Protocol):
    """One request under observation; a `RunObserver` for its resolver run as well."""

    def questioner(self, inner: Questioner) -> Questioner:
        """`inner`, wrapped so that each question it is asked is observed too."""
        ...

    def state_opened(self, carried: str | None) -> None:
        """An echoed requestState was verified; `carried` is what the previous round sealed beside it."""
        ...

    def state_rejected(self, reason: str) -> None:
        """An echoed requestState was refused: `reason` is "invalid" or "replayed"."""
        ...

    def carry(self) -> str | None:
        """What to seal beside this round's outgoing requestState, for the next round to read."""
        ...

    def trace_context(self) -> dict[str, str] | None:
        """This request's span as W3C trace context (`traceparent`, `tracestate`), or None when untraced.

        Kept on the record of a task the request creates, so the task's rounds,
        on whichever worker, run under that span.
        """
        ...


class ServerTelemetry(Protocol):
    """Serves a request under observation: `MCPServer.telemetry`, set by `mcp_resolve.telemetry.instrument`."""

    @property
    def active(self) -> bool:
        """Whether to observe a request now (by default: once a global provider is set); checked first."""
        ...

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
        """The response message `respond(watch)` makes, observed from start to finish.

        `meta` is the request's `_meta` exactly as the client sent it (any
        JSON value), `headers` the HTTP request's headers (None off HTTP).
        """
        ...

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
        """The outcome `run(watch)` makes of one background round of a task, observed from start to finish.

        `trace_context` is what the creating request's `trace_context()` gave
        (read from the task record, so checked again); `trigger` the watch of
        the request that started this round (the creating `tools/call` or a
        `tasks/update`), if any; `round_number` 0 when unknown. The outcome is
        the task runner's: ("done", result), ("failed", JSON-RPC error) or
        ("cancelled", None).
        """
        ...

    def session_ended(self, duration: float, protocol_version: str | None, *, http: bool) -> None:
        """Record a handshake-era session's length in seconds (`mcp.server.session.duration`)."""
        ...

    def task_refused(self, reason: str, stage: str) -> None:
        """Count a task write the store's bounds refused (`TaskRunner.refused` says what the names mean)."""
        ...
