"""The long-lived streams one HTTP app holds open: bounded in all and per client, ended at once at shutdown.

A `subscriptions/listen` stream (2026-07-28) and a handshake-era GET stream
(including a GET that follows a POST's stream after `Last-Event-ID`) each
hold a connection for as long as the client wants. Unbounded, one client
opening two thousand of them filled the ASGI server's connection limit and
every other client got 503 until it let go. So they are counted:

* per client (its principal when authenticated, else its address, as for
  sessions): past `max_streams_per_client` the client gets 429, and
  everyone else is unaffected;
* in all: past `max_streams` 503. `serve_http` keeps this below uvicorn's
  connection limit by `ServerLimits.reserved_connections`, so short
  requests (tool calls, a stream's own answers) always find a slot.

When the ASGI server begins a graceful shutdown (`_fleet.lifespan.server_stopping`)
every stream is ended at once, cleanly (a listen stream with its
graceful-closure result, a GET stream with the end of its body), and new
ones are refused with 503, so the server does not wait out its graceful
timeout on streams that would never end by themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from starlette.responses import Response

from ....errors import INTERNAL_ERROR, INVALID_REQUEST
from ....protocol.jsonrpc import error_message
from .._wire.responses import json_response

__all__ = ["LongStreams", "StreamStop"]


class LongStreams:
    """Admission and shutdown for one app's long-lived streams."""

    def __init__(self, limit: int | None, per_client: int | None) -> None:
        self.limit = limit
        self.per_client = per_client
        self.stopping = False
        self._by_client: dict[str, int] = {}
        self._enders: dict[object, Callable[[], None]] = {}

    def __len__(self) -> int:
        return len(self._enders)

    def of(self, client: str) -> int:
        """How many streams `client` holds open."""
        return self._by_client.get(client, 0)

    def refusal(self, client: str, request_id: object = None) -> Response | None:
        """The answer to a new stream `client` may not open now (None: it may)."""
        if self.stopping:
            return _refused(
                503, INTERNAL_ERROR, "Service Unavailable: the server is shutting down", "2", request_id
            )
        if self.per_client is not None and self.of(client) >= self.per_client:
            return _refused(
                429,
                INVALID_REQUEST,
                f"Too Many Requests: this client has {self.per_client} streams open; close one first",
                "30",
                request_id,
            )
        if self.limit is not None and len(self._enders) >= self.limit:
            return _refused(
                503, INTERNAL_ERROR, "Service Unavailable: too many open streams", "10", request_id
            )
        return None

    def held(self, client: str, end: Callable[[], None] | None = None) -> StreamStop:
        """Count one stream of `client` while the `with` block runs; it yields the stream's `StreamStop`.

        `end`, when given, is called instead at shutdown (a listen stream is
        ended by the server's `Notifications`, which answers its request).
        """
        return StreamStop(self, client, end)

    def _count(self, stop: StreamStop) -> None:
        self._enders[stop] = stop.end or stop.set
        self._by_client[stop.client] = self._by_client.get(stop.client, 0) + 1

    def _uncount(self, stop: StreamStop) -> None:
        del self._enders[stop]
        left = self._by_client[stop.client] - 1
        if left:
            self._by_client[stop.client] = left
        else:
            del self._by_client[stop.client]

    def stop(self) -> None:
        """End every stream now and refuse new ones (the ASGI server is shutting down); once is enough."""
        if self.stopping:
            return
        self.stopping = True
        enders = list(dict.fromkeys(self._enders.values()))  # one call each: listen streams share theirs
        for end in enders:
            end()


class StreamStop:
    """One counted stream (a context manager) and the server's word that it must end (shutdown).

    No event is made for it: the stream's task hands `on_set` the one thing
    to do then (cancel its wait), so an idle stream holds a few slots here.
    """

    __slots__ = ("_streams", "client", "end", "is_stopped", "then")

    def __init__(self, streams: LongStreams, client: str, end: Callable[[], None] | None) -> None:
        self._streams = streams
        self.client = client
        self.end = end
        self.is_stopped = False
        self.then: Callable[[], object] | None = None

    def __enter__(self) -> StreamStop:
        self._streams._count(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._streams._uncount(self)
        self.then = None

    def is_set(self) -> bool:
        return self.is_stopped

    def set(self) -> None:
        """The stream must end now: what `on_set` was given is called (once)."""
        self.is_stopped = True
        then, self.then = self.then, None
        if then is not None:
            then()

    def on_set(self, then: Callable[[], object] | None) -> None:
        """Call `then` when the stream must end (at once if it already must); None: nothing any more."""
        if then is not None and self.is_stopped:
            then()
            return
        self.then = then


def _refused(status: int, code: int, message: str, retry_after: str, request_id: object) -> Response:
    return json_response(status, error_message(request_id, code, message), {"Retry-After": retry_after})
