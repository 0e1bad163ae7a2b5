"""uvicorn started with the limits a server facing a network needs; the one place we subclass uvicorn.

uvicorn's defaults assume a reverse proxy in front: no bound on open
connections, and, on its fast httptools protocol, neither a cap on header
size nor a deadline for a request to arrive. One client holding ten unfinished
50 MB headers, or twenty thousand connections that never send a byte, is
enough to take such a server down. `mcp.run(transport="streamable-http")` and
`mcp-resolve run --http` therefore start uvicorn with `ServerLimits`:

* `max_connections`: uvicorn's `limit_concurrency`; past it a request is
  answered 503 at once.
* `keep_alive_timeout`: how long an idle keep-alive connection is held.
* `max_header_bytes`: the request line and headers together; past it 431.
  uvicorn's h11 protocol enforces it itself; on httptools
  `GuardedHttpToolsProtocol` does.
* `read_timeout`: from a connection's opening, or a request's first byte,
  until its body is complete; past it 408 and the connection closes (a body
  shorter than its Content-Length no longer waits forever). The handler's own
  run time is not bounded: a tool may take minutes.

`GuardedHttpToolsProtocol` overrides six protocol and parser callbacks of
uvicorn's `HttpToolsProtocol`, internals that can change between uvicorn releases. Its
cost is one timer per request (docs/performance.md).
If the class no longer has the hooks it relies on, or httptools is absent,
`uvicorn_options` falls back to uvicorn's h11 protocol, which keeps the header
cap but has no read deadline; the fallback is logged.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

__all__ = ["REQUEST_READ_TIMEOUT", "GuardedHttpToolsProtocol", "ServerLimits", "uvicorn_options"]

logger = logging.getLogger("mcp_resolve.http")

DEFAULT_MAX_HEADER_BYTES = 64 * 1024
REQUEST_READ_TIMEOUT = 30.0
"""Seconds a request (or a new connection's first request) may take to arrive whole."""
_HOOKS = (
    "connection_made",
    "connection_lost",
    "data_received",
    "on_message_begin",
    "on_headers_complete",
    "on_message_complete",
)
_PROTOCOL_PATH = f"{__name__}:GuardedHttpToolsProtocol"


@dataclass(frozen=True)
class ServerLimits:
    """What `serve_http` gives uvicorn. Behind a reverse proxy, set the proxy's limits as well (docs/transports.md)."""

    max_connections: int = 1000
    keep_alive_timeout: float = 5.0
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    read_timeout: float = REQUEST_READ_TIMEOUT

    def __post_init__(self) -> None:
        for name in ("max_connections", "keep_alive_timeout", "max_header_bytes", "read_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")


def uvicorn_options(limits: ServerLimits, *, workers: int = 1) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.run` / `uvicorn.Config` that apply `limits`.

    With the default read timeout the protocol is named by import path, so
    that `--workers` children (which receive the configuration pickled)
    import it themselves; another timeout is a class made here, which only
    this process has.
    """
    options: dict[str, Any] = {
        "limit_concurrency": limits.max_connections,
        "timeout_keep_alive": limits.keep_alive_timeout,
        "h11_max_incomplete_event_size": limits.max_header_bytes,
    }
    if not _guarded_protocol_usable():
        options["http"] = "h11"
    elif limits.read_timeout == GuardedHttpToolsProtocol.read_timeout:
        options["http"] = _PROTOCOL_PATH
    elif workers > 1:
        raise ValueError(
            f"read_timeout={limits.read_timeout} needs one worker: each worker imports the default "
            f"({REQUEST_READ_TIMEOUT} s); set a custom one in a protocol subclass named by import path"
        )
    else:
        options["http"] = type(
            "GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"read_timeout": limits.read_timeout}
        )
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
        """uvicorn's httptools protocol with a header-size cap and a deadline for a request to arrive."""

        read_timeout = REQUEST_READ_TIMEOUT
        _deadline: asyncio.TimerHandle | None = None
        _requesting = False  # a request has begun and its body is not complete
        _in_head = False  # ... and its headers are not complete either
        _head_bytes = 0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()  # a connection that never sends a request is closed, not held

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
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
                self._arm()

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._requesting = False
            self._disarm()  # the request is in: the handler may take as long as it needs
            super().on_message_complete()

        def _max_head_bytes(self) -> int:
            return self.config.h11_max_incomplete_event_size or DEFAULT_MAX_HEADER_BYTES

        def _arm(self) -> None:
            self._deadline = self.loop.call_later(self.read_timeout, self._expired)

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


GuardedHttpToolsProtocol: Any = _guarded_class()
