"""Key-value stores: short-lived opaque values by key, for state one request writes and another reads.

The OAuth proxy keeps its transactions, authorization codes, grants, refresh
tokens, signing keys and the upstream tokens it holds for people here (sealed:
what reaches a store is ciphertext, see `mcp_resolve.auth.proxy`). A fleet
behind a load balancer serves each step of a login on any worker, so the store
is shared there (`RedisKeyValueStore`); one host can keep it in a file
(`SqliteKeyValueStore`), one process in memory (`MemoryKeyValueStore`).

The interface is four awaitables, with the two atomic steps a protocol needs
across workers: `put(..., only_new=True)` (the first writer of a key wins, so
every worker converges on one value) and `take` (read and delete at once, so a
single-use code is redeemed once). Every entry has a TTL and an expired entry
is never returned.

Every store is bounded by entries, total bytes and bytes per value (a key's
bytes count with its value). A put past a bound writes nothing and raises
`KeyValueStoreFull` naming the bound; expired entries never hold room. An
entry that has not expired is never evicted: the login it belongs to must find it.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..errors import INTERNAL_ERROR, MCPError

__all__ = [
    "MAX_BYTES",
    "MAX_ENTRIES",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "KeyValueStore",
    "KeyValueStoreFull",
    "MemoryKeyValueStore",
]

MAX_ENTRIES = 100_000
"""Entries a store holds by default (unexpired ones count)."""
MAX_BYTES = 64 * 1024 * 1024
"""Bytes (keys and values) a store holds by default."""
MAX_VALUE_BYTES = 64 * 1024
"""Bytes one value may have by default: a sealed grant or token set is well under 4 KiB."""
MAX_KEY_BYTES = 256
"""Longest key, in UTF-8 bytes. Keys are the callers' own short names (secrets are hashed into them)."""


class KeyValueStoreFull(MCPError):
    """A put would pass one of the store's bounds; nothing was written (-32603).

    `bound` names it: `max_entries`, `max_bytes` or `max_value_bytes`.
    """

    def __init__(self, bound: str) -> None:
        super().__init__(
            INTERNAL_ERROR, f"key-value store full ({bound}): nothing was stored; try again later"
        )
        self.bound = bound


@runtime_checkable
class KeyValueStore(Protocol):
    """Opaque values by key, each for a TTL; `only_new` and `take` are atomic across every user of the store."""

    async def put(self, key: str, value: bytes, *, ttl: float, only_new: bool = False) -> bool:
        """Store `value` for `ttl` seconds. only_new: do nothing and return False if `key` exists (atomic).

        True when stored. Raises `KeyValueStoreFull` (nothing written) past a bound.
        """
        ...

    async def get(self, key: str) -> bytes | None:
        """The value, or None when there is none or it expired."""
        ...

    async def take(self, key: str) -> bytes | None:
        """Atomically read and delete (single use: two concurrent takes, one wins)."""
        ...

    async def delete(self, *keys: str) -> None:
        """Forget these keys (those that do not exist are ignored)."""
        ...


def check_bounds(max_entries: int, max_bytes: int, max_value_bytes: int) -> None:
    """The three bounds every store takes: whole numbers of at least 1."""
    for name, value in (
        ("max_entries", max_entries),
        ("max_bytes", max_bytes),
        ("max_value_bytes", max_value_bytes),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")


def check_put(key: str, value: bytes, ttl: float, max_value_bytes: int) -> int:
    """The size an entry counts for (key and value bytes); refuses a bad key or TTL, or a value too big."""
    size = check_key(key)
    if not isinstance(value, bytes):
        raise TypeError("a key-value store keeps bytes")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < math.inf:
        raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
    if len(value) > max_value_bytes:
        raise KeyValueStoreFull("max_value_bytes")
    return size + len(value)


def check_key(key: str) -> int:
    """A key's UTF-8 length; ValueError for an empty, too long or non-string key."""
    if not isinstance(key, str) or not key:
        raise ValueError("a key is a non-empty string")
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"a key is at most {MAX_KEY_BYTES} bytes: hash long names into keys")
    return size


class MemoryKeyValueStore:
    """In-process store: right for one process and for tests; forgets everything on restart.

    Expiries sit in a heap, so each put drops the entries that expired since
    the last one in time proportional to their number, never to the store's size.
    """

    def __init__(
        self,
        *,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        max_value_bytes: int = MAX_VALUE_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        check_bounds(max_entries, max_bytes, max_value_bytes)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_value_bytes = max_value_bytes
        self._clock = clock
        self._entries: dict[str, tuple[float, int, bytes]] = {}
        """Key -> (expires_at, size counted, value)."""
        self._expiries: list[tuple[float, str]] = []
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """Bytes (keys and values) of the entries held, expired ones until the next put drops them."""
        return self._bytes

    async def put(self, key: str, value: bytes, *, ttl: float, only_new: bool = False) -> bool:
        size = check_put(key, value, ttl, self.max_value_bytes)
        with self._lock:
            now = float(self._clock())
            self._purge(now)
            old = self._entries.get(key)
            if old is not None and only_new:
                return False
            if old is None and len(self._entries) >= self.max_entries:
                raise KeyValueStoreFull("max_entries")
            if self._bytes - (old[1] if old else 0) + size > self.max_bytes:
                raise KeyValueStoreFull("max_bytes")
            if old is not None:
                self._bytes -= old[1]
            expires_at = now + float(ttl)
            self._entries[key] = (expires_at, size, value)
            self._bytes += size
            heapq.heappush(self._expiries, (expires_at, key))
            if len(self._expiries) > 2 * len(self._entries) + 64:  # overwrites left stale expiries
                self._expiries = [(entry[0], k) for k, entry in self._entries.items()]
                heapq.heapify(self._expiries)
            return True

    async def get(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] <= float(self._clock()):
                return None
            return entry[2]

    async def take(self, key: str) -> bytes | None:
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                return None
            self._bytes -= entry[1]
            return entry[2] if entry[0] > float(self._clock()) else None

    async def delete(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                entry = self._entries.pop(key, None)
                if entry is not None:
                    self._bytes -= entry[1]

    def _purge(self, now: float) -> None:
        while self._expiries and self._expiries[0][0] <= now:
            expires_at, key = heapq.heappop(self._expiries)
            entry = self._entries.get(key)
            if entry is not None and entry[0] == expires_at:
                del self._entries[key]
                self._bytes -= entry[1]
