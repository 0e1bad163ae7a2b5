"""Server middleware: `async (ctx, call_next) -> result` around every inbound message.

The official SDK's `MCPServer(middleware=[...])` chain, with the same shapes:
a middleware gets a `ServerRequestContext` (method and raw params, before any
validation) and `call_next`, and may observe, rewrite
(`await call_next(dataclasses.replace(ctx, params=...))`), refuse (raise an
`MCPError`) or answer itself (return a result without calling `call_next`).
The list is outermost-first.

This module holds only the types and the chain; `protocol.session` (handshake
era, and notifications on stream transports) and `protocol.modern`
(2026-07-28) call `run_chain` only when `server.middleware` is non-empty, so a
server without middleware serves exactly as it did before it existed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from mcp_types import ClientCapabilities, ErrorData, Implementation
from pydantic import BaseModel

from ..errors import MCPError

__all__ = [
    "CallNext",
    "ClientView",
    "HandlerResult",
    "ServerMiddleware",
    "ServerRequestContext",
    "dump_result",
    "run_chain",
]

LifespanT = TypeVar("LifespanT")
RequestT = TypeVar("RequestT")
_MwLifespanT = TypeVar("_MwLifespanT")

HandlerResult = BaseModel | dict[str, Any] | None
"""What a handler or a middleware may return: a model, a wire dict, or None (an empty result)."""


class ClientView:
    """`ctx.session`: what the client declared, read-only.

    The official `ServerSession` also sends messages to the client; here a
    middleware or extension handler reads who is asking, and a tool that needs
    to talk back takes a `Context`.
    """

    __slots__ = ("_capabilities", "_info", "protocol_version")

    def __init__(
        self, capabilities: dict[str, Any] | None, info: dict[str, Any] | None, protocol_version: str
    ) -> None:
        self._capabilities = capabilities
        self._info = info
        self.protocol_version = protocol_version
        """The protocol version this request speaks ('' before an `initialize` settled one)."""

    @property
    def client_capabilities(self) -> ClientCapabilities | None:
        """The capabilities the client declared (None before `initialize`), as the protocol model."""
        if self._capabilities is None:
            return None
        return ClientCapabilities.model_validate(self._capabilities)

    @property
    def client_capabilities_dict(self) -> dict[str, Any] | None:
        """The same, as the JSON object the client sent (already checked for shape)."""
        return self._capabilities

    @property
    def client_info(self) -> Implementation | None:
        info = self._info
        if not isinstance(info, dict):
            return None
        try:
            return Implementation.model_validate(info)
        except ValueError:  # client-written: a malformed one reads as absent rather than failing the request
            return None


@dataclass(kw_only=True, slots=True)
class ServerRequestContext(Generic[LifespanT, RequestT]):
    """One inbound message, as a middleware or an extension handler sees it.

    The official SDK's fields where they have a meaning here. `params` is the
    raw params object (for notifications too), `request_id` is None for a
    notification, `meta` is the raw `_meta` object or None. There is no
    `request` (the official's Starlette request): `headers` carries the HTTP
    request's headers, None off HTTP.
    """

    method: str
    params: Mapping[str, Any] | None
    request_id: int | str | None
    meta: dict[str, Any] | None
    protocol_version: str
    lifespan_context: LifespanT
    session: ClientView
    headers: Mapping[str, str] | None = None
    era: str = "handshake"
    """'handshake' (2024-11-05 .. 2025-11-25) or 'modern' (2026-07-28)."""


CallNext = Callable[["ServerRequestContext[Any, Any]"], Awaitable[HandlerResult]]
"""Runs the rest of the chain (and the handler) with the context it is given."""


class ServerMiddleware(Protocol[_MwLifespanT]):
    """`async def middleware(ctx, call_next) -> result`: one link of `MCPServer.middleware`.

    Sees every request and notification before validation or lookup (on the
    handshake era `initialize` and the pre-initialization refusal included;
    on 2026-07-28, after the `_meta` envelope and any `requestState` were
    checked). `call_next(ctx)` returns the finished wire result; what the
    middleware returns is what the client gets. A raised `MCPError` is the
    client's answer; any other exception answers "Internal error" and is
    logged, never sent. For a notification the return value is ignored.
    """

    def __call__(
        self, ctx: ServerRequestContext[_MwLifespanT, Any], call_next: CallNext, /
    ) -> Awaitable[HandlerResult]: ...


def run_chain(
    middleware: Sequence[ServerMiddleware[Any]],
    ctx: ServerRequestContext[Any, Any],
    inner: CallNext,
) -> Awaitable[HandlerResult]:
    """Call `inner` through `middleware`, outermost first; each link takes the context at call time."""
    call = inner
    for link in reversed(middleware):
        call = partial(_apply, link, call)
    return call(ctx)


def _apply(
    link: ServerMiddleware[Any], call_next: CallNext, ctx: ServerRequestContext[Any, Any]
) -> Awaitable[HandlerResult]:
    return link(ctx, call_next)


def dump_result(result: Any) -> dict[str, Any]:
    """A handler's or middleware's return as a wire dict (a copy: the author may keep what it returned)."""
    if result is None:
        return {}
    if isinstance(result, BaseModel):
        if isinstance(result, ErrorData):  # an error, not a result: answered as one
            raise MCPError(result.code, result.message, result.data)
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped
    if isinstance(result, dict):
        return dict(result)
    raise TypeError(
        f"a handler or middleware returned {type(result).__name__}; expected a model, dict or None"
    )
