"""Change notifications, for both eras: `subscriptions/listen` streams (2026-07-28) and handshake sessions.

`mcp.notify_list_changed(...)` and `mcp.notify_resource_updated(uri)` publish
a typed event on the server's `SubscriptionBus`. One listener per server
hears every event, whichever worker published it, and hands it to what this
process holds open: each `subscriptions/listen` stream whose filter wants it,
and each handshake-era session with a channel outside requests (stdout, the
HTTP GET stream) that wants it.

A listen stream (the 2026-07-28 pattern, "basic/patterns/subscriptions"):
the filter is checked and the bus made ready before anything is sent; the
acknowledgement with the honoured filter is the first message; every later
notification carries the listen request's id under
`io.modelcontextprotocol/subscriptionId`; kinds not asked for are never sent.
It ends when the client goes (closing the HTTP stream, or
`notifications/cancelled` on stdio), or when the server ends it
(`end_streams()`, a backlog the client stopped reading, or the bus losing
its backend), and then with the graceful-closure result carrying the same
id, so the client knows to listen again. An HTTP server's app calls
`end_streams()` as soon as its ASGI server begins to shut down
(transports/http/_streams/caps), so those clients get the result too.

Each stream holds a connection and a backlog, so they are bounded: at most
`max_streams` in the process on any transport (well below the HTTP
connection limit), and over HTTP also per client (transports/http/_streams/caps).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._concurrency import Wakeup
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, MCPError
from ..stores.bus import (
    MAX_URI_LENGTH,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    SubscriptionBus,
    ToolsListChanged,
    event_to_wire,
)

if TYPE_CHECKING:
    from ..context import Context
    from .serves import HoldsSessions
    from .session import Connection

__all__ = ["SUBSCRIPTION_ID_META_KEY", "ListenFilter", "Notifications"]

logger = logging.getLogger("mcp_resolve.protocol")

SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
MAX_URIS = 256
"""Resource URIs one listen request may name: enough for a client, not a way to make the server hold megabytes."""
MAX_STREAMS = 512
"""Listen streams one process holds at once, on every transport together."""
_FLAGS = {
    "toolsListChanged": ToolsListChanged,
    "promptsListChanged": PromptsListChanged,
    "resourcesListChanged": ResourcesListChanged,
}


_KIND_SETS: dict[frozenset[type], frozenset[type]] = {}
"""The kind sets filters use, one object each (there are eight): a stream does not hold its own copy."""
_NO_URIS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ListenFilter:
    """What one listen stream asked for, validated: the kinds it wants and the URIs it watches."""

    kinds: frozenset[type]
    uris: frozenset[str]

    @classmethod
    def parse(cls, notifications: object) -> ListenFilter:
        if not isinstance(notifications, dict):
            raise MCPError(
                INVALID_PARAMS, "Invalid params: subscriptions/listen needs a 'notifications' object"
            )
        kinds = set()
        for name, kind in _FLAGS.items():
            value = notifications.get(name)
            if value is not None and not isinstance(value, bool):
                raise MCPError(INVALID_PARAMS, f"Invalid params: notifications.{name} must be a boolean")
            if value:
                kinds.add(kind)
        uris = notifications.get("resourceSubscriptions")
        if uris is None:
            uris = []
        if not isinstance(uris, list) or not all(
            isinstance(u, str) and 0 < len(u) <= MAX_URI_LENGTH for u in uris
        ):
            raise MCPError(
                INVALID_PARAMS,
                "Invalid params: notifications.resourceSubscriptions must be a list of non-empty URI strings",
            )
        if len(uris) > MAX_URIS:
            raise MCPError(
                INVALID_PARAMS, f"Invalid params: at most {MAX_URIS} resourceSubscriptions per listen"
            )
        wanted = frozenset(kinds)
        return cls(_KIND_SETS.setdefault(wanted, wanted), frozenset(uris) if uris else _NO_URIS)

    def honoured(self, order: list[str] | None = None) -> dict[str, Any]:
        """The acknowledgement's filter: every kind asked for (true flags only), URIs in the order given."""
        result: dict[str, Any] = {name: True for name, kind in _FLAGS.items() if kind in self.kinds}
        if self.uris:
            result["resourceSubscriptions"] = [u for u in dict.fromkeys(order or sorted(self.uris))]
        return result

    def wants(self, event: ServerEvent) -> bool:
        if isinstance(event, ResourceUpdated):
            return event.uri in self.uris
        return type(event) in self.kinds


class _Listener:
    """One open listen stream: its filter and the events heard for it and not yet sent.

    What an idle stream holds is this and nothing more (no channel, no queue
    until an event arrives); the stream's task waits on one `Wakeup`.
    """

    __slots__ = ("closed", "events", "wakeup", "wanted")

    def __init__(self, wanted: ListenFilter) -> None:
        self.wanted = wanted
        self.events: deque[ServerEvent] | None = None
        self.wakeup = Wakeup()
        self.closed = False

    def push(self, event: ServerEvent, backlog: int) -> bool:
        """Queue `event` for the stream; False (and nothing queued) when its backlog is full."""
        events = self.events
        if events is None:
            events = self.events = deque()
        elif len(events) >= backlog:
            return False
        events.append(event)
        self.wakeup.set()
        return True

    def close(self) -> None:
        """End the stream once what was queued has been sent."""
        self.closed = True
        self.wakeup.set()

    def pop(self) -> ServerEvent | None:
        """The next event to send, or None when none is queued (then: closed, or `wakeup.wait()`)."""
        events = self.events
        if not events:
            return None
        event = events.popleft()
        if not events:
            self.events = None  # an idle stream holds no queue
        return event


def _session_wants(connection: Connection, event: ServerEvent) -> bool:
    state = connection.handshake
    if state is None or connection.standalone is None:
        return False
    return not isinstance(event, ResourceUpdated) or event.uri in state.subscriptions


class Notifications:
    """One server's fan-out: the bus listener, the open listen streams, and handshake sessions' channels."""

    def __init__(
        self,
        server: HoldsSessions,
        bus: SubscriptionBus,
        *,
        max_streams: int = MAX_STREAMS,
        backlog: int = 256,
    ):
        self.server = server
        self.bus = bus
        self.max_streams = max_streams
        self.backlog = backlog
        self._streams: set[_Listener] = set()
        self._pending: list[tuple[Connection, str, dict[str, Any]]] = []
        self._publishing = 0
        self._drainer: asyncio.Task[None] | None = None
        self.forwards: list[Callable[[ServerEvent], Awaitable[None]]] = []
        """Awaited with every event this server publishes: a mounted server's tell its parent's clients."""
        bus.subscribe(self._heard)
        on_lost = getattr(bus, "on_lost", None)
        if on_lost is not None:
            on_lost(self.end_streams)

    @property
    def streams(self) -> int:
        return len(self._streams)

    async def publish(self, event: ServerEvent) -> int:
        """Publish `event` fleet-wide; how many of this process's sessions and streams it reached."""
        told = sum(1 for c in list(self.server.connections) if _session_wants(c, event))
        told += sum(1 for listener in self._streams if listener.wanted.wants(event))
        self._publishing += 1
        try:
            await self.bus.publish(event)
        finally:
            self._publishing -= 1
        await self._drain()
        for forward in self.forwards:
            await forward(event)
        return told

    def _heard(self, event: ServerEvent) -> None:
        """The bus listener: queue the event for this process's streams and sessions (never raises)."""
        for listener in list(self._streams):
            if listener.wanted.wants(event) and not listener.push(event, self.backlog):
                logger.warning("a listen stream stopped reading; ending it (the client re-listens)")
                self._streams.discard(listener)
                listener.close()
        method, params = event_to_wire(event)
        for connection in list(self.server.connections):
            if _session_wants(connection, event):
                self._pending.append((connection, method, params))
        # From another worker (the bus reader's task): delivered by a task of our own.
        if self._pending and not self._publishing and (self._drainer is None or self._drainer.done()):
            self._drainer = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            connection, method, params = self._pending.pop(0)
            await connection.notify(method, dict(params) or None)

    def end_streams(self) -> None:
        """End every open listen stream gracefully (each answers its request), e.g. at shutdown."""
        for listener in self._streams:
            listener.close()
        self._streams.clear()

    async def listen(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        """Serve one `subscriptions/listen` request for as long as the stream lasts."""
        if not context.is_modern:
            raise MCPError(
                METHOD_NOT_FOUND,
                "Method not found: subscriptions/listen is protocol 2026-07-28; this session uses resources/subscribe",
            )
        wanted = ListenFilter.parse(params.get("notifications"))
        raw_uris = params["notifications"].get("resourceSubscriptions") or []
        if len(self._streams) >= self.max_streams:
            raise MCPError(INTERNAL_ERROR, "Subscription limit reached: too many open listen streams")
        start = getattr(self.bus, "start", None)
        if start is not None:
            await start()  # a bus that cannot reach its backend fails the request before the acknowledgement
        meta = {SUBSCRIPTION_ID_META_KEY: context.request_id}
        listener = _Listener(wanted)
        self._streams.add(listener)
        notify = context.request_scope.send_notification
        # An idle stream keeps only what it needs to send the next event: not the request's params,
        # nor its Context and the request scope built for it (their questioner, envelope, headers).
        del params, context
        try:
            acknowledged = {"_meta": meta, "notifications": wanted.honoured(raw_uris)}
            del raw_uris
            await notify("notifications/subscriptions/acknowledged", acknowledged)
            del acknowledged
            # The wait inline (no coroutine of the listener's own): one frame fewer parked while idle.
            while True:
                event = listener.pop()
                if event is None:
                    if listener.closed:
                        break
                    await listener.wakeup.wait()
                    continue
                method, event_params = event_to_wire(event)
                await notify(method, {**event_params, "_meta": meta})
                del event, event_params
        finally:
            self._streams.discard(listener)
            listener.close()
        return {"_meta": dict(meta)}
