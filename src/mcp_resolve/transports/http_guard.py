"""What an HTTP request must get right before any JSON-RPC is read: host, origin, media types, size.

Every refusal is the status the Streamable HTTP spec names with a JSON-RPC
error body that has no id, so a client learns why; none reaches a handler and
none carries internals. Host and Origin checks are what stop DNS rebinding: a
web page on an attacker's domain that resolves to 127.0.0.1 still sends its
own name in `Host` and `Origin`, so a loopback-only allow-list shuts it out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pydantic_core
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive

from ..protocol.jsonrpc import error_message

__all__ = [
    "LOOPBACK_HOSTS",
    "ClientGone",
    "HttpOptions",
    "OriginPolicy",
    "HostPolicy",
    "accepted_media",
    "is_json_content",
    "json_response",
    "post_media",
    "read_body",
    "refusal",
]

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DRAIN_LIMIT = 64 * 1024 * 1024  # an oversized body is read and dropped up to here, so the 413 arrives cleanly
_PARSED_HEADERS = 256  # distinct Host/Accept values kept parsed: a client repeats the same ones on every call


class ClientGone(Exception):
    """The client disconnected before its request body arrived."""


@dataclass(frozen=True)
class HttpOptions:
    """The knobs of `mcp.streamable_http_app(...)` (and `mcp.run(transport="streamable-http", ...)`).

    `allowed_hosts`: accepted `Host` values, as `name` (any port), `name:port`
    or `"*"`; default loopback only. `allowed_origins`: accepted `Origin`
    values (`"https://app.example.com"` or `"*"`); by default an origin is
    accepted when its host passes `allowed_hosts`. Handshake-era sessions
    idle for `session_idle_timeout` seconds are dropped (swept on a timer),
    at most `max_sessions` live at once and at most `max_sessions_per_client`
    per client, its principal or else its address (None: no bound). `principal(request)` names
    the authenticated caller (default: Starlette's `request.user` when
    authenticated); requestState and handshake sessions are bound to it.
    """

    allowed_hosts: Sequence[str] | None = None
    allowed_origins: Sequence[str] | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    sse_ping_interval: float = 15.0
    session_idle_timeout: float | None = 3600.0
    max_sessions: int | None = 10_000
    max_sessions_per_client: int | None = 100
    principal: Callable[[Request], str | None] | None = None

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")
        if self.sse_ping_interval <= 0:
            raise ValueError("sse_ping_interval must be positive")
        for name in ("allowed_hosts", "allowed_origins"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a list of strings, e.g. [{getattr(self, name)!r}]")


@lru_cache(maxsize=_PARSED_HEADERS)
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
        self.allows_raw: Callable[[bytes | None], bool] = lru_cache(maxsize=_PARSED_HEADERS)(self._allows_raw)

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


@lru_cache(maxsize=_PARSED_HEADERS)
def accepted_media(accept: str | None) -> tuple[bool, bool]:
    """Whether the client takes (JSON, an SSE stream), from its Accept header; wildcards count."""
    json_ok = sse_ok = False
    for part in (accept or "").split(","):
        media, *params = part.split(";")
        media = media.strip().lower()
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 1.0
        if quality <= 0:
            continue
        json_ok = json_ok or media in ("application/json", "application/*", "*/*")
        sse_ok = sse_ok or media in ("text/event-stream", "text/*", "*/*")
    return json_ok, sse_ok


def is_json_content(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "application/json"


@lru_cache(maxsize=_PARSED_HEADERS)
def post_media(content_type: bytes | None, accept: bytes | None) -> tuple[bool, bool, bool]:
    """(the body is JSON, the client takes JSON, the client takes SSE) from a POST's raw headers."""
    json_ok, sse_ok = accepted_media(None if accept is None else accept.decode("latin-1"))
    return is_json_content(None if content_type is None else content_type.decode("latin-1")), json_ok, sse_ok


async def read_body(receive: Receive, limit: int, content_length: bytes | None) -> bytes | None:
    """The whole body, or None when it exceeds `limit`.

    The excess is read and dropped (up to DRAIN_LIMIT past the limit) rather
    than left in the socket: a client still uploading when we answer would see
    a reset, not our 413. A body declared larger than that is refused after
    its first chunk. A body that arrives whole (the usual JSON-RPC message)
    needs no declared length: its size is known.
    """
    message = await receive()
    if message["type"] == "http.request" and not message.get("more_body", False):  # all in one message
        whole: bytes = message.get("body", b"")
        return whole if len(whole) <= limit else None
    ceiling = limit + DRAIN_LIMIT
    try:
        declared = int(content_length) if content_length is not None else None
    except ValueError:
        declared = None
    if declared is not None and declared > ceiling:
        return None
    chunks: list[bytes] | None = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            raise ClientGone
        body = message.get("body", b"")
        size += len(body)
        if chunks is not None:
            chunks.append(body)
            if size > limit:
                chunks = None
        if not message.get("more_body", False) or size > ceiling:
            break
        message = await receive()
    return None if chunks is None else b"".join(chunks)


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        pydantic_core.to_json(body), status_code=status, media_type="application/json", headers=headers
    )


def refusal(status: int, code: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """An HTTP-level rejection, with the JSON-RPC error body (no id) the spec allows."""
    return json_response(status, error_message(None, code, message), headers)
