"""Streamable HTTP for both eras: the public face of the HTTP transport.

`create_app` builds an ASGI app to run or mount; `serve_http` runs it under uvicorn with the
limits a server facing a network needs (`ServerLimits`); `metadata_routes` serves Protected
Resource Metadata for a protected server mounted inside another app.

Behind this face the transport is grouped by concern, all private:

- `_wire`: headers, bodies, media types, Host and Origin, answers made before any JSON-RPC;
- `_exchange`: the endpoint, one request's JSON or SSE answer, handshake-era sessions;
- `_streams`: long-lived streams (a session's GET stream, resumption) and their per-client caps;
- `_auth`: the bearer check, its challenges, Protected Resource Metadata;
- `_fleet`: several processes: shared sessions, workers, the lifespan, uvicorn and its limits.

Beside it, the public module `sse` serves the legacy HTTP+SSE transport (`mcp.sse_app()`).
"""

from typing import TYPE_CHECKING, Any

from ._app import StreamableHTTPApp, create_app, default_allowed_hosts, serve_http, serve_http_async
from ._exchange.endpoint import StreamableHTTPEndpoint
from .options import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_STREAMS, HttpOptions

if TYPE_CHECKING:
    from ._auth.prm import metadata_document, metadata_routes, metadata_url
    from ._fleet.limits import GuardedHttpToolsProtocol, ServerLimits, uvicorn_options

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_STREAMS",
    "GuardedHttpToolsProtocol",
    "HttpOptions",
    "ServerLimits",
    "StreamableHTTPApp",
    "StreamableHTTPEndpoint",
    "create_app",
    "default_allowed_hosts",
    "metadata_document",
    "metadata_routes",
    "metadata_url",
    "serve_http",
    "serve_http_async",
    "uvicorn_options",
]

_LIMITS = frozenset({"GuardedHttpToolsProtocol", "ServerLimits", "uvicorn_options"})
_METADATA = frozenset({"metadata_document", "metadata_routes", "metadata_url"})


def __getattr__(name: str) -> Any:
    """The uvicorn limits and the metadata routes load on first use: a mounted app needs neither."""
    if name in _LIMITS:
        from ._fleet import limits

        return getattr(limits, name)
    if name in _METADATA:
        from ._auth import prm

        return getattr(prm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
