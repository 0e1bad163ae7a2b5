"""`RedisSubscriptionBus`: list changes and resource updates fanned out to every worker through Redis pub/sub.

`publish` sends the event to one channel and then calls this process's own
listeners directly; every other process's reader calls its listeners when
the message arrives, and a reader skips the echo of its own messages, so
each listener hears each event once. Messages carry the event and an origin
token, nothing else; anything malformed on the channel is dropped.

Pub/sub keeps nothing: an event published while a worker's subscriber is
reconnecting never reaches that worker. These events are level triggers
("re-list if you care"), and the server ends its listen streams when the
subscriber drops (`on_lost`), so a client re-listens and re-lists rather
than missing a change in silence. Publishing while Redis is down raises
`StoreUnavailable`, and nobody, local or remote, is told.
"""

from __future__ import annotations

import json
import logging
import secrets
import weakref
from collections.abc import Callable

import anyio.lowlevel

from ..bus import ServerEvent, deliver, event_from_wire, event_to_wire
from .connection import PubSubHub, RedisConnection

__all__ = ["RedisSubscriptionBus"]

logger = logging.getLogger("mcp_resolve.stores")


class RedisSubscriptionBus:
    """A `SubscriptionBus` over one Redis pub/sub channel, shared by every worker of the fleet."""

    def __init__(self, redis: RedisConnection | str, *, channel: str = "events") -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self.channel = self.redis.key("bus", channel)
        self.origin = secrets.token_hex(8)
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}
        self._on_lost: list[Callable[[], None]] = []
        self._hubs: weakref.WeakSet[PubSubHub] = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"RedisSubscriptionBus({self.redis!r})"

    async def publish(self, event: ServerEvent) -> None:
        method, params = event_to_wire(event)
        payload = json.dumps({"o": self.origin, "m": method, "p": params}, separators=(",", ":"))
        await self.redis.call("subscription bus", lambda r: r.publish(self.channel, payload))
        deliver(self._listeners, event)
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener
        return lambda: self._listeners.pop(token, None) and None

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever this process's subscriber loses Redis (events may have been missed)."""
        self._on_lost.append(callback)

    async def start(self, timeout: float = 2.0) -> None:
        """Subscribe this process (once per event loop); `StoreUnavailable` if Redis does not answer in time."""
        hub = self.redis.hub()
        if hub not in self._hubs:
            self._hubs.add(hub)
            hub.add(self.channel, self._received)
            hub.on_lost(self._lost)
        await hub.ready(timeout)

    def _lost(self) -> None:
        for callback in list(self._on_lost):
            callback()

    def _received(self, data: bytes) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if not isinstance(message, dict) or message.get("o") == self.origin:
            return
        event = event_from_wire(message.get("m"), message.get("p"))
        if event is not None:
            deliver(self._listeners, event)
