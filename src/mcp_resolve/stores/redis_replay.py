"""`RedisReplayStore`: single-use claims shared by every worker on every host.

A claim is one `SET key 1 NX PX ttl`: Redis runs commands one at a time, so
of any number of workers claiming one state id at once exactly one gets OK,
and the key expires on its own once the token it guards could no longer be
accepted anyway (its expiry plus the same grace the other stores keep).

Two settings of the Redis server matter and docs/deploy.md gives both: an
eviction policy that never evicts these keys (`noeviction`: under memory
pressure writes fail, so claims fail closed, instead of old claims vanishing
and their tokens becoming redeemable again), and persistence (AOF with
`appendfsync everysec` or stricter) so a Redis restart does not forget them.

Failure is never "unclaimed": any backend error raises `StoreUnavailable`,
and a claim whose reply was lost is refused on retry (the key is there), so
an ambiguous outcome can only refuse a refund, never run it twice.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable

from ..replay import PURGE_GRACE, _check_claim
from .redis_conn import RedisConnection

__all__ = ["RedisReplayStore"]


class RedisReplayStore:
    """Records state ids in Redis; the first claim of an id wins, across every worker of the fleet."""

    def __init__(self, redis: RedisConnection | str, *, clock: Callable[[], float] = time.time) -> None:
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self._clock = clock

    def __repr__(self) -> str:
        return f"RedisReplayStore({self.redis!r})"

    async def claim(self, state_id: str, expires_at: float) -> bool:
        expiry = _check_claim(state_id, expires_at)
        ttl_ms = max(1000, math.ceil((expiry + PURGE_GRACE - float(self._clock())) * 1000))
        # A digest, not the id itself: keys stay short and nothing a token carries shapes a key.
        key = self.redis.key("replay", hashlib.sha256(state_id.encode()).hexdigest())
        claimed = await self.redis.call("replay store", lambda r: r.set(key, b"1", nx=True, px=ttl_ms))
        return bool(claimed)
