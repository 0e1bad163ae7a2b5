"""Resumable SSE on the handshake era: event ids and `retry` on the way out, `Last-Event-ID` on the way back.

With an event store (`MCPServer(event_store=MemoryEventStore())`, or every
store on Redis), each SSE stream of a 2025-11-25 session, a POST's or the
GET one, is recorded: it opens with a priming event (an id, the `retry`
hint in milliseconds, empty data), and every event carries its id. A client
whose connection broke waits `retry` and GETs the endpoint with
`Last-Event-ID`; the server sends what that stream carried after the event
(never another stream's), then, for a POST's stream, follows it live until
its response, on whichever worker the GET reached (the work goes on where it
started: on this era, disconnection is not cancellation).

Older versions (2025-06-18 and before) get no priming event: their clients
may not take an event with empty data. A store that fails mid-stream
(Redis down) does not fail the request: the stream goes on without ids, so
the client can no longer resume it, and is never told an id that does not
exist. A resumption while the store is down is refused with 503.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ....errors import INTERNAL_ERROR
from ....protocol.http_names import SESSION_HEADER
from ....protocol.jsonrpc import IncomingResponse, error_message
from .._exchange.exchange import SSE_HEADERS, sse_event
from .._wire.responses import refusal
from .standalone import standalone_stream

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ....protocol.session import Connection
    from ....stores.events import EventStore
    from .._exchange.endpoint import StreamableHTTPEndpoint
    from .._exchange.exchange import Exchange
    from .._exchange.sessions import Session
    from ..options import HttpOptions
    from .caps import StreamStop

__all__ = ["RESUMABLE_FROM", "Recorder", "fail_questions", "get_stream", "make_resumable", "resume"]

logger = logging.getLogger("mcp_resolve.http")

RESUMABLE_FROM = "2025-11-25"
"""The first protocol version whose clients take a priming event (an id with empty data)."""
LAST_EVENT_ID = b"last-event-id"


class Recorder:
    """Records one SSE stream's events in the store; opened lazily (a JSON answer records nothing)."""

    def __init__(
        self, store: EventStore, session_id: str, request_id: Any, retry_ms: int, stream_id: str | None = None
    ):
        self.store, self.session_id, self.request_id = store, session_id, request_id
        self.retry_ms = retry_ms
        self.stream_id = stream_id
        self.working = True
        self.ended = False

    async def prime(self) -> bytes:
        """The stream's first bytes: an id the client can resume from and the `retry` hint."""
        try:
            if self.stream_id is None:
                self.stream_id = await self.store.open_stream(self.session_id, self.request_id)
            event_id = await self.store.append(self.stream_id, None)
        except Exception:
            self._failed()
            return b"retry: %d\n\n" % self.retry_ms
        return b"id: %s\nretry: %d\ndata: \n\n" % (event_id.encode(), self.retry_ms)

    async def frame(self, message: dict[str, Any], *, final: bool = False) -> bytes:
        """`message` as an SSE event, with its id once stored (without, if the store failed)."""
        if not self.working or self.stream_id is None:
            return sse_event(message)
        try:
            event_id = await self.store.append(self.stream_id, message, final=final)
        except Exception:
            self._failed()
            return sse_event(message)
        self.ended = self.ended or final
        return sse_event(message, event_id)

    async def close(self) -> None:
        """Mark the end of a stream that had no final response (a cancelled request, a closed GET stream)."""
        if self.working and self.stream_id is not None and not self.ended:
            self.ended = True
            try:
                await self.store.append(self.stream_id, None, final=True)
            except Exception:
                self._failed()

    def _failed(self) -> None:
        if self.working:
            logger.warning("the event store failed: this SSE stream goes on without resumable ids")
        self.working = False


def fail_questions(connection: Connection, asked: list[Any]) -> None:
    """Release a handshake call waiting on answers that can no longer come (its stream is gone)."""
    for request_id in asked:
        error = {"code": INTERNAL_ERROR, "message": "the client disconnected before answering"}
        connection.deliver_response(IncomingResponse(request_id, None, error))


def _fail_later(connection: Connection, window: float, asked: list[Any]) -> None:
    """A resumable stream broke: its client may resume and answer within `window` seconds, else they fail."""
    try:
        asyncio.get_running_loop().call_later(window, fail_questions, connection, list(asked))
    except RuntimeError:  # not on asyncio: no timer to wait with, fail them now
        fail_questions(connection, asked)


def make_resumable(
    exchange: Exchange, store: EventStore, session: Session, request_id: Any, options: HttpOptions
) -> None:
    """Record a 2025-11-25 session's POST stream; a client that lost it gets `resume_window` to come back."""
    state = session.connection.handshake
    if state is None or state.protocol_version < RESUMABLE_FROM:
        return
    exchange.recorder = Recorder(store, session.id, request_id, options.sse_retry_ms)
    exchange.on_disconnect = partial(_fail_later, session.connection, options.resume_window)


async def get_stream(
    endpoint: StreamableHTTPEndpoint,
    session: Session,
    last_event_id: str | None,
    scope: Scope,
    receive: Receive,
    send: Send,
    stopping: StreamStop | None = None,
) -> None:
    """A session's GET stream (_streams.standalone): recorded when the server keeps events, resumed from `Last-Event-ID`.

    It ends, cleanly, once `stopping` is set (the server shuts down).
    """
    store, state = endpoint.server.deployment.event_store, session.connection.handshake
    ping, fleet = endpoint.options.sse_ping_interval, endpoint.fleet
    if store is None or state is None or state.protocol_version < RESUMABLE_FROM:
        await standalone_stream(session, receive, send, ping, fleet=fleet, stopping=stopping)
        return

    async def live(stream_id: str | None, missed: bytes = b"") -> None:
        recorder = Recorder(store, session.id, None, endpoint.options.sse_retry_ms, stream_id)
        await standalone_stream(
            session, receive, send, ping, recorder=recorder, missed=missed, fleet=fleet, stopping=stopping
        )

    if last_event_id is None:
        await live(None)
    else:
        await resume(store, session, last_event_id, scope, receive, send, ping, live, stopping)


async def resume(
    store: EventStore,
    session: Session,
    last_event_id: str,
    scope: Scope,
    receive: Receive,
    send: Send,
    ping_interval: float,
    standalone: Callable[[str, bytes], Awaitable[None]],
    stopping: StreamStop | None = None,
) -> None:
    """Answer a GET with `Last-Event-ID`: replay that stream after the event, then follow it or go on as the GET stream.

    `standalone(stream_id, missed)` serves a resumed GET stream: it starts the
    response, writes the `missed` events, and goes on live on the same stream.
    """
    from ....stores.events import UnknownEvent  # here: servers that never resume never load it

    try:
        stream_id, request_id = await store.stream_of(session.id, last_event_id)
        if request_id is None:
            batch = await store.read_after(session.id, last_event_id, wait=0)
    except UnknownEvent:
        await refusal(400, INTERNAL_ERROR, "Bad Request: Last-Event-ID names no stream of this session")(
            scope, receive, send
        )
        return
    except Exception as exc:
        message = getattr(exc, "message", "event store unavailable")
        await refusal(503, INTERNAL_ERROR, message, {"Retry-After": "2"})(scope, receive, send)
        return
    if request_id is None:
        await standalone(stream_id, b"".join(sse_event(m, e) for e, m in batch.events if m is not None))
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*SSE_HEADERS, (SESSION_HEADER.lower().encode(), session.id.encode())],
        }
    )
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(watch)
        if stopping is not None:
            stopping.on_set(group.cancel_scope.cancel)
        await _follow(store, session.id, last_event_id, request_id, send, ping_interval)
        group.cancel_scope.cancel()
    if stopping is not None:
        stopping.on_set(None)
    try:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        pass


async def _follow(
    store: EventStore, session_id: str, last: str, request_id: Any, send: Send, ping_interval: float
) -> None:
    """Send a POST stream's events after `last` until its end; an error answer if its worker died."""
    quiet_since = anyio.current_time()
    while True:
        try:
            batch = await store.read_after(session_id, last, wait=ping_interval)
        except Exception:
            logger.warning("the event store failed while a client resumed a stream")
            return  # the client may resume again from the last id it got
        chunks = []
        for event_id, message in batch.events:
            last = event_id
            if message is not None:
                chunks.append(sse_event(message, event_id))
        if batch.orphaned and not batch.ended:
            gone = error_message(
                request_id,
                INTERNAL_ERROR,
                "the worker running this request stopped before answering; call again",
            )
            chunks.append(sse_event(gone))
        if not chunks and anyio.current_time() - quiet_since >= ping_interval:
            chunks.append(b": ping\n\n")
        if chunks:
            await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": True})
            quiet_since = anyio.current_time()
        if batch.ended or batch.orphaned:
            return
