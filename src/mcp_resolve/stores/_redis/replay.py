"""`RedisReplayStore`: single-use claims shared by every worker on every host, settled even when Redis stalls.

A claim is one script on one key: Redis runs scripts one at a time, so of
any number of workers claiming one state id at once exactly one wins, and
the key expires on its own once the token it guards could no longer be
accepted anyway (its expiry plus the same grace the other stores keep).

A claim never has an ambiguous outcome for long. Each one carries a fresh
ticket, and the script is idempotent for its ticket: when the reply is lost
(a timeout, a reset, Redis paused or restarting), the worker runs it again
until one reply arrives or one deadline (`settle_timeout`) passes. "Won" in
any reply means this worker's own claim landed, whichever attempt carried
it; another ticket in the key means somebody else's did. A worker that
gives up has run nothing, and says so to Redis as soon as it can: a release
fences its ticket (a late copy of its claim can no longer take the key) and
frees the key if its claim had landed, so the caller's retry can claim it.

The key is a hash: the live claim's ticket `o`, its state `s` (`r`unning,
`d`one, or `x` released), the caller digest `c`, and once done the answer
`v` kept for that caller's retry (`k` says whether it was kept: it is not
for an anonymous caller, nor past `max_outcome_bytes`).

A round costs Redis one command on the request's path, two when an answer is
kept. An anonymous caller's answer is never kept, so its claim is written as
done at once (`s` = `d`, nothing kept) and there is nothing to record after
the round: its ticket says so (`_SETTLED`), and `keep_outcome` sends nothing.
A copy of the round that arrives while it runs is then refused at once
("replayed") rather than waiting for it, which is what it would get after the
wait anyway: an anonymous caller never gets an answer twice.

Claims are bounded in count: one sorted set of the namespace scores every
claim key by when it expires (Redis's clock), and a new claim first drops
the entries of expired keys, then is refused (`ReplayStoreFull`) if
`max_claims` remain. A key is never deleted to make room.

Two settings of the Redis server matter and docs/deploy.md gives both: an
eviction policy that never evicts these keys (`noeviction`: under memory
pressure writes fail, so claims fail closed, instead of old claims vanishing
and their tokens becoming redeemable again), and persistence (AOF with
`appendfsync everysec` or stricter) so a Redis restart does not forget them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...replay import (
    MAX_CLAIMS,
    MAX_OUTCOME_BYTES,
    PURGE_GRACE,
    RETRY_WAIT,
    ReplayStoreFull,
    RoundClaim,
    _check_claim,
    _check_max_claims,
)
from .connection import RedisConnection, StoreUnavailable, _backend_errors

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisReplayStore"]

logger = logging.getLogger("mcp_resolve.stores")

_SETTLED = "settled:"
"""The mark on the ticket of a claim written as done when it was won (an anonymous caller's)."""

_INDEX = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function indexed(key, ttl)
  redis.call('ZADD', KEYS[2], now_ms() + tonumber(ttl), key)
end
"""
"""KEYS[2] is the namespace's index of claim keys, scored by expiry in ms of Redis's clock."""

_CLAIM = (
    _INDEX
    + """
local key, ticket, caller = KEYS[1], ARGV[1], ARGV[2]
local state = caller == '' and 'd' or 'r'
local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then
  local most = tonumber(ARGV[4])
  if most >= 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now_ms())
    if redis.call('ZCARD', KEYS[2]) >= most then return {'full'} end
  end
  redis.call('HSET', key, 'o', ticket, 's', state, 'c', caller, 'k', '0')
  redis.call('PEXPIRE', key, ARGV[3])
  indexed(key, ARGV[3])
  return {'won'}
end
if kind ~= 'hash' then return {'replayed'} end
if redis.call('HEXISTS', key, 'x:' .. ticket) == 1 then return {'released'} end
local f = redis.call('HMGET', key, 'o', 's', 'c', 'k', 'v')
if f[1] == ticket then return {'won'} end
if f[2] == 'x' then
  redis.call('HSET', key, 'o', ticket, 's', state, 'c', caller, 'k', '0')
  redis.call('HDEL', key, 'v')
  return {'won'}
end
if f[2] == 'r' then return {'running'} end
if caller ~= '' and f[3] == caller then return {'done', f[4] or '0', f[5] or ''} end
return {'replayed'}
"""
)
"""Claim for ARGV[1] (a ticket) and ARGV[2] (a caller digest, '' if anonymous: then done at once, nothing
kept); ARGV[3] is the TTL in ms, ARGV[4] the most claims the namespace may hold (-1: no bound)."""

_KEEP = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash' then return 0 end
local f = redis.call('HMGET', KEYS[1], 'o', 's')
if f[1] ~= ARGV[1] or f[2] ~= 'r' then return 0 end
redis.call('HSET', KEYS[1], 's', 'd', 'k', ARGV[2], 'v', ARGV[3])
return 1
"""
"""Finish the round ticket ARGV[1] won; ARGV[2] '1' if ARGV[3] is the answer kept for a retry."""

_RELEASE = (
    _INDEX
    + """
local key, ticket = KEYS[1], ARGV[1]
local kind = redis.call('TYPE', key)['ok']
if kind == 'none' then
  redis.call('HSET', key, 's', 'x', 'x:' .. ticket, '1')
  redis.call('PEXPIRE', key, ARGV[2])
  indexed(key, ARGV[2])
  return 1
end
if kind ~= 'hash' then return 0 end
redis.call('HSET', key, 'x:' .. ticket, '1')
local f = redis.call('HMGET', key, 'o', 's')
if f[1] == ticket and f[2] ~= 'x' then redis.call('HSET', key, 's', 'x') end
return 1
"""
)
"""Fence ticket ARGV[1] (its claim never ran) and free the key if that claim holds it (running, or
done at once for an anonymous caller). A fence is never
refused for room (it is what keeps a late copy of the claim from running), but it is counted."""


class RedisReplayStore:
    """Records state ids in Redis; the first claim of an id wins, across every worker of the fleet.

    `settle_timeout` bounds how long one request keeps asking a stalled Redis
    whether its claim landed (and how long it tries to record the answer
    before leaving that to the background); `retry_wait` how long a retry
    waits for a copy of its round still running elsewhere. At most
    `max_pending` releases and answers wait in the background for Redis to
    come back; past that they are dropped, which can only leave a state
    refused ("still running") until it expires, never run twice. At most
    `max_claims` unexpired claims in the namespace (None: no bound), then new
    ones are refused.
    """

    def __init__(
        self,
        redis: RedisConnection | str,
        *,
        clock: Callable[[], float] = time.time,
        settle_timeout: float = 5.0,
        retry_wait: float = RETRY_WAIT,
        max_outcome_bytes: int = MAX_OUTCOME_BYTES,
        max_pending: int = 1000,
        max_claims: int | None = MAX_CLAIMS,
    ) -> None:
        if settle_timeout <= 0 or retry_wait < 0 or max_outcome_bytes < 0 or max_pending < 0:
            raise ValueError("settle_timeout must be positive; retry_wait and the bounds not negative")
        self.redis = redis if isinstance(redis, RedisConnection) else RedisConnection(redis)
        self._clock = clock
        self.settle_timeout = float(settle_timeout)
        self.retry_wait = float(retry_wait)
        self.max_outcome_bytes = max_outcome_bytes
        self.max_pending = max_pending
        self.max_claims = _check_max_claims(max_claims)
        self._pending = 0

    def __repr__(self) -> str:
        return f"RedisReplayStore({self.redis!r})"

    @property
    def pending(self) -> int:
        """Releases and answers still waiting in the background for Redis."""
        return self._pending

    async def claim(self, state_id: str, expires_at: float) -> bool:
        return (await self.claim_round(state_id, expires_at, None)).status == "won"

    async def claim_round(self, state_id: str, expires_at: float, caller: str | None) -> RoundClaim:
        expiry = _check_claim(state_id, expires_at)
        key, ticket = self._key(state_id), secrets.token_hex(16)
        if caller is None:
            ticket = _SETTLED + ticket
        most = -1 if self.max_claims is None else self.max_claims
        attempts = 0

        def claim(r: Redis) -> Awaitable[Any]:
            nonlocal attempts
            attempts += 1
            args = (ticket, caller or "", self._ttl_ms(expiry), most)
            return r.eval(_CLAIM, 2, key, self._index, *args)  # type: ignore[no-any-return]

        try:
            reply = await self._settle(claim)
        except BaseException:
            # Not confirmed, so nothing runs; the claim may still have landed (or land late): release it.
            self._release_later(key, expiry, ticket)
            raise
        status = _text(reply[0])
        if status == "full":
            if attempts > 1:  # an earlier attempt, its reply lost, may still land: fence it
                self._release_later(key, expiry, ticket)
            raise ReplayStoreFull(most)
        if status == "won":
            return RoundClaim("won", ticket)
        if status == "running":
            return RoundClaim("running")
        if status == "done":
            return RoundClaim("done", outcome=_bytes(reply[2]) if _text(reply[1]) == "1" else None)
        if status == "released":  # only a copy of a claim already given up on can meet its own fence
            raise StoreUnavailable("replay store")
        return RoundClaim("replayed")

    async def keep_outcome(
        self, state_id: str, expires_at: float, ticket: str, outcome: bytes | None
    ) -> None:
        expiry = _check_claim(state_id, expires_at)
        if ticket.startswith(_SETTLED):  # an anonymous round: its claim already recorded it as done
            return
        kept = outcome is not None and len(outcome) <= self.max_outcome_bytes
        args = (ticket, "1" if kept else "0", outcome if kept and outcome is not None else b"")
        key = self._key(state_id)
        try:
            await self._settle(lambda r: r.eval(_KEEP, 1, key, *args))  # type: ignore[no-any-return]
        except StoreUnavailable:
            self._later((key,), expiry, "answer", _KEEP, *args)

    @property
    def _index(self) -> str:
        return self.redis.key("replay-index", "expiry")

    def _release_later(self, key: str, expiry: float, ticket: str) -> None:
        self._later((key, self._index), expiry, "release", _RELEASE, ticket, self._ttl_ms(expiry))

    def _key(self, state_id: str) -> str:
        # A digest, not the id itself: keys stay short and nothing a token carries shapes a key.
        return self.redis.key("replay", hashlib.sha256(state_id.encode()).hexdigest())

    def _ttl_ms(self, expiry: float) -> int:
        return max(1000, math.ceil((expiry + PURGE_GRACE - float(self._clock())) * 1000))

    async def _settle(self, operation: Callable[[Redis], Awaitable[Any]]) -> Any:
        """Run an idempotent `operation` until Redis answers it once, within `settle_timeout`.

        Each attempt is cut at the deadline; an attempt whose reply is lost may
        still land, which is why every operation here is safe to repeat.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle_timeout
        delay, errors = 0.05, _backend_errors()
        while True:
            remaining = deadline - loop.time()
            try:
                return await asyncio.wait_for(operation(self.redis.client()), max(remaining, 0.001))
            except errors as exc:
                failure = exc
            if loop.time() + delay >= deadline:
                logger.warning(
                    "replay store: Redis at %s did not answer within %.1f s: %s",
                    self.redis.safe_url,
                    self.settle_timeout,
                    type(failure).__name__,
                )
                raise StoreUnavailable("replay store") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _later(self, keys: tuple[str, ...], expiry: float, what: str, script: str, *args: Any) -> None:
        """Run `script` in the background until Redis takes it or the state expires; bounded in number."""
        if self._pending >= self.max_pending:
            logger.warning("replay store: too many %ss waiting for Redis; one dropped", what)
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._pending += 1
        self.redis.background(self._retry(keys, expiry, what, script, args))

    async def _retry(
        self, keys: tuple[str, ...], expiry: float, what: str, script: str, args: tuple[Any, ...]
    ) -> None:
        delay, errors = 0.1, _backend_errors()
        try:
            while float(self._clock()) < expiry + PURGE_GRACE:
                try:
                    await asyncio.wait_for(self.redis.client().eval(script, len(keys), *keys, *args), 5.0)
                    return
                except errors:
                    pass
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            logger.warning("replay store: a %s never reached Redis before its state expired", what)
        finally:
            self._pending -= 1


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()
