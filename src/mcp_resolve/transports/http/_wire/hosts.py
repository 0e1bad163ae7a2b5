"""Which Host and Origin a request may carry: what stops DNS rebinding.

A web page on an attacker's domain that resolves to 127.0.0.1 still sends
its own name in `Host` and `Origin`, so a loopback-only allow-list shuts it
out. A `Host` is read as RFC 9110 defines it (`uri-host [":" port]`: a
registered name, an IPv4 address or a bracketed IPv6 literal, then a port of
at most five digits up to 65535); anything else (`localhost:80@evil.com`,
`127.0.0.1:99999`, `localhost:abc`, an unbracketed IPv6 address) is
malformed, and the endpoint answers it 400 whatever the allow-list says.
Parsed values are remembered: a client sends the same ones on every call.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

__all__ = ["LOOPBACK_HOSTS", "PARSED_HEADERS", "HostPolicy", "OriginPolicy", "parse_host"]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
PARSED_HEADERS = 256  # distinct Host/Accept values kept parsed: a client repeats the same ones on every call

# RFC 3986 reg-name: unreserved, pct-encoded and sub-delims (an IPv4 address is one too).
_REG_NAME = re.compile(r"(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*")
_IPV_FUTURE = re.compile(r"v[0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+")
_PORT = re.compile(r"[0-9]{0,5}")


@lru_cache(maxsize=PARSED_HEADERS)
def parse_host(value: str) -> tuple[str, str | None] | None:
    """A `Host` value as (host, port or None), lower-case, brackets removed; None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or not _ip_literal(value[1:end]):
            return None
        host, rest = value[1:end], value[end + 1 :]
    else:
        host, colon, port = value.partition(":")
        if not _REG_NAME.fullmatch(host):
            return None
        rest = colon + port
    if not rest:
        return host, None
    if not rest.startswith(":") or not _PORT.fullmatch(rest[1:]):
        return None
    port = rest[1:]
    if port and int(port) > 65535:
        return None
    return host, port or None  # `name:` (an empty port) is allowed by the grammar: the default port


def _ip_literal(inside: str) -> bool:
    if _IPV_FUTURE.fullmatch(inside):
        return True
    address = inside.replace("%25", "%", 1)  # RFC 6874 zone identifier
    try:
        ipaddress.IPv6Address(address)
    except ValueError:
        return False
    return True


def _rule(entry: str) -> tuple[str, str | None]:
    """An allow-list entry as (host, port or None); an unbracketed IPv6 address is accepted here."""
    entry = entry.strip().lower()
    parsed = parse_host(entry)
    if parsed is not None:
        return parsed
    return entry.strip("[]"), None


class HostPolicy:
    def __init__(self, entries: Sequence[str] | None) -> None:
        self.any = entries is not None and "*" in entries
        self._rules = {
            _rule(entry) for entry in (LOOPBACK_HOSTS if entries is None else entries) if entry != "*"
        }
        # Remembered per raw header value: a client sends the same Host on every call.
        self.allows_raw: Callable[[bytes | None], bool] = lru_cache(maxsize=PARSED_HEADERS)(self._allows_raw)

    def _allows_raw(self, authority: bytes | None) -> bool:
        return self.allows(None if authority is None else authority.decode("latin-1"))

    def allows(self, authority: str | None) -> bool:
        """Whether a request for `authority` is served: well-formed and on the list (or the list is `*`)."""
        if authority is None:
            return self.any
        parsed = parse_host(authority)
        if parsed is None:
            return False
        if self.any:
            return True
        host, port = parsed
        return bool(authority.strip()) and ((host, None) in self._rules or (host, port) in self._rules)


class OriginPolicy:
    def __init__(self, entries: Sequence[str] | None, hosts: HostPolicy) -> None:
        self._hosts = hosts if entries is None else None
        self.any = entries is not None and "*" in entries
        self._exact = {entry.strip().rstrip("/").lower() for entry in entries or ()}
        # `scheme://name:*`: that scheme and name on any port (the official SDK's form)
        self._any_port = tuple(entry[:-1] for entry in self._exact if entry.endswith(":*"))

    def allows(self, origin: str) -> bool:
        normalised = origin.strip().rstrip("/").lower()
        if self.any or normalised in self._exact:
            return True
        if any(normalised.startswith(base) and normalised[len(base) :].isdigit() for base in self._any_port):
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
