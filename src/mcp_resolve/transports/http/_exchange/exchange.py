"""One JSON-RPC request's HTTP response: a JSON body or an SSE stream, chosen as late as possible.

A request that produces nothing but its answer gets `application/json` with
a meaningful status (the 2026-07-28 wire wants 404 for an unknown method, 400
for bad params). The first notification or server-to-client request commits
the response to `text/event-stream`; so does a long silence, so that a ping
comment can keep proxies from timing the stream out. The final response ends
the stream.

When the client goes away mid-request, the era decides: at 2026-07-28
closing the stream *is* cancellation, so the work stops; on the handshake era
disconnection is not cancellation, so the work finishes, its output is dropped,
and questions it is still waiting on are failed (nobody is left to answer them).

The shortcut kept here: on asyncio the disconnect guard is a plain task
started from raw `call_soon`/`call_later` timers, and only for a call that
pauses (`Exchange.run`); the portable path (`_run_in_task_group`, what trio
runs) watches every call from a task group, a task and a cancel scope that
would cost more per request than everything else here does for a JSON answer
(what the shortcut measured: docs/performance.md). `PLAIN_EXCHANGE = True`
(tests set it) runs the portable path on asyncio too, so both stay tested.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any

import anyio
import anyio.lowlevel
from starlette.types import Receive, Send

from ...._concurrency import asyncio_cancel_scope, cancel_scope, light_lock, ticker
from ....errors import INTERNAL_ERROR, MCPError
from ....protocol.jsonrpc import encode

__all__ = ["SSE_HEADERS", "Exchange", "sse_event"]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
_PING = b": ping\n\n"
_UNDECIDED, _JSON, _STREAM = "undecided", "json", "stream"
_NO_SCOPE = contextlib.nullcontext()
PLAIN_EXCHANGE = False
"""Run every exchange on the portable task-group path, even on asyncio (for tests of that path)."""
GUARD_DELAY = 0.05
"""Seconds a request may stay paused before a guard starts watching for a hang-up (and for ping time).

A hang-up is thus noticed up to this much later: a 2026-07-28 call is
cancelled, or a handshake-era call's open questions fail, that much later.
"""


def sse_event(message: dict[str, Any], event_id: str | None = None) -> bytes:
    # Compact JSON never contains a raw newline, so one `data:` line carries it whole.
    if event_id is not None:
        return b"id: " + event_id.encode() + b"\nevent: message\ndata: " + encode(message) + b"\n\n"
    return b"event: message\ndata: " + encode(message) + b"\n\n"


def _is_response(message: dict[str, Any]) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


class Exchange:
    """Runs one request and streams whatever it emits to the client of one POST.

    The work runs in the POST's own task and its sink writes straight to the
    client; one guard task, started once the work has been paused for
    GUARD_DELAY, watches for a disconnect and sends the pings. The common case
    (the answer is the first thing the work emits) thus costs no channel and
    no worker task: the answer is written as JSON from inside the sink, and a
    work that never paused, or paused only briefly, never gets a guard (a
    guard started later finds the response complete and ends by itself).
    """

    # Defaults live on the class: a request answered at once sets only what it uses.
    headers_of: Callable[[dict[str, Any] | None], dict[str, str]] | None = None
    """Extra response headers, given the first message sent (None: none)."""
    on_disconnect: Callable[[list[Any]], None] | None = None
    """Told the ids of the questions still open when the client leaves."""
    recorder: Any = None
    """Records a handshake-era stream for `Last-Event-ID` (_streams.resume.Recorder); None: not resumable."""
    gone = False
    _send: Send
    _mode = _UNDECIDED
    _answered = False  # the response's last write has begun: a disconnect now cancels nothing
    _guarding = True
    _quiet_since = 0.0
    # Serialises stream writes between the work and the guard's pings (made when a stream opens).
    _lock: AbstractAsyncContextManager[Any] | None = None
    _guard_task: asyncio.Task[None] | None = None
    _pinger: asyncio.Task[None] | None = None  # the task writing a keep-alive (asyncio)
    _ping_key: int | asyncio.TimerHandle | None = (
        None  # the next keep-alive's tick (asyncio: the loop's `Ticker`)
    )
    _wakeup: asyncio.Handle | None = None  # the first pause's callback, then the guard's timer'
    _receive: Receive
    _scope: anyio.CancelScope | None = None
    asked: Sequence[Any] = ()
    """The ids of the questions this exchange sent the client."""
    held: AbstractContextManager[Any] | None = None
    """Entered for as long as `run` runs: a long-lived stream's count in its per-client cap (None: none)."""

    def __init__(
        self,
        json_ok: bool,
        sse_ok: bool,
        ping_interval: float,
        cancel_on_disconnect: bool,
        *,
        status_of: Callable[[dict[str, Any]], int] | None = None,
    ) -> None:
        self.json_ok, self.sse_ok = json_ok, sse_ok
        self.ping_interval = ping_interval
        self.cancel_on_disconnect = cancel_on_disconnect
        self.status_of = status_of
        """The HTTP status of a JSON answer (None: 200)."""

    async def sink(self, message: dict[str, Any]) -> None:
        """Where the request's connection sends everything meant for this client."""
        if "method" in message and "id" in message:
            if not self.sse_ok:
                raise MCPError(
                    INTERNAL_ERROR,
                    "the client accepts only application/json responses, so the server cannot ask it anything mid-call",
                )
            if self.gone:
                raise MCPError(INTERNAL_ERROR, "the client disconnected before the server could ask it")
            self.asked = [*self.asked, message["id"]]  # rare: no list until a first question
        elif "method" in message and not self.sse_ok:
            return  # a JSON-only client has no channel for notifications
        if self.gone:
            if self.recorder is not None:  # kept for the client's resumption (handshake era)
                await self.recorder.frame(message, final=_is_response(message))
            return
        if self._mode is _UNDECIDED:
            if _is_response(message) and (self.json_ok or not self.sse_ok):
                await self._answer_json(message)
            else:
                await self._open_stream(message)
        elif self._mode is _STREAM:
            if self.recorder is None:
                await self._stream(sse_event(message))
            else:
                await self._stream_recorded(message)
        # else: the JSON answer is out and a JSON body has room for nothing more

    async def run(self, answer: Awaitable[dict[str, Any] | None], receive: Receive, send: Send) -> None:
        """Await the request's `answer` and write it to the POST's client.

        Whatever the work sends before its answer goes through `sink`; the answer
        is None when the work sent its own (or, cancelled, has none).
        """
        with self.held or _NO_SCOPE:  # counted for as long as the exchange runs (a long-lived stream)
            self._send = send
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # another event loop (trio): a task group carries the guard
                loop = None
            if loop is None or PLAIN_EXCHANGE:
                await self._run_in_task_group(answer, receive)
                return
            # On asyncio the guard is a plain task, started only once the work has been paused for
            # GUARD_DELAY: a guard can do nothing while the work runs, a plain JSON answer usually never
            # pauses, and most calls that do pause answer well within that time. Such calls thus pay
            # for a timer, not for a task, a pending receive() and a cancel scope with a deadline.
            # anyio's task group and task handle would cost more per request than everything else this
            # module does for a JSON answer.
            self._receive = receive
            # Only a 2026-07-28 exchange is ever cancelled (by the guard, when the client leaves).
            with asyncio_cancel_scope()() if self.cancel_on_disconnect else _NO_SCOPE as scope:
                self._scope = scope
                self._wakeup = loop.call_soon(self._first_pause, loop)
                try:
                    message = await answer
                    if message is not None:
                        await self.sink(message)
                    await self._finish()
                    guard = self._guard_task
                    if guard is not None and not guard.done():
                        # The server wakes the guard's pending receive() once the response is complete:
                        # this is its turn to see that and end.
                        await asyncio.sleep(0)
                finally:
                    if self._wakeup is not None:
                        self._wakeup.cancel()
                    self._no_pings(loop)
                    guard = self._guard_task
                    pinger = self._pinger
                    for task in (guard, pinger):
                        if task is not None and not task.done():
                            task.cancel()
                            with anyio.CancelScope(shield=True):
                                await asyncio.wait((task,))
            for task in (guard, pinger):
                if task is not None and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]

    def _first_pause(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._answered:
            if self._mode is _UNDECIDED:  # the silence before a ping counts from here
                self._quiet_since = loop.time()
            self._wakeup = loop.call_later(min(GUARD_DELAY, self.ping_interval), self._start_guard, loop)

    def _start_guard(self, loop: asyncio.AbstractEventLoop) -> None:
        self._wakeup = None  # fired: a long-lived stream need not keep the handle
        if not self._answered:
            self._guard_task = loop.create_task(self._watch(self._receive, self._scope, loop))

    async def _watch(
        self, receive: Receive, scope: anyio.CancelScope | None, loop: asyncio.AbstractEventLoop
    ) -> None:
        """The guard on asyncio: it waits for the hang-up alone, and the pings come from a timer.

        A stream that stays open (a `subscriptions/listen` stream) thus holds,
        while idle, this task's pending `receive()` and a slot in the loop's
        keep-alive `Ticker`, not a cancel scope and a timer of its own.
        """
        if self._answered:  # first scheduled after the whole answer was written: nothing left to guard
            self._guarding = False
            return
        if self.sse_ok and self._mode is not _JSON:
            self._ping_key = ticker(loop).add(self._quiet_since + self.ping_interval, self._ping_due)
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            self._guarding = False
            self._no_pings(loop)
        self._left(scope)

    def _no_pings(self, loop: asyncio.AbstractEventLoop) -> None:
        key = self._ping_key
        if key is not None:
            self._ping_key = None
            ticker(loop).remove(key, self._ping_due)

    def _ping_due(self) -> None:
        """The keep-alive (the loop's `Ticker`): a ping after `ping_interval` of silence, by a short task of its own."""
        self._ping_key = None
        if self._answered or self.gone or self._mode is _JSON or not self._guarding:
            return
        loop = asyncio.get_running_loop()
        due = self._quiet_since + self.ping_interval
        if loop.time() + 0.01 < due:  # something was written meanwhile: the silence counts from then
            self._ping_key = ticker(loop).add(due, self._ping_due)
        else:
            self._pinger = loop.create_task(self._ping_then_wait(loop))

    async def _ping_then_wait(self, loop: asyncio.AbstractEventLoop) -> None:
        await self._ping()
        if not (self._answered or self.gone) and self._guarding:
            self._ping_key = ticker(loop).add(self._quiet_since + self.ping_interval, self._ping_due)

    async def _run_in_task_group(self, answer: Awaitable[dict[str, Any] | None], receive: Receive) -> None:
        self._quiet_since = anyio.current_time()
        async with anyio.create_task_group() as group:
            group.start_soon(self._guard, receive, group.cancel_scope)
            message = await answer
            if message is not None:
                await self.sink(message)
            await self._finish()
            # As above; and anyio's cancel() formats the current task's repr into its reason, a
            # cost worth skipping when the guard has already ended by itself.
            await anyio.lowlevel.checkpoint()
            if self._guarding:
                group.cancel_scope.cancel()

    async def _guard(self, receive: Receive, scope: anyio.CancelScope | None) -> None:
        """Until the client leaves: a ping after every `ping_interval` of silence on a stream that may get one."""
        if self._answered:  # first scheduled after the whole answer was written: nothing left to guard
            self._guarding = False
            return
        try:
            while True:
                if self.sse_ok and self._mode is not _JSON and not self._answered:
                    with anyio.move_on_at(self._quiet_since + self.ping_interval):
                        if (await receive())["type"] == "http.disconnect":
                            break
                        continue
                    if anyio.current_time() >= self._quiet_since + self.ping_interval:
                        await self._ping()
                elif (await receive())["type"] == "http.disconnect":
                    break
        finally:
            self._guarding = False
        self._left(scope)

    def _left(self, scope: anyio.CancelScope | None) -> None:
        """The client hung up: tell the work (cancel it, on 2026-07-28)."""
        if self._answered:  # ASGI reports the end of a completed response as a disconnect too
            return
        self.gone = True
        if self.on_disconnect is not None:
            self.on_disconnect(list(self.asked))
        if self.cancel_on_disconnect and scope is not None:
            scope.cancel()

    async def _answer_json(self, message: dict[str, Any]) -> None:
        self._mode, self._answered = _JSON, True
        body = encode(message)
        # A known length spares the chunked framing: one write fewer per response on uvicorn.
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        if self.headers_of is not None:
            headers += self._extra(message)
        status = 200 if self.status_of is None else self.status_of(message)
        if self.gone:
            return
        try:
            await self._send({"type": "http.response.start", "status": status, "headers": headers})
            await self._send({"type": "http.response.body", "body": body})
        except OSError:  # as in _write
            self.gone = True

    async def _open_stream(self, first: dict[str, Any] | None) -> None:
        """Commit to SSE with `first` as the opening event (None: a ping, after a silence).

        Shielded: once the mode says "stream" the response start must be out,
        whatever cancels the task that opened it (a question from a resolver
        whose sibling just failed), or the next write would be a body with no
        start and the client would get a 500 instead of the call's error.
        """
        self._mode, self._lock = _STREAM, light_lock()
        with cancel_scope() as shield:
            shield.shield = True
            await self._open_stream_now(first)

    async def _open_stream_now(self, first: dict[str, Any] | None) -> None:
        assert self._lock is not None
        async with self._lock:
            start = {
                "type": "http.response.start",
                "status": 200,
                "headers": SSE_HEADERS + self._extra(first),
            }
            await self._write(start)
            if self.recorder is not None:
                chunk = await self.recorder.prime()
                if first is not None:
                    chunk += await self.recorder.frame(first, final=_is_response(first))
            else:
                chunk = _PING if first is None else sse_event(first)
            await self._write({"type": "http.response.body", "body": chunk, "more_body": True})
            self._quiet_since = anyio.current_time()

    async def _stream(self, chunk: bytes) -> None:
        assert self._lock is not None
        async with self._lock:
            await self._write({"type": "http.response.body", "body": chunk, "more_body": True})
            self._quiet_since = anyio.current_time()

    async def _stream_recorded(self, message: dict[str, Any]) -> None:
        """As `_stream`, with the event recorded under the same lock, so ids reach the client in order."""
        assert self._lock is not None
        async with self._lock:
            chunk = await self.recorder.frame(message, final=_is_response(message))
            await self._write({"type": "http.response.body", "body": chunk, "more_body": True})
            self._quiet_since = anyio.current_time()

    async def close_stream(self) -> None:
        """End the HTTP response now and keep recording, so the client resumes with Last-Event-ID (SEP-1699).

        Only a recorded (resumable) stream is closed; on any other, and once the
        answer is out, this does nothing. What the work sends afterwards is
        recorded for the client's resumption, as after a hang-up.
        """
        if self.recorder is None or self._answered or self.gone or self._mode is _JSON:
            return
        if self._mode is _UNDECIDED:  # the priming event first: the client needs an id to resume from
            await self._open_stream(None)
        assert self._lock is not None
        async with self._lock:
            await self._write({"type": "http.response.body", "body": b""})
            self.gone = True

    async def _ping(self) -> None:
        if self._answered or self.gone:
            return
        if self._mode is _UNDECIDED:
            await self._open_stream(None)
        elif self._mode is _STREAM:
            assert self._lock is not None
            async with self._lock:
                # Checked again under the lock: the answer may have ended the response while this waited.
                if not (self._answered or self.gone):
                    await self._write({"type": "http.response.body", "body": _PING, "more_body": True})
                    self._quiet_since = anyio.current_time()

    async def _finish(self) -> None:
        """End the response once the work is done: the stream's last chunk, or a 202 if nothing was sent."""
        if self.recorder is not None:
            await self.recorder.close()
        if self._mode is _JSON:
            return
        self._answered = True
        if self._mode is _UNDECIDED:  # cancelled: JSON-RPC sends no response, HTTP still needs one
            self._mode = _JSON
            await self._write({"type": "http.response.start", "status": 202, "headers": []})
            await self._write({"type": "http.response.body", "body": b""})
            return
        assert self._lock is not None
        async with self._lock:
            await self._write({"type": "http.response.body", "body": b""})

    def _extra(self, first: dict[str, Any] | None) -> list[tuple[bytes, bytes]]:
        if self.headers_of is None:
            return []
        return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers_of(first).items()]

    async def _write(self, message: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            await self._send(message)
        except OSError:  # servers other than uvicorn may raise once the client is gone
            self.gone = True
