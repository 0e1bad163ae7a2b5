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

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from starlette.types import Receive, Send

from ...._concurrency import light_lock, ticker
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
    server stopping cancels too (`stopping.on_set`). The keep-alive comes,
    on asyncio, from the loop's one keep-alive timer (`_concurrency.Ticker`),
    whose callback starts a short task to write the ping (`_KeepAlive`);
    elsewhere (trio) from a scope with a deadline per interval. An idle
    stream holds this task, one scope and a slot in the ticker, and nothing
    of its own wakes between keep-alives.
    """
    if session.closed.is_set():
        await write(b"", False)
        return
    gone = False
    with session.activity() as activity:
        if stopping is not None:
            stopping.on_set(activity.cancel)

        async def ping() -> bool:
            """A keep-alive, or (in a fleet, once the session is gone fleet-wide) the stream's end."""
            if fleet is not None and not await fleet.alive(session):
                fleet.forget(session)
                activity.cancel()
                return False
            await write(b": ping\n\n", True)
            return True

        try:
            gone = await _until_gone(receive, ping, ping_interval, activity.cancel)
        finally:
            if stopping is not None:
                stopping.on_set(None)
    if not gone:  # the end of the body; a client that left gets nothing more
        await write(b"", False)


async def _until_gone(
    receive: Receive, ping: Callable[[], Awaitable[bool]], interval: float, end: Callable[[], object]
) -> bool:
    """Wait for the client's hang-up (True), pinging every `interval`; False when `ping` ended the stream.

    A ping that fails calls `end` (the stream ends, and the failure is raised here)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio): a scope with a deadline per interval
        while True:
            with anyio.move_on_after(interval):
                while (await receive())["type"] != "http.disconnect":
                    pass
                return True
            if not await ping():
                return False
    keep_alive = _KeepAlive(loop, interval, ping, end)
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
        return True
    finally:
        await keep_alive.stop()


class _KeepAlive:
    """Calls `ping` every `interval` (from the loop's `Ticker`), each time in a short task of its own, until
    stopped or it says False."""

    __slots__ = ("end", "interval", "key", "loop", "ping", "task")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        interval: float,
        ping: Callable[[], Awaitable[bool]],
        end: Callable[[], object],
    ) -> None:
        self.loop, self.interval, self.ping, self.end = loop, interval, ping, end
        self.task: asyncio.Task[None] | None = None
        self.key: int | asyncio.TimerHandle | None = ticker(loop).add(loop.time() + interval, self._due)

    def _due(self) -> None:
        self.key = None
        self.task = self.loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            alive = await self.ping()
        except Exception:
            self.end()  # the stream ends; `stop` raises this in its task
            raise
        if alive:
            self.key = ticker(self.loop).add(self.loop.time() + self.interval, self._due)

    async def stop(self) -> None:
        """No more pings: the next is called off, a ping being written is cancelled and waited for."""
        if self.key is not None:
            ticker(self.loop).remove(self.key, self._due)
            self.key = None
        task = self.task
        if task is not None and not task.done():
            task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait((task,))
        if task is not None and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
