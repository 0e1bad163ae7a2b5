"""A handshake-era session's GET stream: what the server says outside any request, held open with pings.

It carries resource updates to a subscriber and list changes, plus
keep-alives; the newest GET stream of a session is the one used. It ends on
DELETE, as soon as the server begins to shut down, when the client leaves, or (in a fleet) when the
session is found gone from the shared store at a ping. With an event store
it is resumable like a POST's stream: primed with an id and the `retry`
hint, every event with its id, and a GET with `Last-Event-ID` of this
stream picks it up where it broke (_streams.resume).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from starlette.types import Receive, Send

from ...._concurrency import light_lock
from ....protocol.http_names import SESSION_HEADER
from .._exchange.exchange import SSE_HEADERS, sse_event

if TYPE_CHECKING:
    from .._exchange.sessions import Session
    from .._fleet.sessions import SessionFleet
    from .caps import StreamStop
    from .resume import Recorder

__all__ = ["standalone_stream"]

_SESSION = SESSION_HEADER.encode()


async def standalone_stream(
    session: Session,
    receive: Receive,
    send: Send,
    ping_interval: float,
    *,
    recorder: Recorder | None = None,
    missed: bytes = b"",
    fleet: SessionFleet | None = None,
    stopping: StreamStop | None = None,
) -> None:
    """Serve the GET stream until it ends; `missed` (a resumption's replay) goes out right after the start."""
    headers = [*SSE_HEADERS, (_SESSION, session.id.encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    del headers  # uvicorn has written them; the idle stream need not keep them
    writing, ended = light_lock(), False

    async def write(body: bytes, more: bool = True) -> None:
        """One chunk at a time from any task; nothing after the last one."""
        nonlocal ended
        async with writing:
            if not ended:
                ended = not more
                await send({"type": "http.response.body", "body": body, "more_body": more})

    async def deliver(message: dict[str, Any]) -> None:
        if recorder is None:
            await write(sse_event(message))
            return
        async with writing:  # recorded and written in one step, so ids go out in order
            chunk = await recorder.frame(message)
            if not ended:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

    # What the client missed, then a fresh priming event: its id comes after theirs in the stream.
    opening = missed + (await recorder.prime() if recorder is not None else b"")
    if opening:
        await write(opening)
    session.connection.standalone = deliver
    try:
        await _hold(session, receive, write, ping_interval, fleet, stopping)
    finally:
        if session.connection.standalone is deliver:
            session.connection.standalone = None
        if recorder is not None and session.closed.is_set():
            await recorder.close()


async def _hold(
    session: Session,
    receive: Receive,
    write: Callable[[bytes, bool], Awaitable[None]],
    ping_interval: float,
    fleet: SessionFleet | None,
    stopping: StreamStop | None,
) -> None:
    """Hold the stream in its own task until the client leaves, the session closes or the server stops.

    The task waits on the ASGI `receive()` (the client's hang-up) inside the
    session's activity scope, which closing the session cancels and which a
    server stopping cancels too (`stopping.on_set`), and inside one scope per
    keep-alive interval: an idle stream holds this task, two scopes and one
    timer, and nothing else of its own wakes.
    """
    if session.closed.is_set():
        await write(b"", False)
        return
    gone = False
    with session.activity() as activity:
        if stopping is not None:
            stopping.on_set(activity.cancel)
        try:
            while True:
                with anyio.move_on_after(ping_interval):
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    gone = True
                    break
                if fleet is not None and not await fleet.alive(session):
                    fleet.forget(session)
                    break
                await write(b": ping\n\n", True)
        finally:
            if stopping is not None:
                stopping.on_set(None)
    if not gone:  # the end of the body; a client that left gets nothing more
        await write(b"", False)
