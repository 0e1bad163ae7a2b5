"""The knobs of the Streamable HTTP app: `mcp.streamable_http_app(...)` and `mcp.run(transport="streamable-http", ...)`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from starlette.requests import Request

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_STREAMS", "HttpOptions"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_STREAMS = 800
"""uvicorn's connection limit under `serve_http` (1000) less the connections kept for short requests (200)."""


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
    sse_retry_ms: int = 1000
    """The `retry` hint of resumable streams: how long a client waits before it resumes with Last-Event-ID."""
    resume_window: float = 30.0
    """How long a handshake call waits for the answers to its questions once its resumable stream broke."""
    health_path: str | None = "/health"
    """A GET route for load balancers: 200 when this worker can serve (and reach Redis, if it uses it)."""
    max_streams: int | None = DEFAULT_MAX_STREAMS
    """Long-lived streams (`subscriptions/listen`, handshake GET streams) open at once; past it 503 (None: no bound).
    Keep it below the ASGI server's connection limit: the difference is what short requests can always get."""
    max_streams_per_client: int | None = 32
    """Long-lived streams one client (its principal, else its address) may hold open; past it 429."""
    question_timeout: float | None = 300.0
    """Seconds a handshake-era call waits for the answer to a question it asked the client (elicitation,
    sampling, roots) before the question fails with an error the call reports (None: no deadline)."""
    max_registrations_per_address: int | None = 20
    """Of a server that is its own authorization server: client registrations (`/register`) one address
    may make per hour; past it 429 (None: no cap). Counted per worker (docs/auth-server.md, Limits)."""
    max_authorizations_per_address: int | None = 60
    """Authorization requests (`/authorize`, each a sign-in the provider keeps) per address per 10 minutes."""
    max_token_requests_per_address: int | None = 120
    """Token requests (`/token`) per address per minute."""

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0:
            raise ValueError("max_body_bytes must be positive")
        for name in (
            "max_streams",
            "max_streams_per_client",
            "question_timeout",
            "max_registrations_per_address",
            "max_authorizations_per_address",
            "max_token_requests_per_address",
        ):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive (or None)")
        if self.sse_ping_interval <= 0:
            raise ValueError("sse_ping_interval must be positive")
        if self.sse_retry_ms < 0 or self.resume_window < 0:
            raise ValueError("sse_retry_ms and resume_window must not be negative")
        for name in ("allowed_hosts", "allowed_origins"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a list of strings, e.g. [{getattr(self, name)!r}]")
