"""`RedisKeyValueStore`: the key-value store every worker of a fleet shares, on the server's Redis.

A value is one string key with a Redis TTL (PX), under a digest of the
caller's key. One sorted set scores every value key by its expiry (Redis's
clock), one hash holds each one's size and one counter their sum, so a put is
one script: drop what expired (a thousand at a time), refuse past a bound
(`KeyValueStoreFull`, nothing written), write. `only_new` is decided in that
same script and `take` is a script too (read, delete, uncount), so of any
number of workers racing on one key exactly one wins. Redis runs a script
whole; the keys of one store sit in one namespace, so it needs one Redis (or
one shard), not a cluster spreading them.

Any failure of Redis raises `StoreUnavailable`: a put that may not have
landed is never reported as stored, and a value that cannot be read is never
guessed. A `take` whose reply was lost may have deleted the value; the caller
fails closed (a single-use code lost is a login to start again, never a code
redeemed twice).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from ..keyvalue import (
    MAX_BYTES,
    MAX_ENTRIES,
    MAX_VALUE_BYTES,
    KeyValueStoreFull,
    check_bounds,
    check_key,
    check_put,
)
from .connection import RedisConnection

__all__ = ["RedisKeyValueStore"]

_DROP = """
local INDEX, SIZES, BYTES = KEYS[1], KEYS[2], KEYS[3]
local function uncount(key)
  local size = tonumber(redis.call('HGET', SIZES, key))
  if not size then return end
  redis.call('HDEL', SIZES, key)
  redis.call('ZREM', INDEX, key)
  if redis.call('DECRBY', BYTES, size) <= 0 then redis.call('DEL', BYTES) end
end
"""
"""KEYS[1..3]: the store's index of value keys by expiry (ms), their sizes, and the sum of the sizes."""

_PUT = (
    _DROP
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, key in ipairs(redis.call('ZRANGEBYSCORE', INDEX, '-inf', now, 'LIMIT', 0, 1000)) do
  uncount(key)
  redis.call('DEL', key)
end
local key, ttl, size = KEYS[4], tonumber(ARGV[2]), tonumber(ARGV[4])
if ARGV[3] == '1' and redis.call('EXISTS', key) == 1 then return 0 end
local old = tonumber(redis.call('HGET', SIZES, key))
if not old then
  if redis.call('ZCARD', INDEX) >= tonumber(ARGV[5]) then return 'max_entries' end
  old = 0
end
if (tonumber(redis.call('GET', BYTES)) or 0) - old + size > tonumber(ARGV[6]) then return 'max_bytes' end
redis.call('SET', key, ARGV[1], 'PX', ttl)
redis.call('ZADD', INDEX, now + ttl, key)
redis.call('HSET', SIZES, key, size)
redis.call('INCRBY', BYTES, size - old)
return 1
"""
)
"""Store ARGV[1] at KEYS[4] for ARGV[2] ms (ARGV[3] '1': only if absent); ARGV[4] is the size it counts
for, ARGV[5] and ARGV[6] the most entries and bytes. 1 stored, 0 present, or the name of the bound."""

_TAKE = (
    _DROP
    + """
local value = redis.call('GET', KEYS[4])
if value then redis.call('DEL', KEYS[4]) end
uncount(KEYS[4])
return value
"""
)

_DELETE = (
    _DROP
    + """
for i = 4, #KEYS do
  redis.call('DEL', KEYS[i])
  uncount(KEYS[i])
end
return 1
"""
)


class RedisKeyValueStore:
    """A `KeyValueStore` on Redis, for a fleet where any worker serves any step.

    `name` keeps stores on one connection apart (the keys are
    `<prefix>:<name>:<digest of the key>`). The bounds hold for the whole
    fleet together. Redis down: `StoreUnavailable`, nothing guessed.
    """

    def __init__(
        self,
        redis: RedisConnection | str,
        *,
        name: str = "kv",
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_value_bytes: int = MAX_VALUE_BYTES,
    ) -> None:
        if not name or not name.replace("-", "").replace("_", "").isalnum():
            raise ValueError("name must be letters, digits, '-' or '_'")
        check_bounds(max_entries, max_bytes, max_value_bytes)
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self.name = name
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_value_bytes = max_value_bytes
        self._index = (
            self.redis.key(f"{name}-index", "expiry"),
            self.redis.key(f"{name}-index", "sizes"),
            self.redis.key(f"{name}-index", "bytes"),
        )

    def __repr__(self) -> str:
        return f"RedisKeyValueStore({self.redis!r}, name={self.name!r})"

    async def put(self, key: str, value: bytes, *, ttl: float, only_new: bool = False) -> bool:
        size = check_put(key, value, ttl, self.max_value_bytes)
        args = (
            value,
            max(1, math.ceil(float(ttl) * 1000)),
            "1" if only_new else "0",
            size,
            self.max_entries,
            self.max_bytes,
        )
        keys = (*self._index, self._key(key))
        reply = await self.redis.call(
            "key-value store",
            lambda r: r.eval(_PUT, len(keys), *keys, *args),  # type: ignore[no-any-return]
        )
        if isinstance(reply, bytes):
            raise KeyValueStoreFull(reply.decode())
        return bool(reply == 1)

    async def get(self, key: str) -> bytes | None:
        name = self._key(key)
        value: Any = await self.redis.call("key-value store", lambda r: r.get(name))
        return None if value is None else bytes(value)

    async def take(self, key: str) -> bytes | None:
        keys = (*self._index, self._key(key))
        value: Any = await self.redis.call(
            "key-value store",
            lambda r: r.eval(_TAKE, len(keys), *keys),  # type: ignore[no-any-return]
        )
        return None if value is None else bytes(value)

    async def delete(self, *keys: str) -> None:
        if not keys:
            return
        names = (*self._index, *(self._key(key) for key in keys))
        await self.redis.call(
            "key-value store",
            lambda r: r.eval(_DELETE, len(names), *names),  # type: ignore[no-any-return]
        )

    def _key(self, key: str) -> str:
        # A digest, not the key itself: keys stay short and nothing a caller passes shapes a Redis key.
        check_key(key)
        return self.redis.key(self.name, hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest())
