"""Event stores: what makes a handshake-era SSE stream resumable with `Last-Event-ID`.

On protocol 2025-11-25 a client whose SSE stream broke may reconnect with a
GET carrying the id of the last event it saw, and the server may send what
came after, on that stream only (basic/transports, "Resumability and
Redelivery"). 2026-07-28 dropped resumption: there, closing the stream is
cancellation. So only handshake-era streams are recorded, and only when the
server has an event store (`MemoryEventStore()` for one process, or every
store on Redis with MCP_RESOLVE_REDIS_URL, where a client may resume on any
worker).

An event id is `<stream id>.<position>`: the stream id is a random token the
store made, so an id names its stream (and, through the stream's record,
the session it belongs to) and cannot be guessed. Every read is checked
against the session asking: another session's id, a malformed one, one too
long to be ours and one that has expired are all the same `UnknownEvent`.

A stream ends with its final event (the request's response, or an end mark
when it has none: a cancelled request, or a GET stream the session closed).
A reader following a stream that has no end yet learns whether the worker
writing it is still alive (`Batch.orphaned`), so a client resuming a call
whose worker died gets an error rather than waiting forever.
"""

from __future__ import annotations

import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import anyio
import pydantic_core

__all__ = ["Batch", "EventStore", "MemoryEventStore", "UnknownEvent", "parse_event_id"]

MAX_EVENT_ID = 96
_STREAM_ID = re.compile(r"[0-9a-f]{32}")


class UnknownEvent(LookupError):
    """A Last-Event-ID that names no stream of this session (malformed, expired, or someone else's)."""


def new_stream_id() -> str:
    return secrets.token_hex(16)


def parse_event_id(event_id: object, position: re.Pattern[str]) -> tuple[str, str]:
    """(stream id, position) of an event id, checked strictly before any lookup; else `UnknownEvent`."""
    if not isinstance(event_id, str) or len(event_id) > MAX_EVENT_ID:
        raise UnknownEvent("malformed event id")
    stream_id, dot, where = event_id.partition(".")
    if not dot or not _STREAM_ID.fullmatch(stream_id) or not position.fullmatch(where):
        raise UnknownEvent("malformed event id")
    return stream_id, where


@dataclass
class Batch:
    """What a read found after an event id: events in order, whether the stream has ended, whether its writer died."""

    events: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    ended: bool = False
    orphaned: bool = False
    request_id: Any = None
    """The id of the request whose response the stream carries (None for a GET stream)."""


@runtime_checkable
class EventStore(Protocol):
    """Where the events of resumable SSE streams are kept until they expire."""

    async def open_stream(self, session_id: str, request_id: Any) -> str:
        """A new stream of `session_id` (carrying `request_id`'s answer, or None for a GET stream); its id."""
        ...

    async def append(self, stream_id: str, message: dict[str, Any] | None, *, final: bool = False) -> str:
        """Store one event (None: a priming or end mark with no data); its event id."""
        ...

    async def read_after(self, session_id: str, event_id: str, *, wait: float) -> Batch:
        """The events after `event_id` on its stream, waiting up to `wait` seconds for one; `UnknownEvent` if
        the id is not one of `session_id`'s."""
        ...

    async def stream_of(self, session_id: str, event_id: str) -> tuple[str, Any]:
        """(stream id, request id) of an event id of `session_id`, or `UnknownEvent`."""
        ...


_POSITION = re.compile(r"[0-9]{1,12}")


class _Stream:
    __slots__ = ("bytes", "changed", "ended", "events", "next", "request_id", "session_id", "touched")

    def __init__(self, session_id: str, request_id: Any, now: float) -> None:
        self.session_id = session_id
        self.request_id = request_id
        self.events: list[tuple[int, dict[str, Any] | None, int]] = []
        """(position, message, its size in bytes of JSON)."""
        self.bytes = 0
        self.next = 1
        self.ended = False
        self.changed = anyio.Event()
        self.touched = now


class MemoryEventStore:
    """One process's event store: bounded in streams, events per stream, bytes and age, forgotten on restart.

    Past `max_streams` or `max_bytes` (the events' JSON, all streams together)
    the least recently written streams are dropped, and a stream that alone
    holds more than `max_bytes` loses its oldest events, as one past
    `max_events` does: a client resuming a dropped stream is told its event id
    is unknown, never sent another stream's events.
    """

    def __init__(
        self,
        *,
        max_streams: int = 10_000,
        max_events: int = 1000,
        max_bytes: int = 64 * 1024 * 1024,
        ttl: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_streams, self.max_events, self.max_bytes, self.ttl = max_streams, max_events, max_bytes, ttl
        self._clock = clock
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        self._bytes = 0

    @property
    def held_bytes(self) -> int:
        """The bytes of JSON the stored events take, every stream together."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._streams)

    async def open_stream(self, session_id: str, request_id: Any) -> str:
        now = self._clock()
        self._purge(now)
        while len(self._streams) >= self.max_streams:
            self._drop_oldest()
        stream_id = new_stream_id()
        self._streams[stream_id] = _Stream(session_id, request_id, now)
        return stream_id

    async def append(self, stream_id: str, message: dict[str, Any] | None, *, final: bool = False) -> str:
        stream = self._streams.get(stream_id)
        if stream is None:  # expired while its request ran: keep numbering, store nothing
            return f"{stream_id}.0"
        position = stream.next
        stream.next += 1
        size = 0 if message is None else len(pydantic_core.to_json(message))
        stream.events.append((position, message, size))
        stream.bytes += size
        self._bytes += size
        self._streams.move_to_end(stream_id)
        while len(stream.events) > self.max_events:
            self._drop_event(stream)
        while self._bytes > self.max_bytes and next(iter(self._streams)) != stream_id:
            self._drop_oldest()
        while self._bytes > self.max_bytes and len(stream.events) > 1:
            self._drop_event(stream)
        stream.ended = stream.ended or final
        stream.touched = self._clock()
        stream.changed.set()
        stream.changed = anyio.Event()
        return f"{stream_id}.{position}"

    def _find(self, session_id: str, event_id: str) -> tuple[_Stream, int]:
        stream_id, where = parse_event_id(event_id, _POSITION)
        stream = self._streams.get(stream_id)
        if stream is None or stream.session_id != session_id or self._expired(stream, self._clock()):
            raise UnknownEvent("no such stream in this session")
        return stream, int(where)

    async def stream_of(self, session_id: str, event_id: str) -> tuple[str, Any]:
        stream, _ = self._find(session_id, event_id)
        return event_id.partition(".")[0], stream.request_id

    async def read_after(self, session_id: str, event_id: str, *, wait: float) -> Batch:
        stream, after = self._find(session_id, event_id)
        stream_id = event_id.partition(".")[0]
        if not any(p > after for p, _, _ in stream.events) and not stream.ended:
            with anyio.move_on_after(wait):
                await stream.changed.wait()
        events = [(f"{stream_id}.{p}", m) for p, m, _ in stream.events if p > after]
        return Batch(events, stream.ended, False, stream.request_id)

    def _expired(self, stream: _Stream, now: float) -> bool:
        return now - stream.touched > self.ttl

    def _purge(self, now: float) -> None:
        while self._streams:
            oldest = next(iter(self._streams.values()))
            if not self._expired(oldest, now):
                return
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        _, stream = self._streams.popitem(last=False)
        self._bytes -= stream.bytes

    def _drop_event(self, stream: _Stream) -> None:
        _, _, size = stream.events.pop(0)
        stream.bytes -= size
        self._bytes -= size
