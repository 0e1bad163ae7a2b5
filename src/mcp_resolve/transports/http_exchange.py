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
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
from starlette.types import Receive, Send

from ..errors import INTERNAL_ERROR, MCPError
from ..protocol.jsonrpc import encode
from ..protocol.session import Sink

__all__ = ["SSE_HEADERS", "Exchange", "sse_event"]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
_END = object()


def sse_event(message: dict[str, Any]) -> bytes:
    # Compact JSON never contains a raw newline, so one `data:` line carries it whole.
    return b"event: message\ndata: " + encode(message) + b"\n\n"


def _is_response(message: dict[str, Any]) -> bool:
    return "method" not in message and ("result" in message or "error" in message)


@dataclass
class Exchange:
    """Runs one request and streams whatever it emits to the client of one POST."""

    json_ok: bool
    sse_ok: bool
    ping_interval: float
    cancel_on_disconnect: bool
    status_of: Callable[[dict[str, Any]], int] = lambda _message: 200
    headers_of: Callable[[dict[str, Any] | None], dict[str, str]] = lambda _message: {}
    on_disconnect: Callable[[list[Any]], None] = lambda _asked: None
    gone: bool = False
    asked: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](0)

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
            self.asked.append(message["id"])
        elif "method" in message and not self.sse_ok:
            return  # a JSON-only client has no channel for notifications
        if self.gone:
            return
        try:
            await self._send.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def run(self, work: Callable[[Sink], Awaitable[None]], receive: Receive, send: Send) -> None:
        """Run `work(sink)` (which must send the final response through the sink) and answer the POST."""

        async def worker() -> None:
            async with self._send:
                await work(self.sink)

        answered = watching = False

        async def watch(scope: anyio.CancelScope) -> None:
            nonlocal watching
            watching = True
            while (await receive())["type"] != "http.disconnect":
                pass
            watching = False
            if answered:  # ASGI reports the end of a completed response as a disconnect too
                return
            self.gone = True
            self.on_disconnect(self.asked)
            if self.cancel_on_disconnect:
                scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(worker)
            group.start_soon(watch, group.cancel_scope)
            await self._respond(send)
            answered = True
            # The server wakes the watcher's pending receive() once the response is complete; give
            # it that turn, and cancel only a watcher still waiting: anyio's cancel() formats the
            # current task's repr into its reason, a cost worth skipping on every request.
            await anyio.lowlevel.checkpoint()
            if watching:
                group.cancel_scope.cancel()  # the worker has finished; this stops the watcher

    async def _next(self, timeout: float) -> Any:
        """The next message, None after `timeout` seconds of silence, or _END when the work is done."""
        with anyio.move_on_after(timeout):
            try:
                return await self._receive.receive()
            except anyio.EndOfStream:
                return _END
        return None

    async def _respond(self, send: Send) -> None:
        first = await self._next(self.ping_interval if self.sse_ok else math.inf)
        if first is _END:  # cancelled: JSON-RPC sends no response, HTTP still needs one
            await self._write(send, {"type": "http.response.start", "status": 202, "headers": []})
            await self._write(send, {"type": "http.response.body", "body": b""})
            return
        if first is not None and _is_response(first) and (self.json_ok or not self.sse_ok):
            body = encode(first)
            # A known length spares the chunked framing: one write fewer per response on uvicorn.
            length = str(len(body)).encode("ascii")
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", length),
                *self._extra(first),
            ]
            await self._write(
                send, {"type": "http.response.start", "status": self.status_of(first), "headers": headers}
            )
            await self._write(send, {"type": "http.response.body", "body": body})
            async for _ in self._receive:  # let the worker finish
                pass
            return
        await self._write(
            send, {"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + self._extra(first)}
        )
        message = first
        while message is not _END:
            chunk = b": ping\n\n" if message is None else sse_event(message)
            await self._write(send, {"type": "http.response.body", "body": chunk, "more_body": True})
            message = await self._next(self.ping_interval)
        await self._write(send, {"type": "http.response.body", "body": b""})

    def _extra(self, first: dict[str, Any] | None) -> list[tuple[bytes, bytes]]:
        return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers_of(first).items()]

    async def _write(self, send: Send, message: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            await send(message)
        except OSError:  # servers other than uvicorn may raise once the client is gone
            self.gone = True
