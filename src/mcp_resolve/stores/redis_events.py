"""`RedisEventStore`: resumable handshake-era SSE streams on Redis Streams, readable from any worker.

One Redis stream per SSE stream (`XADD`, capped with `MAXLEN ~`), plus a
small hash naming its session (a digest), the request whose answer it
carries and the worker writing it; both expire an hour after the last
event. An event id is `<stream id>.<Redis entry id>`, so a reader resumes
with one `XREAD BLOCK` from exactly that entry, on whichever worker the
client's GET reached.

Each worker that writes streams keeps a heartbeat key alive (every few
seconds, expiring after `heartbeat_ttl`). A reader that finds no new events
on a stream without an end looks at its writer's heartbeat: gone means the
worker died with the request, and the reader reports the stream orphaned.

Every backend failure raises `StoreUnavailable`: a client resuming while
Redis is down gets an error answer, not an empty replay.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
from typing import Any

from .events import Batch, UnknownEvent, new_stream_id, parse_event_id
from .redis_conn import RedisConnection, StoreUnavailable

__all__ = ["RedisEventStore"]

_ENTRY = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class RedisEventStore:
    """An `EventStore` every worker shares: events in Redis Streams, writers known by heartbeat."""

    def __init__(
        self,
        redis: RedisConnection | str,
        *,
        ttl: float = 3600.0,
        max_events: int = 1000,
        heartbeat_ttl: float = 10.0,
    ) -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self.ttl_ms = int(ttl * 1000)
        self.max_events = max_events
        self.heartbeat_ttl = heartbeat_ttl
        self.worker = secrets.token_hex(8)
        self.max_block = min(1.5, self.redis.timeout * 0.75)
        self._beating: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"RedisEventStore({self.redis!r})"

    def _keys(self, stream_id: str) -> tuple[str, str]:
        return self.redis.key("events", stream_id), self.redis.key("stream", stream_id)

    async def open_stream(self, session_id: str, request_id: Any) -> str:
        self._keep_alive()
        stream_id = new_stream_id()
        _, meta = self._keys(stream_id)
        record = {"s": _digest(session_id), "r": json.dumps(request_id), "w": self.worker}

        async def write(r: Any) -> None:
            async with r.pipeline(transaction=True) as pipe:
                pipe.hset(meta, mapping=record)
                pipe.pexpire(meta, self.ttl_ms)
                await pipe.execute()

        await self.redis.call("event store", write)
        return stream_id

    async def append(self, stream_id: str, message: dict[str, Any] | None, *, final: bool = False) -> str:
        events, meta = self._keys(stream_id)
        fields = {
            "m": b"" if message is None else json.dumps(message, separators=(",", ":")),
            "f": b"1" if final else b"",
        }

        async def write(r: Any) -> Any:
            async with r.pipeline(transaction=True) as pipe:
                pipe.xadd(events, fields, maxlen=self.max_events, approximate=True)
                if final:
                    pipe.hset(meta, "e", b"1")
                pipe.pexpire(events, self.ttl_ms)
                pipe.pexpire(meta, self.ttl_ms)
                return (await pipe.execute())[0]

        entry = await self.redis.call("event store", write)
        return f"{stream_id}.{entry.decode() if isinstance(entry, bytes) else entry}"

    async def _meta(self, session_id: str, event_id: str) -> tuple[str, str, dict[bytes, bytes]]:
        stream_id, entry = parse_event_id(event_id, _ENTRY)
        _, meta = self._keys(stream_id)
        record: Any = await self.redis.call("event store", lambda r: r.hgetall(meta))
        if not record or record.get(b"s", b"").decode() != _digest(session_id):
            raise UnknownEvent("no such stream in this session")
        return stream_id, entry, record

    async def stream_of(self, session_id: str, event_id: str) -> tuple[str, Any]:
        stream_id, _, record = await self._meta(session_id, event_id)
        return stream_id, json.loads(record.get(b"r", b"null"))

    async def read_after(self, session_id: str, event_id: str, *, wait: float) -> Batch:
        stream_id, entry, record = await self._meta(session_id, event_id)
        events_key, _ = self._keys(stream_id)
        request_id = json.loads(record.get(b"r", b"null"))
        # Blocking reads stay within the connection's socket timeout; a reader that wants to wait
        # longer calls again (and learns meanwhile whether the writer is still alive).
        block = max(1, int(min(wait, self.max_block) * 1000))
        found: Any = await self.redis.call(
            "event store", lambda r: r.xread({events_key: entry}, count=200, block=block)
        )
        batch = Batch(request_id=request_id)
        for _, entries in found or ():
            for entry_id, fields in entries:
                entry_text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                raw = fields.get(b"m", b"")
                batch.events.append((f"{stream_id}.{entry_text}", json.loads(raw) if raw else None))
                batch.ended = batch.ended or bool(fields.get(b"f"))
        if not batch.events and record.get(b"e"):
            batch.ended = True  # resumed after the last event: nothing more will come
        elif not batch.events:
            writer = record.get(b"w", b"").decode()
            alive = await self.redis.call("event store", lambda r: r.exists(self.redis.key("worker", writer)))
            batch.orphaned = not alive
        return batch

    def _keep_alive(self) -> None:
        if self._beating is None or self._beating.done():
            self._beating = self.redis.background(self._heartbeat())

    async def _heartbeat(self) -> None:
        key = self.redis.key("worker", self.worker)
        ttl = max(1, int(self.heartbeat_ttl * 1000))
        while True:
            try:
                await self.redis.call("event store", lambda r: r.set(key, b"1", px=ttl))
            except StoreUnavailable:
                pass  # logged by the connection; streams written now fail on their own
            await asyncio.sleep(self.heartbeat_ttl / 3)
