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

The store is bounded as `MemoryEventStore` is, with the same knobs, per
server namespace: at most `max_streams` streams, `max_events` events a
stream and `max_bytes` of events (their JSON) in all, the least recently
written streams dropped first. One sorted set scores each stream by its
last write (Redis's clock) and one hash holds each stream's bytes and their
total, so opening a stream and appending to one are each a single script:
atomic with the bounds across workers, and a handful of commands, so Redis
never fills up with streams (where `noeviction` would make every write fail,
claims and tasks included). A stream dropped while its request still runs
takes no more events.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import secrets
from typing import Any

from ..events import Batch, UnknownEvent, new_stream_id, parse_event_id
from .connection import RedisConnection, StoreUnavailable

__all__ = ["RedisEventStore"]

_ENTRY = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")

_COMMON = """
local LRU, SIZES, PREFIX = KEYS[1], KEYS[2], ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function stamp()
  -- The time of a write, made later than every other write's: two writes in one millisecond
  -- (two workers, or one busy one) must still order, or the oldest is not the one dropped.
  local now = now_ms()
  local top = redis.call('ZRANGE', LRU, -1, -1, 'WITHSCORES')[2]
  if top and tonumber(top) >= now then return tonumber(top) + 1 end
  return now
end
local function total() return tonumber(redis.call('HGET', SIZES, '*')) or 0 end
local function grow(id, size)
  if size ~= 0 then
    redis.call('HINCRBY', SIZES, id, size)
    redis.call('HINCRBY', SIZES, '*', size)
  end
end
local function drop(id)
  local size = tonumber(redis.call('HGET', SIZES, id)) or 0
  redis.call('HDEL', SIZES, id)
  if size ~= 0 then redis.call('HINCRBY', SIZES, '*', -size) end
  redis.call('ZREM', LRU, id)
  redis.call('DEL', PREFIX .. ':events:' .. id, PREFIX .. ':stream:' .. id)
end
local function drop_oldest(except)
  local oldest = redis.call('ZRANGE', LRU, 0, 0)[1]
  if not oldest or oldest == except then return false end
  drop(oldest)
  return true
end
local function trim(events, count)
  local freed = 0
  for _, entry in ipairs(redis.call('XRANGE', events, '-', '+', 'COUNT', count)) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'm' then freed = freed + string.len(fields[i + 1]) end
    end
    redis.call('XDEL', events, entry[1])
  end
  return freed
end
"""
"""KEYS[1]: the streams by last write (ms); KEYS[2]: each stream's bytes and their total ('*'); ARGV[1]:
the namespace's key prefix, for the keys of a stream dropped to make room."""

_OPEN = (
    _COMMON
    + """
local id, ttl, most = ARGV[2], tonumber(ARGV[6]), tonumber(ARGV[7])
local now = now_ms()
for _, old in ipairs(redis.call('ZRANGEBYSCORE', LRU, '-inf', '(' .. (now - ttl), 'LIMIT', 0, 1000)) do
  drop(old)
end
while redis.call('ZCARD', LRU) >= most and drop_oldest(nil) do end
redis.call('HSET', KEYS[3], 's', ARGV[3], 'r', ARGV[4], 'w', ARGV[5])
redis.call('PEXPIRE', KEYS[3], ttl)
redis.call('ZADD', LRU, stamp(), id)
redis.call('HSET', SIZES, id, 0)
return 1
"""
)
"""Open stream ARGV[2] (its record in KEYS[3]: session digest, request id, writer) for ARGV[6] ms, after
dropping expired streams and, past ARGV[7] streams, the least recently written."""

_APPEND = (
    _COMMON
    + """
local id, events, meta = ARGV[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', meta) == 0 then return false end
local ttl, most_events, most_bytes = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local entry = redis.call('XADD', events, '*', 'm', ARGV[3], 'f', ARGV[4])
local size = string.len(ARGV[3])
local excess = redis.call('XLEN', events) - most_events
if excess > 0 then size = size - trim(events, excess) end
grow(id, size)
if ARGV[4] == '1' then redis.call('HSET', meta, 'e', '1') end
redis.call('PEXPIRE', events, ttl)
redis.call('PEXPIRE', meta, ttl)
redis.call('ZADD', LRU, stamp(), id)
while total() > most_bytes and drop_oldest(id) do end
while total() > most_bytes and redis.call('XLEN', events) > 1 do grow(id, -trim(events, 1)) end
return entry
"""
)
"""Append event ARGV[3] (its JSON, '' for none; ARGV[4] '1' if final) to stream ARGV[2] (KEYS[3] its
events, KEYS[4] its record), unless the stream is gone; keep ARGV[6] events and ARGV[7] bytes in all."""


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class RedisEventStore:
    """An `EventStore` every worker shares: events in Redis Streams, writers known by heartbeat."""

    def __init__(
        self,
        redis: RedisConnection | str,
        *,
        max_streams: int = 10_000,
        max_events: int = 1000,
        max_bytes: int = 64 * 1024 * 1024,
        ttl: float = 3600.0,
        heartbeat_ttl: float = 10.0,
    ) -> None:
        if min(max_streams, max_events, max_bytes) < 1 or ttl <= 0:
            raise ValueError("max_streams, max_events, max_bytes and ttl must be positive")
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self.ttl_ms = max(1, int(ttl * 1000))
        self.max_streams, self.max_events, self.max_bytes = max_streams, max_events, max_bytes
        self.heartbeat_ttl = heartbeat_ttl
        self.worker = secrets.token_hex(8)
        self.max_block = min(1.5, self.redis.timeout * 0.75)
        self._beating: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"RedisEventStore({self.redis!r})"

    def _keys(self, stream_id: str) -> tuple[str, str]:
        return self.redis.key("events", stream_id), self.redis.key("stream", stream_id)

    @property
    def _index(self) -> tuple[str, str]:
        """(the streams by last write, their bytes): the keys every script of this store shares."""
        return self.redis.key("streams", "written"), self.redis.key("streams", "bytes")

    async def held(self) -> tuple[int, int]:
        """(streams, bytes of their events' JSON) the store counts now, every worker's together."""
        written, sizes = self._index

        async def read(r: Any) -> Any:
            async with r.pipeline(transaction=True) as pipe:
                pipe.zcard(written)
                pipe.hget(sizes, "*")
                return await pipe.execute()

        streams, size = await self.redis.call("event store", read)
        return int(streams), int(size or 0)

    async def open_stream(self, session_id: str, request_id: Any) -> str:
        self._keep_alive()
        stream_id = new_stream_id()
        _, meta = self._keys(stream_id)
        args = (self.redis.prefix, stream_id, _digest(session_id), json.dumps(request_id), self.worker)
        await self.redis.call(
            "event store",
            lambda r: r.eval(_OPEN, 3, *self._index, meta, *args, self.ttl_ms, self.max_streams),
        )
        return stream_id

    async def append(self, stream_id: str, message: dict[str, Any] | None, *, final: bool = False) -> str:
        events, meta = self._keys(stream_id)
        data = b"" if message is None else json.dumps(message, separators=(",", ":")).encode()
        args = (self.redis.prefix, stream_id, data, b"1" if final else b"")
        bounds = (self.ttl_ms, self.max_events, self.max_bytes)
        entry = await self.redis.call(
            "event store", lambda r: r.eval(_APPEND, 4, *self._index, events, meta, *args, *bounds)
        )
        if entry is None:  # dropped (or expired) while its request ran: keep answering, store nothing
            return f"{stream_id}.0-0"
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
