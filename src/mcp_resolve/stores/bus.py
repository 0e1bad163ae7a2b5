"""The subscription bus: how "the tool list changed" or "this resource changed" reaches every worker.

The shapes are the official SDK's (`SubscriptionBus` with an async `publish`
and a synchronous `subscribe(listener) -> unsubscribe`, carrying typed events
rather than wire messages), so a bus written for a server ported from it
fits here unchanged. The server owns filtering and subscription-id stamping;
a bus only moves events.

`InMemorySubscriptionBus` is the default: one process, synchronous fan-out.
`RedisSubscriptionBus` (stores._redis.bus) publishes through Redis so that a
change made on one worker reaches clients listening on every other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, Union, runtime_checkable

import anyio.lowlevel

__all__ = [
    "InMemorySubscriptionBus",
    "PromptsListChanged",
    "ResourceUpdated",
    "ResourcesListChanged",
    "ServerEvent",
    "SubscriptionBus",
    "ToolsListChanged",
    "event_from_wire",
    "event_to_wire",
]

logger = logging.getLogger("mcp_resolve.stores")


@dataclass(frozen=True)
class ToolsListChanged:
    """The server's tool list changed."""


@dataclass(frozen=True)
class PromptsListChanged:
    """The server's prompt list changed."""


@dataclass(frozen=True)
class ResourcesListChanged:
    """The server's resource list changed."""


@dataclass(frozen=True)
class ResourceUpdated:
    """The resource at `uri` changed and may need to be read again."""

    uri: str


ServerEvent = Union[ToolsListChanged, PromptsListChanged, ResourcesListChanged, ResourceUpdated]

_METHODS: dict[type, str] = {
    ToolsListChanged: "notifications/tools/list_changed",
    PromptsListChanged: "notifications/prompts/list_changed",
    ResourcesListChanged: "notifications/resources/list_changed",
    ResourceUpdated: "notifications/resources/updated",
}
_BY_METHOD: dict[str, ServerEvent] = {
    "notifications/tools/list_changed": ToolsListChanged(),
    "notifications/prompts/list_changed": PromptsListChanged(),
    "notifications/resources/list_changed": ResourcesListChanged(),
}
MAX_URI_LENGTH = 4096


def event_to_wire(event: ServerEvent) -> tuple[str, dict[str, Any]]:
    """The notification method and params (without `_meta`) announcing `event`."""
    method = _METHODS[type(event)]
    return method, ({"uri": event.uri} if isinstance(event, ResourceUpdated) else {})


def event_from_wire(method: object, params: object) -> ServerEvent | None:
    """The event a (method, params) pair names, or None for anything else (untrusted input: a bus message)."""
    if isinstance(method, str) and method in _BY_METHOD:
        return _BY_METHOD[method]
    if method == "notifications/resources/updated" and isinstance(params, dict):
        uri = params.get("uri")
        if isinstance(uri, str) and 0 < len(uri) <= MAX_URI_LENGTH:
            return ResourceUpdated(uri)
    return None


@runtime_checkable
class SubscriptionBus(Protocol):
    """Fan-out between whoever publishes an event and the listeners of every worker.

    `publish` may do network I/O; `subscribe` registers a local listener at
    once and returns an idempotent unsubscribe. Listeners are synchronous,
    must not raise, and run on the server's event loop.
    """

    async def publish(self, event: ServerEvent) -> None: ...

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]: ...


class InMemorySubscriptionBus:
    """One process: `publish` calls every listener at once, in subscription order."""

    def __init__(self) -> None:
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}

    async def publish(self, event: ServerEvent) -> None:
        deliver(self._listeners, event)
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()  # the same callable may be registered twice
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None


def deliver(listeners: dict[object, Callable[[ServerEvent], None]], event: ServerEvent) -> None:
    """Call each listener; one that raises is logged and skipped, so it cannot starve the others."""
    for listener in list(listeners.values()):
        try:
            listener(event)
        except Exception:
            logger.exception("a subscription listener failed")
