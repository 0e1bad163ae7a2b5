"""What the protocol layer needs of the server it serves: small `Protocol`s, owned here, below the server.

`protocol/` answers requests for a server without knowing its class: it asks
for a method's handler, reads what the server says about itself, seals and
opens requestState with its keys, and adds handshake-era sessions to its
set. `MCPServer` satisfies every one of these by its public attributes and
methods; the type checker proves it wherever a server is handed down (the
transports, `Client(mcp)`), and nothing here imports `mcp_resolve.server`.

Each function asks for the narrowest: `handshake.initialize` only
`DescribesServer`, the listen fan-out only `HoldsSessions`, the
single-use claim only `SealsState`; a `Connection` and `modern.respond`
take `ServesRequests`, all of them together. Members are read-only
properties: the protocol layer reads a server, it never sets one up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableSet, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..context import Context

if TYPE_CHECKING:
    import logging

    from ..replay import ReplayStore
    from ..sealing import RequestStateSecurity
    from .hooks import ServerTelemetry
    from .middleware import ServerMiddleware
    from .session import Connection

__all__ = ["DescribesServer", "Handler", "HoldsSessions", "SealsState", "ServesRequests"]

Handler = Callable[[dict[str, Any], Context], Awaitable[dict[str, Any]]]
"""An era-free method handler: `await handler(params, context)` returns the result dict."""


class DescribesServer(Protocol):
    """What a server says about itself: `initialize`, `server/discover` and every 2026-07-28 result's `_meta`."""

    @property
    def name(self) -> str: ...

    @property
    def instructions(self) -> str | None: ...

    def server_info(self) -> dict[str, Any]: ...

    def capabilities(self, *, modern: bool) -> dict[str, Any]: ...

    def cache_hint(self, method: str) -> tuple[int, str]:
        """(`ttlMs`, `cacheScope`) of a cacheable method's 2026-07-28 results."""
        ...


class HoldsSessions(Protocol):
    """Where handshake-era sessions are kept while alive, for messages that belong to no request."""

    @property
    def connections(self) -> MutableSet[Connection]: ...


class SealsState(Protocol):
    """What sealing and opening a 2026-07-28 requestState needs: the keys, the replay store, the policy."""

    @property
    def name(self) -> str:
        """The audience sealed state carries unless `request_state_security` names one."""
        ...

    @property
    def request_state_security(self) -> RequestStateSecurity: ...

    @property
    def replay_store(self) -> ReplayStore: ...

    @property
    def first_round_answers(self) -> bool: ...

    @property
    def log(self) -> logging.Logger: ...

    def is_single_use(self, method: str, params: dict[str, Any]) -> bool: ...


class ServesRequests(DescribesServer, HoldsSessions, SealsState, Protocol):
    """Everything the protocol layer reads of a server to answer its requests, on either era."""

    @property
    def middleware(self) -> Sequence[ServerMiddleware[Any]]: ...

    @property
    def telemetry(self) -> ServerTelemetry | None: ...

    @property
    def lifespan_context(self) -> Any: ...

    def handler(self, method: str) -> Handler:
        """The handler of `method`; raises `MCPError` (-32601) for a method not served."""
        ...

    async def roots_changed(self) -> None:
        """The client said its roots changed (`notifications/roots/list_changed`)."""
        ...
