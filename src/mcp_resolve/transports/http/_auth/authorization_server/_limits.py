"""Per-client caps on the endpoints that make the provider keep something: `/register`, `/authorize`, `/token`.

Anyone may register a client (each kept for months by `OAuthProxy`) and
start a sign-in (each kept as a transaction for minutes), and every grant
ends in token requests. All of it goes to one bounded store, so without a
cap per client one peer could fill it and stop every sign-in and refresh
for everybody. Each endpoint therefore has a token bucket per client: a
burst of `count` requests, then `count` per `window_s` as it refills.

A client is its network address, the one the ASGI server reports, which is
how the rest of the HTTP layer counts an unauthenticated client (sessions,
streams): a proxy's address, unless uvicorn trusts its forwarding headers
(`trusted_proxies`). The counts live in the worker's memory: with several
workers each counts on its own, so a client gets up to the cap per worker.
They are bounded too: at most `max_peers` addresses per endpoint are
tracked, and the one seen least recently is forgotten first.

A request over its cap is refused before anything else is done (no client
lookup, no metadata document fetched, nothing stored), with `Retry-After`.
The refusal is logged once per address and window, naming the address and
the endpoint only.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from starlette.types import Scope

__all__ = [
    "AUTHORIZE_WINDOW_S",
    "MAX_PEERS",
    "REGISTER_WINDOW_S",
    "TOKEN_WINDOW_S",
    "PeerLimiter",
    "limited",
    "peer_of",
]

logger = logging.getLogger("mcp_resolve.auth")

REGISTER_WINDOW_S = 3600.0
"""`max_registrations_per_address` counts registrations per hour."""
AUTHORIZE_WINDOW_S = 600.0
"""`max_authorizations_per_address` counts authorization requests per 10 minutes (a transaction's life)."""
TOKEN_WINDOW_S = 60.0
"""`max_token_requests_per_address` counts token requests per minute."""
MAX_PEERS = 10_000
"""The most addresses one endpoint's limiter tracks (a few hundred bytes each)."""

Clock = Callable[[], float]
Handler = Callable[[Request], Awaitable[Response]]


def peer_of(scope: Scope) -> str:
    """The client's address as the ASGI server reports it (a proxy's, unless its forwarding headers are
    trusted: `trusted_proxies`)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class _Bucket:
    __slots__ = ("tokens", "updated", "warned")

    def __init__(self, tokens: float, updated: float) -> None:
        self.tokens = tokens
        self.updated = updated
        self.warned: float | None = None


class PeerLimiter:
    """A token bucket per peer: `count` at once, refilled at `count` per `window_s`; `max_peers` tracked."""

    def __init__(
        self,
        name: str,
        count: int,
        window_s: float,
        *,
        max_peers: int = MAX_PEERS,
        clock: Clock = time.monotonic,
    ) -> None:
        if count <= 0 or window_s <= 0 or max_peers <= 0:
            raise ValueError("a limiter needs a positive count, window and number of peers")
        self.name = name
        self.count = count
        self.window_s = window_s
        self.max_peers = max_peers
        self._rate = count / window_s
        self._clock = clock
        self._peers: OrderedDict[str, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        """How many peers are tracked now (never more than `max_peers`)."""
        return len(self._peers)

    def take(self, peer: str) -> float | None:
        """Spend one request of `peer`'s: None when it may go on, else the seconds until it may try again."""
        now = self._clock()
        bucket = self._peers.get(peer)
        if bucket is None:
            bucket = _Bucket(float(self.count), now)
            self._peers[peer] = bucket
            while len(self._peers) > self.max_peers:
                self._peers.popitem(last=False)  # the peer seen least recently
        else:
            self._peers.move_to_end(peer)
            elapsed = max(now - bucket.updated, 0.0)
            bucket.tokens = min(float(self.count), bucket.tokens + elapsed * self._rate)
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        if bucket.warned is None or now - bucket.warned >= self.window_s:
            bucket.warned = now
            logger.warning(
                "the authorization server refused %s requests from %s: over %d per %gs",
                self.name,
                peer[:64],
                self.count,
                self.window_s,
            )
        return (1.0 - bucket.tokens) / self._rate

    @staticmethod
    def retry_after(wait: float) -> str:
        """`wait` as a `Retry-After` value: whole seconds, at least 1."""
        return str(max(1, math.ceil(wait)))


def limited(handle: Handler, limiter: PeerLimiter | None, refuse: Callable[[float], Response]) -> Handler:
    """`handle`, behind `limiter`: a request over its peer's cap gets `refuse(seconds to wait)` instead."""
    if limiter is None:
        return handle

    async def guarded(request: Request) -> Response:
        wait = limiter.take(peer_of(request.scope))
        if wait is not None:
            return refuse(wait)
        return await handle(request)

    return guarded
