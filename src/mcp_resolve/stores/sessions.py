"""Session stores: handshake-era (2025) sessions that any worker can serve.

The embedded default is no store at all: a session lives in the `Sessions`
table of the worker that answered its `initialize` (transports.http_sessions),
which is right for one process and, behind a load balancer, needs sticky
routing. With a `SessionStore` (Redis, from MCP_RESOLVE_REDIS_URL) what
`initialize` settled (version, capabilities, client info, log level,
subscriptions, the principal) is a record every worker can load, so a
session survives the worker that opened it and its requests may land
anywhere (transports.http_fleet).

A session record is JSON the server wrote; its key is a digest of the
session id, so nothing a client sends shapes a key. `load` also renews the
record's idle expiry, the fleet-wide version of the idle timeout. The store
also carries the fleet's messages about sessions (an answer to a question
another worker asked, a cancellation, "reload this session"), on one
channel every worker listens to.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from .redis_conn import RedisConnection

__all__ = ["RedisSessionStore", "SessionStore"]


@runtime_checkable
class SessionStore(Protocol):
    async def save(self, session_id: str, record: dict[str, Any], ttl: float | None) -> None: ...

    async def load(self, session_id: str, ttl: float | None) -> dict[str, Any] | None: ...

    async def delete(self, session_id: str) -> None: ...

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


class RedisSessionStore:
    """Session records in Redis (one key each, expiring when idle) and the fleet's session channel."""

    def __init__(self, redis: RedisConnection | str) -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self.channel = self.redis.key("bus", "sessions")

    def __repr__(self) -> str:
        return f"RedisSessionStore({self.redis!r})"

    def _key(self, session_id: str) -> str:
        return self.redis.key("session", hashlib.sha256(session_id.encode()).hexdigest())

    async def save(self, session_id: str, record: dict[str, Any], ttl: float | None) -> None:
        payload = json.dumps(record, separators=(",", ":"))
        key = self._key(session_id)
        await self.redis.call("session store", lambda r: r.set(key, payload, px=_ttl_ms(ttl)))

    async def load(self, session_id: str, ttl: float | None) -> dict[str, Any] | None:
        key = self._key(session_id)
        raw = await self.redis.call("session store", lambda r: r.getex(key, px=_ttl_ms(ttl)))
        if raw is None:
            return None
        record = json.loads(raw)
        return record if isinstance(record, dict) else None

    async def delete(self, session_id: str) -> None:
        key = self._key(session_id)
        await self.redis.call("session store", lambda r: r.delete(key))

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
