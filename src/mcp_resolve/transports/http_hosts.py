"""Which Host and Origin a request may carry: what stops DNS rebinding.

A web page on an attacker's domain that resolves to 127.0.0.1 still sends
its own name in `Host` and `Origin`, so a loopback-only allow-list shuts it
out. Parsed values are remembered: a client sends the same ones on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

__all__ = ["LOOPBACK_HOSTS", "PARSED_HEADERS", "HostPolicy", "OriginPolicy"]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
PARSED_HEADERS = 256  # distinct Host/Accept values kept parsed: a client repeats the same ones on every call


@lru_cache(maxsize=PARSED_HEADERS)
def _split_authority(value: str) -> tuple[str, str | None]:
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        rest = value[end + 1 :]
        return value[1:end], rest[1:] if rest.startswith(":") else None
    if value.count(":") == 1:
        host, _, port = value.partition(":")
        return host, port
    return value, None


class HostPolicy:
    def __init__(self, entries: Sequence[str] | None) -> None:
        self.any = entries is not None and "*" in entries
        self._rules = {_split_authority(entry) for entry in (LOOPBACK_HOSTS if entries is None else entries)}
        # Remembered per raw header value: a client sends the same Host on every call.
        self.allows_raw: Callable[[bytes | None], bool] = lru_cache(maxsize=PARSED_HEADERS)(self._allows_raw)

    def _allows_raw(self, authority: bytes | None) -> bool:
        return self.allows(None if authority is None else authority.decode("latin-1"))

    def allows(self, authority: str | None) -> bool:
        if self.any:
            return True
        if not authority:
            return False
        host, port = _split_authority(authority)
        return (host, None) in self._rules or (host, port) in self._rules


class OriginPolicy:
    def __init__(self, entries: Sequence[str] | None, hosts: HostPolicy) -> None:
        self._hosts = hosts if entries is None else None
        self.any = entries is not None and "*" in entries
        self._exact = {entry.strip().rstrip("/").lower() for entry in entries or ()}

    def allows(self, origin: str) -> bool:
        normalised = origin.strip().rstrip("/").lower()
        if self.any or normalised in self._exact:
            return True
        if self._hosts is None:
            return False
        scheme, sep, authority = normalised.partition("://")
        return (
            bool(sep)
            and scheme in ("http", "https")
            and "/" not in authority
            and self._hosts.allows(authority)
        )
