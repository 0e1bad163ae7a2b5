"""uvicorn started with the limits a server facing a network needs; the one place we subclass uvicorn.

uvicorn's defaults assume a reverse proxy in front: no bound on open
connections, and, on its fast httptools protocol, neither a cap on header
size nor a deadline for a request to arrive. One client holding ten unfinished
50 MB headers, or twenty thousand connections that never send a byte, is
enough to take such a server down. `mcp.run(transport="streamable-http")` and
`mcp-resolve run --http` therefore start uvicorn with `ServerLimits`:

* `max_connections`: uvicorn's `limit_concurrency`; past it a request is
  answered 503 at once.
* `reserved_connections`: the part of `max_connections` (a fifth unless set)
  that long-lived streams (`subscriptions/listen`, handshake-era GET
  streams) may never take, so short requests always find a slot;
  `serve_http` caps the app's `max_streams` at the difference.
* `max_connections_per_address`: open connections from one client address
  (a trusted proxy's excepted); past it a new connection is answered 503 and
  closed at once, so slow or silent connections from one address cannot
  crowd everyone else out.
* `keep_alive_timeout`: how long an idle keep-alive connection is held.
* `max_header_bytes`: the request line and headers together; past it 431.
  uvicorn's h11 protocol enforces it itself; on httptools
  `GuardedHttpToolsProtocol` does.
* `header_timeout`: from a connection's opening, or a request's first byte,
  until its headers are complete; `read_timeout`: from the same moment until
  its body is complete. Past either, 408 and the connection closes (a
  connection that never asked anything is just closed). The handler's own
  run time is not bounded: a tool may take minutes.

Forwarding headers (`X-Forwarded-For`) are ignored unless `trusted_proxies`
names the proxies that set them (uvicorn itself trusts any loopback peer by
default; `uvicorn_options` turns that off), so a client cannot pick the
address its per-client caps are counted under.

`GuardedHttpToolsProtocol` overrides seven protocol and parser callbacks of
uvicorn's `HttpToolsProtocol`, internals that can change between uvicorn releases. Its
cost is one timer per request and a dictionary update per connection
(docs/performance.md).
If the class no longer has the hooks it relies on, or httptools is absent,
`uvicorn_options` falls back to uvicorn's h11 protocol, which keeps the header
cap but has no read deadline, no per-address cap and no early end of
long-lived streams at shutdown; the fallback is logged.

At a graceful shutdown uvicorn asks each connection to finish
(`shutdown()`); the guarded protocol first tells the app (`server_stopping`
in _fleet.lifespan), which ends its long-lived streams at once, so the server
does not wait out its graceful timeout on streams that would never end.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .lifespan import server_stopping

__all__ = [
    "HEADER_READ_TIMEOUT",
    "REQUEST_READ_TIMEOUT",
    "GuardedHttpToolsProtocol",
    "ServerLimits",
    "uvicorn_options",
]

logger = logging.getLogger("mcp_resolve.http")

DEFAULT_MAX_HEADER_BYTES = 64 * 1024
REQUEST_READ_TIMEOUT = 30.0
"""Seconds a request (or a new connection's first request) may take to arrive whole."""
HEADER_READ_TIMEOUT = 10.0
"""Seconds its request line and headers may take: a legitimate client sends them in one packet."""
MAX_CONNECTIONS_PER_ADDRESS = 100
_HOOKS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_message_begin",
    "on_headers_complete",
    "on_message_complete",
    "shutdown",
)
_PROTOCOL_PATH = f"{__name__}:GuardedHttpToolsProtocol"


@dataclass(frozen=True)
class ServerLimits:
    """What `serve_http` gives uvicorn. Behind a reverse proxy, set the proxy's limits as well (docs/transports.md)."""

    max_connections: int = 1000
    keep_alive_timeout: float = 5.0
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    read_timeout: float = REQUEST_READ_TIMEOUT
    header_timeout: float = HEADER_READ_TIMEOUT
    reserved_connections: int | None = None
    """Connections long-lived streams may never take: they get at most `max_connections` minus this.
    None: a fifth of `max_connections` (200 of the default 1000)."""
    max_connections_per_address: int | None = MAX_CONNECTIONS_PER_ADDRESS
    """Open connections from one client address (trusted proxies excepted); None: no bound."""

    def __post_init__(self) -> None:
        for name in (
            "max_connections",
            "keep_alive_timeout",
            "max_header_bytes",
            "read_timeout",
            "header_timeout",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if (
            self.reserved_connections is not None
            and not 0 <= self.reserved_connections < self.max_connections
        ):
            raise ValueError("reserved_connections must be at least 0 and below max_connections")
        if self.max_connections_per_address is not None and self.max_connections_per_address <= 0:
            raise ValueError("max_connections_per_address must be positive (or None)")

    @property
    def stream_connections(self) -> int:
        """How many connections long-lived streams may hold: the app's `max_streams` at most."""
        reserved = self.reserved_connections
        return self.max_connections - (self.max_connections // 5 if reserved is None else reserved)


def uvicorn_options(
    limits: ServerLimits, *, workers: int = 1, trusted_proxies: Sequence[str] | None = None
) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.run` / `uvicorn.Config` that apply `limits`.

    `X-Forwarded-For` and `X-Forwarded-Proto` are read only from the peers
    `trusted_proxies` names (IP addresses or networks; None: from nobody).
    With the default timeouts and per-address cap the protocol is named by
    import path, so that `--workers` children (which receive the
    configuration pickled) import it themselves; other values make a class
    here, which only this process has.
    """
    options: dict[str, Any] = {
        "limit_concurrency": limits.max_connections,
        "timeout_keep_alive": limits.keep_alive_timeout,
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        "proxy_headers": bool(trusted_proxies),
    }
    if trusted_proxies:
        options["forwarded_allow_ips"] = list(trusted_proxies)
    custom = {
        "read_timeout": limits.read_timeout,
        "header_timeout": limits.header_timeout,
        "max_per_address": limits.max_connections_per_address,
    }
    if not _guarded_protocol_usable():
        options["http"] = "h11"
    elif all(getattr(GuardedHttpToolsProtocol, name) == value for name, value in custom.items()):
        options["http"] = _PROTOCOL_PATH
    elif workers > 1:
        raise ValueError(
            "read_timeout, header_timeout and max_connections_per_address other than the defaults need one "
            "worker: each worker imports the default protocol; set them in a protocol subclass named by import path"
        )
    else:
        options["http"] = type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), custom)
    return options


def _guarded_protocol_usable() -> bool:
    if GuardedHttpToolsProtocol is None:
        logger.warning("httptools is not available: serving on h11, with no deadline for a request to arrive")
        return False
    return True


def _guarded_class() -> Any:
    """The guarded protocol class, or None when uvicorn's httptools protocol is missing or has changed."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None
    if not all(callable(getattr(HttpToolsProtocol, hook, None)) for hook in _HOOKS):
        logger.warning("uvicorn's HttpToolsProtocol changed: request size and read limits fall back to h11")
        return None

    class Guarded(HttpToolsProtocol):  # type: ignore[misc, valid-type]
        """uvicorn's httptools protocol with a header-size cap, read deadlines and a per-address cap."""

        read_timeout = REQUEST_READ_TIMEOUT
        header_timeout = HEADER_READ_TIMEOUT
        max_per_address: int | None = MAX_CONNECTIONS_PER_ADDRESS
        _deadline: asyncio.TimerHandle | None = None
        _began = 0.0  # when the connection opened, or the current request's first byte came
        _requesting = False  # a request has begun and its body is not complete
        _in_head = False  # ... and its headers are not complete either
        _head_bytes = 0
        _address: str | None = None  # counted under the per-address cap while open

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm(self._head_timeout())  # a connection that never sends a request is closed, not held
            if self.max_per_address is not None and self.client is not None:
                self._count_address(self.client[0], self.max_per_address)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._address is not None:
                counts = _per_address(self.server_state)
                counts[self._address] -= 1
                if counts[self._address] <= 0:
                    del counts[self._address]
                self._address = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._in_head:
                # httptools gathers a header until it ends, so only the bytes received tell its size.
                self._head_bytes += len(data)
                if self._head_bytes > self._max_head_bytes() and not self.transport.is_closing():
                    self._refuse(b"431 Request Header Fields Too Large", b"request headers too large")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._requesting = self._in_head = True
            self._head_bytes = 0
            if self._deadline is None:
                self._arm(self._head_timeout())

        def on_headers_complete(self) -> None:
            self._in_head = False
            if self._deadline is not None:  # the headers are in: the body has what is left of read_timeout
                self._deadline.cancel()
                self._deadline = self.loop.call_at(self._began + self.read_timeout, self._expired)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._requesting = False
            self._disarm()  # the request is in: the handler may take as long as it needs
            super().on_message_complete()

        def shutdown(self) -> None:
            server_stopping()  # the app ends its long-lived streams now, rather than after the graceful timeout
            super().shutdown()

        def _count_address(self, address: str, limit: int) -> None:
            if _trusted_proxy(self.config, self.server_state, address):
                return  # a proxy carries many clients: they are told apart by what it forwards
            counts = _per_address(self.server_state)
            if counts.get(address, 0) >= limit:
                _warn_crowded(self.server_state, address, limit)
                self._refuse(b"503 Service Unavailable", b"too many connections from this address")
                return
            counts[address] = counts.get(address, 0) + 1
            self._address = address

        def _head_timeout(self) -> float:
            return min(self.header_timeout, self.read_timeout)

        def _max_head_bytes(self) -> int:
            return self.config.h11_max_incomplete_event_size or DEFAULT_MAX_HEADER_BYTES

        def _arm(self, seconds: float) -> None:
            self._began = self.loop.time()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            cycle = self.cycle
            if self._requesting and (cycle is None or not cycle.response_started):
                self._refuse(b"408 Request Timeout", b"the request did not arrive in time")
            else:  # nothing was asked (an idle connection), or an answer is already under way
                self.transport.close()

        def _refuse(self, status: bytes, text: bytes) -> None:
            self._requesting = self._in_head = False
            self.transport.write(
                b"HTTP/1.1 %s\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s" % (status, len(text), text)
            )
            self.transport.close()

    Guarded.__name__ = Guarded.__qualname__ = "GuardedHttpToolsProtocol"
    Guarded.__module__ = __name__
    return Guarded


def _per_address(state: Any) -> dict[str, int]:
    """Open connections by client address, kept on the uvicorn server's shared state."""
    counts: dict[str, int] | None = getattr(state, "_mcp_per_address", None)
    if counts is None:
        counts = {}
        state._mcp_per_address = counts
    return counts


def _trusted_proxy(config: Any, state: Any, address: str) -> bool:
    """Whether `address` is a proxy uvicorn takes forwarding headers from (its `forwarded_allow_ips`)."""
    if not config.proxy_headers:
        return False
    trusted: tuple[bool, list[Any]] | None = getattr(state, "_mcp_trusted", None)
    if trusted is None:
        allowed = config.forwarded_allow_ips
        entries = allowed.split(",") if isinstance(allowed, str) else list(allowed)
        networks = []
        for entry in (e.strip() for e in entries):
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                pass  # "*" (below), or a name uvicorn matches literally
        trusted = ("*" in (e.strip() for e in entries), networks)
        state._mcp_trusted = trusted
    if trusted[0]:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted[1])


def _warn_crowded(state: Any, address: str, limit: int) -> None:
    """Once per address: the cap is a hint that a proxy in front was not listed as trusted."""
    warned: set[str] = getattr(state, "_mcp_crowded", None) or set()
    state._mcp_crowded = warned
    if address not in warned and len(warned) < 64:
        warned.add(address)
        logger.warning(
            "refusing connections from %s past max_connections_per_address=%d; if it is your reverse "
            "proxy, list it in MCP_RESOLVE_TRUSTED_PROXIES",
            address,
            limit,
        )


GuardedHttpToolsProtocol: Any = _guarded_class()
