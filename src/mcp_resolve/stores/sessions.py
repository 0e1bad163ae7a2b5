"""Session stores: handshake-era (2025) sessions that any worker can serve.

The embedded default is no store at all: a session lives in the `Sessions`
table of the worker that answered its `initialize` (transports.http._exchange.sessions),
which is right for one process and, behind a load balancer, needs sticky
routing. With a `SessionStore` (Redis, from MCP_RESOLVE_REDIS_URL) what
`initialize` settled (version, capabilities, client info, log level,
subscriptions, the principal) is a record every worker can load, so a
session survives the worker that opened it and its requests may land
anywhere (transports.http._fleet.sessions).

A session record is JSON the server wrote; its key is a digest of the
session id, so nothing a client sends shapes a key. `load` also renews the
record's idle expiry, the fleet-wide version of the idle timeout. The store
also carries the fleet's messages about sessions (an answer to a question
another worker asked, a cancellation, "reload this session"), on one
channel every worker listens to.

Records are bounded in count for the whole fleet: one sorted set scores
each record by when it expires (Redis's clock), and a new session is saved
only while fewer than the server's `max_sessions` records have not
expired (`SessionStoreFull` otherwise). A worker that closes a session to
make room for its client's new one deletes its record too
(`delete_idle`), unless another worker served it since.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..errors import INTERNAL_ERROR, MCPError
from ._redis.connection import RedisConnection

__all__ = ["RedisSessionStore", "SessionStore", "SessionStoreFull"]

logger = logging.getLogger("mcp_resolve.stores")


class SessionStoreFull(MCPError):
    """The fleet holds `limit` sessions: a new one is refused (-32603), the ones open go on."""

    def __init__(self, limit: int) -> None:
        super().__init__(INTERNAL_ERROR, "session store full: too many open sessions; try again later")
        self.limit = limit


@runtime_checkable
class SessionStore(Protocol):
    async def save(
        self, session_id: str, record: dict[str, Any], ttl: float | None, limit: int | None = None
    ) -> None:
        """Write the record; a new one only while fewer than `limit` are kept, else `SessionStoreFull`."""
        ...

    async def load(self, session_id: str, ttl: float | None) -> dict[str, Any] | None: ...

    async def delete(self, session_id: str) -> None: ...

    async def delete_idle(self, session_id: str, idle: float, ttl: float | None) -> bool:
        """Delete the record unless it was used less than `idle` seconds ago (by another worker)."""
        ...

    async def broadcast(self, message: dict[str, Any]) -> None: ...

    def on_message(self, handler: Callable[[dict[str, Any]], None]) -> Callable[[], None]: ...

    def on_lost(self, callback: Callable[[], None]) -> None: ...

    @property
    def connected(self) -> bool:
        """Whether messages broadcast now reach this worker (its subscriber is up)."""
        ...


_DEFAULT_TTL_MS = 24 * 3600 * 1000  # sessions without an idle timeout still end one day after their last use


def _ttl_ms(ttl: float | None) -> int:
    return _DEFAULT_TTL_MS if ttl is None else max(1000, int(ttl * 1000))


_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

_SAVE = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 and tonumber(ARGV[3]) >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), KEYS[1])
return 1
"""
)
"""Save record KEYS[1] (ARGV[1], for ARGV[2] ms) and score it in KEYS[2]; 0 if it is new and the index
already holds ARGV[3] unexpired records (-1: no bound)."""

_LOAD = (
    _NOW
    + """
local raw = redis.call('GET', KEYS[1])
if not raw then return false end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), KEYS[1])
return raw
"""
)
"""Read record KEYS[1] and renew its idle expiry (ARGV[1] ms), in the index KEYS[2] too."""

_DELETE_IDLE = """
local left = redis.call('PTTL', KEYS[1])
if left == -2 then redis.call('ZREM', KEYS[2], KEYS[1]) end
if left < 0 or tonumber(ARGV[1]) - left < tonumber(ARGV[2]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], KEYS[1])
return 1
"""
"""Delete record KEYS[1] if it has been idle (ARGV[1], its idle TTL, minus what is left of it) at least
ARGV[2] ms."""

_IDLE_SLACK = 0.1
"""Seconds of disagreement tolerated between this worker's idle time and the record's (clock ticks)."""


class RedisSessionStore:
    """Session records in Redis (one key each, expiring when idle, counted) and the fleet's session channel."""

    def __init__(self, redis: RedisConnection | str) -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self.channel = self.redis.key("bus", "sessions")
        self._index = self.redis.key("session-index", "expiry")

    def __repr__(self) -> str:
        return f"RedisSessionStore({self.redis!r})"

    def _key(self, session_id: str) -> str:
        return self.redis.key("session", hashlib.sha256(session_id.encode()).hexdigest())

    async def count(self) -> int:
        """The session records the fleet holds (expired ones not purged yet included)."""
        return int(await self.redis.call("session store", lambda r: r.zcard(self._index)))

    async def save(
        self, session_id: str, record: dict[str, Any], ttl: float | None, limit: int | None = None
    ) -> None:
        payload = json.dumps(record, separators=(",", ":"))
        keys, most = (self._key(session_id), self._index), -1 if limit is None else limit
        saved = await self.redis.call(
            "session store", lambda r: r.eval(_SAVE, 2, *keys, payload, _ttl_ms(ttl), most)
        )
        if not saved:
            logger.warning("session store: %d sessions open, the most it may hold; a new one refused", most)
            raise SessionStoreFull(most)

    async def load(self, session_id: str, ttl: float | None) -> dict[str, Any] | None:
        keys = (self._key(session_id), self._index)
        raw = await self.redis.call("session store", lambda r: r.eval(_LOAD, 2, *keys, _ttl_ms(ttl)))
        if raw is None:
            return None
        record = json.loads(raw)
        return record if isinstance(record, dict) else None

    async def delete(self, session_id: str) -> None:
        key = self._key(session_id)

        async def delete(r: Any) -> None:
            async with r.pipeline(transaction=True) as pipe:
                pipe.delete(key)
                pipe.zrem(self._index, key)
                await pipe.execute()

        await self.redis.call("session store", delete)

    async def delete_idle(self, session_id: str, idle: float, ttl: float | None) -> bool:
        keys = (self._key(session_id), self._index)
        idle_ms = max(0, int((idle - _IDLE_SLACK) * 1000))
        deleted = await self.redis.call(
            "session store", lambda r: r.eval(_DELETE_IDLE, 2, *keys, _ttl_ms(ttl), idle_ms)
        )
        return bool(deleted)

    async def broadcast(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message, separators=(",", ":"))
        await self.redis.call("session store", lambda r: r.publish(self.channel, payload))

    def on_message(self, handler: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        def received(data: bytes) -> None:
            try:
                message = json.loads(data)
            except ValueError:
                return
            if isinstance(message, dict):
                handler(message)

        return self.redis.hub().add(self.channel, received)

    def on_lost(self, callback: Callable[[], None]) -> None:
        self.redis.hub().on_lost(callback)

    @property
    def connected(self) -> bool:
        return self.redis.hub().connected
