"""`RedisTaskStore`: task records every worker of a fleet reads and writes, compare-and-set on `version`.

A record is one hash (its JSON and version) under a digest of the task id;
one sorted set scores every record by expiry (what `purge` walks, with the
caller's clock, as the other stores do), and each principal's live tasks are
a sorted set scored by expiry too, which makes the per-principal cap of
`create` one atomic step with the insert. `create` and `replace` are Lua scripts:
Redis runs each whole, so two workers writing one task can never both win,
and the loser re-reads, as the TaskStore contract says.

Failures raise `StoreUnavailable`: a task write that did not land is never
reported as done. The scripts touch the keys of one server's namespace, so
they need a single Redis (or one shard), not a cluster spreading them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..tasks.records import TaskRecord
from .redis_conn import RedisConnection

__all__ = ["RedisTaskStore"]

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local max_live = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if max_live >= 0 and redis.call('ZCARD', KEYS[2]) >= max_live then return 0 end
redis.call('HSET', KEYS[1], 'json', ARGV[3], 'version', ARGV[6], 'id', ARGV[7], 'owner', KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[5], KEYS[1])
if ARGV[4] == '1' then redis.call('ZADD', KEYS[2], ARGV[5], ARGV[7]) end
return 1
"""

_REPLACE = """
local version = redis.call('HGET', KEYS[1], 'version')
if not version or version ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'version', ARGV[5])
redis.call('ZADD', KEYS[3], ARGV[4], KEYS[1])
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
else
  redis.call('ZREM', KEYS[2], ARGV[6])
end
return 1
"""

_PURGE = """
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1000)
for _, key in ipairs(expired) do
  local owner, id = unpack(redis.call('HMGET', key, 'owner', 'id'))
  if owner and id then redis.call('ZREM', owner, id) end
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[1], key)
end
return #expired
"""
"""Purges in batches of a thousand: a script holds Redis while it runs, so each one stays short."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class RedisTaskStore:
    """A `TaskStore` on Redis, for a fleet whose tasks must be reachable from every worker."""

    def __init__(self, redis: RedisConnection | str) -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)

    def __repr__(self) -> str:
        return f"RedisTaskStore({self.redis!r})"

    def _keys(self, record_id: str, principal: str | None) -> list[str]:
        owner = _digest(json.dumps(principal))
        return [
            self.redis.key("task", _digest(record_id)),
            self.redis.key("tasks-live", owner),
            self.redis.key("tasks", "expiry"),
        ]

    async def create(self, record: TaskRecord, *, max_live: int | None, now: float) -> bool:
        keys = self._keys(record.task_id, record.principal)
        args: list[Any] = [
            repr(float(now)),
            -1 if max_live is None else max_live,
            record.dump(),
            "1" if record.live else "",
            repr(float(record.expires_at)),
            record.version,
            record.task_id,
        ]
        created = await self.redis.call("task store", lambda r: r.eval(_CREATE, 3, *keys, *args))
        return bool(created)

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._keys(task_id, None)[0]
        found: Any = await self.redis.call("task store", lambda r: r.hmget(key, "json", "version"))
        if not found or found[0] is None:
            return None
        record = TaskRecord.load(found[0])
        record.version = int(found[1])
        return record

    async def replace(self, record: TaskRecord) -> bool:
        keys = self._keys(record.task_id, record.principal)
        args: list[Any] = [
            record.version,
            record.dump(),
            "1" if record.live else "",
            repr(float(record.expires_at)),
            record.version + 1,
            record.task_id,
        ]
        replaced = await self.redis.call("task store", lambda r: r.eval(_REPLACE, 3, *keys, *args))
        if replaced:
            record.version += 1
        return bool(replaced)

    async def purge(self, now: float) -> int:
        expiry = self._keys("", None)[2]
        purged = 0
        while True:
            batch = await self.redis.call("task store", lambda r: r.eval(_PURGE, 1, expiry, repr(float(now))))
            purged += int(batch)
            if batch < 1000:
                return purged
