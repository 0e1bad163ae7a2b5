"""`RedisTaskStore`: task records every worker of a fleet reads and writes, compare-and-set on `version`.

A record is one hash (its JSON, version and size) under a digest of the task
id; one sorted set scores every record by expiry (what `purge` walks, with
the caller's clock, as the other stores do). Each holder (a caller, see
`TaskRecord.holder`) has a sorted set of its live task ids and one of all its
records, both scored by expiry, and a counter of its bytes; one more counter
holds the bytes of every record. That makes every bound of `create` (and the
bytes a growing `replace` may add) one atomic step with the write. `create`
and `replace` are Lua scripts: Redis runs each whole, so two workers writing
one task can never both win, and the loser re-reads, as the TaskStore
contract says. A script that finds a bound passed first deletes the expired
records in the way (the holder's, then up to a thousand of the store's) and
counts again; a refusal writes nothing.

Failures raise `StoreUnavailable`: a task write that did not land is never
reported as done. The scripts touch the keys of one server's namespace, so
they need a single Redis (or one shard), not a cluster spreading them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ...tasks.records import TaskLimits, TaskRecord, TaskStoreFull
from .connection import RedisConnection

__all__ = ["RedisTaskStore"]

_DROP = """
local function drop(key)
  local f = redis.call('HMGET', key, 'owner', 'id', 'held', 'bytes', 'size')
  if f[1] and f[2] then redis.call('ZREM', f[1], f[2]) end
  if f[3] then redis.call('ZREM', f[3], key) end
  local size = tonumber(f[5]) or 0
  if f[4] and redis.call('DECRBY', f[4], size) <= 0 then redis.call('DEL', f[4]) end
  if redis.call('DECRBY', BYTES, size) <= 0 then redis.call('DEL', BYTES) end
  redis.call('DEL', key)
  redis.call('ZREM', EXPIRY, key)
end
local function drop_expired(set, now)
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', set, '-inf', now, 'LIMIT', 0, 1000)) do drop(key) end
end
"""
"""Deleting one record and its part in every count; expired records a thousand at a time (a script holds
Redis while it runs, so each one stays short)."""

_BOUNDS = """
local function count(key) return tonumber(redis.call('GET', key)) or 0 end
local function passed(tasks, size)
  local held_tasks, held_bytes = tonumber(ARGV[10]), tonumber(ARGV[11])
  local all_tasks, all_bytes = tonumber(ARGV[12]), tonumber(ARGV[13])
  if tasks > 0 and held_tasks >= 0 and redis.call('ZCARD', KEYS[4]) + tasks > held_tasks then
    return 'max_tasks_per_principal'
  end
  if held_bytes >= 0 and count(KEYS[5]) + size > held_bytes then return 'max_bytes_per_principal' end
  if tasks > 0 and all_tasks >= 0 and redis.call('ZCARD', EXPIRY) + tasks > all_tasks then return 'max_tasks' end
  if all_bytes >= 0 and count(BYTES) + size > all_bytes then return 'max_bytes' end
  return false
end
local function refusal(tasks, size, now)
  if not passed(tasks, size) then return false end
  drop_expired(KEYS[4], now)
  if not passed(tasks, size) then return false end
  drop_expired(EXPIRY, now)
  return passed(tasks, size)
end
"""
"""The bounds (ARGV[10..13], -1 for none) for a record of KEYS[4] (the holder's records) and KEYS[5]
(its bytes): the first one passed, after deleting expired records in the way, or false."""

_CREATE = (
    "local EXPIRY, BYTES = KEYS[3], KEYS[6]\n"
    + _DROP
    + _BOUNDS
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local now, size = ARGV[1], string.len(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local max_live = tonumber(ARGV[2])
if max_live >= 0 and redis.call('ZCARD', KEYS[2]) >= max_live then return 'max_live_per_principal' end
local refused = refusal(1, size, now)
if refused then return refused end
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'version', ARGV[6], 'id', ARGV[7],
  'owner', KEYS[2], 'held', KEYS[4], 'bytes', KEYS[5], 'size', size)
redis.call('ZADD', EXPIRY, ARGV[5], KEYS[1])
redis.call('ZADD', KEYS[4], ARGV[5], KEYS[1])
redis.call('INCRBY', KEYS[5], size)
redis.call('INCRBY', BYTES, size)
if ARGV[4] == '1' then redis.call('ZADD', KEYS[2], ARGV[5], ARGV[7]) end
return 1
"""
)

_REPLACE = (
    "local EXPIRY, BYTES = KEYS[3], KEYS[6]\n"
    + _DROP
    + _BOUNDS
    + """
local stored = redis.call('HMGET', KEYS[1], 'version', 'size', 'held')
if not stored[1] or stored[1] ~= ARGV[1] then return 0 end
local size = string.len(ARGV[2])
local growth = size - (tonumber(stored[2]) or 0)
if ARGV[8] == '1' and growth > 0 then
  local refused = refusal(0, growth, ARGV[9])
  if refused then return refused end
  if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
end
if not stored[3] then redis.call('HSET', KEYS[1], 'owner', KEYS[2], 'held', KEYS[4], 'bytes', KEYS[5]) end
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'version', ARGV[5], 'size', size)
redis.call('ZADD', EXPIRY, ARGV[4], KEYS[1])
redis.call('ZADD', KEYS[4], ARGV[4], KEYS[1])
redis.call('INCRBY', KEYS[5], growth)
redis.call('INCRBY', BYTES, growth)
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
else
  redis.call('ZREM', KEYS[2], ARGV[6])
end
return 1
"""
)
"""A record written before sizes were kept (no `held`) joins its holder's counts at its first replace."""

_PURGE = (
    "local EXPIRY, BYTES = KEYS[1], KEYS[2]\n"
    + _DROP
    + """
local expired = redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', ARGV[1], 'LIMIT', 0, 1000)
for _, key in ipairs(expired) do drop(key) end
return #expired
"""
)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _bound(limit: int | None) -> int:
    return -1 if limit is None else limit


class RedisTaskStore:
    """A `TaskStore` on Redis, for a fleet whose tasks must be reachable from every worker."""

    def __init__(self, redis: RedisConnection | str) -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)

    def __repr__(self) -> str:
        return f"RedisTaskStore({self.redis!r})"

    def _keys(self, record_id: str, holder: str | None) -> list[str]:
        """The record, its holder's live ids, every record by expiry, its holder's records and bytes, all bytes."""
        owner = _digest(json.dumps(holder))
        return [
            self.redis.key("task", _digest(record_id)),
            self.redis.key("tasks-live", owner),
            self.redis.key("tasks", "expiry"),
            self.redis.key("tasks-held", owner),
            self.redis.key("tasks-bytes", owner),
            self.redis.key("tasks", "bytes"),
        ]

    @staticmethod
    def _bounds(limits: TaskLimits | None) -> list[int]:
        if limits is None:
            return [-1, -1, -1, -1]
        return [
            _bound(limits.max_tasks_per_principal),
            _bound(limits.max_bytes_per_principal),
            _bound(limits.max_tasks),
            _bound(limits.max_bytes),
        ]

    async def create(self, record: TaskRecord, *, limits: TaskLimits, now: float) -> bool:
        keys = self._keys(record.task_id, record.holder)
        args: list[Any] = [
            repr(float(now)),
            _bound(limits.max_live_per_principal),
            record.encoded(),
            "1" if record.live else "",
            repr(float(record.expires_at)),
            record.version,
            record.task_id,
            "",
            "",
            *self._bounds(limits),
        ]
        created = await self.redis.call("task store", lambda r: r.eval(_CREATE, len(keys), *keys, *args))
        return bool(_checked(created))

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._keys(task_id, None)[0]
        found: Any = await self.redis.call("task store", lambda r: r.hmget(key, "json", "version"))
        if not found or found[0] is None:
            return None
        record = TaskRecord.load(found[0])
        record.version = int(found[1])
        return record

    async def replace(
        self, record: TaskRecord, *, limits: TaskLimits | None = None, now: float = 0.0
    ) -> bool:
        keys = self._keys(record.task_id, record.holder)
        args: list[Any] = [
            record.version,
            record.encoded(),
            "1" if record.live else "",
            repr(float(record.expires_at)),
            record.version + 1,
            record.task_id,
            "",
            "" if limits is None else "1",
            repr(float(now)),
            *self._bounds(limits),
        ]
        replaced = await self.redis.call("task store", lambda r: r.eval(_REPLACE, len(keys), *keys, *args))
        if _checked(replaced):
            record.version += 1
            return True
        return False

    async def purge(self, now: float) -> int:
        keys = self._keys("", None)
        expiry, total = keys[2], keys[5]
        purged = 0
        while True:
            batch = await self.redis.call(
                "task store", lambda r: r.eval(_PURGE, 2, expiry, total, repr(float(now)))
            )
            purged += int(batch)
            if batch < 1000:
                return purged


def _checked(reply: Any) -> int:
    """A script's 1 (written) or 0 (taken, or stale); a bound's name is `TaskStoreFull`."""
    if isinstance(reply, (bytes, str)):
        raise TaskStoreFull(reply.decode() if isinstance(reply, bytes) else reply)
    return int(reply)
