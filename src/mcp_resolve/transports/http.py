"""Streamable HTTP for both eras: `create_app` (an ASGI app to run or mount) and `serve_http` (uvicorn).

The endpoint itself lives in `http_endpoint`; this module is what the rest of
the package (MCPServer, the CLI) calls.

Lifespan: the app enters `server.running()` from its own ASGI lifespan, once.
A parent Starlette or FastAPI app does not run the lifespan of an app it
mounts, so the first request then enters `server.running()` itself, in a task
that lasts as long as the event loop (asyncio servers). To tie the server's
lifespan to the parent's instead, give the parent ours:
`Starlette(routes=[Mount("/", app=mcp_app)], lifespan=mcp_app.router.lifespan_context)`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route

from .http_endpoint import StreamableHTTPEndpoint
from .http_guard import LOOPBACK_HOSTS, HttpOptions
from .http_lifespan import check_state_keys

if TYPE_CHECKING:
    from ..server import MCPServer

__all__ = ["HttpOptions", "StreamableHTTPEndpoint", "check_state_keys", "create_app", "serve_http"]

logger = logging.getLogger("mcp_resolve.http")

_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def create_app(server: MCPServer, *, path: str = "/mcp", **options: Any) -> Starlette:
    """A Starlette app serving `server` at `path`; options are `HttpOptions` fields."""
    endpoint = StreamableHTTPEndpoint(server, HttpOptions(**options))
    app = Starlette(routes=[Route(path, endpoint)], lifespan=endpoint.lifespan)
    app.state.mcp_endpoint = endpoint
    return app


def serve_http(
    server: MCPServer,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    workers: int = 1,
    app_import: str | None = None,
    log_level: str = "info",
    **options: Any,
) -> None:
    """Serve until stopped. Several workers need `app_import` ("package.module:app"), as uvicorn imports the app in each."""
    check_state_keys(server, workers)
    if workers > 1:
        if app_import is None or options or path != "/mcp":
            raise ValueError(
                "uvicorn starts each worker by importing the app: pass app_import='package.module:app' "
                "(an app built with mcp.streamable_http_app(...), which carries its own options)"
            )
        uvicorn.run(app_import, host=host, port=port, workers=workers, log_level=log_level)
        return
    if options.get("allowed_hosts") is None:
        if host in _WILDCARD_BINDS:
            logger.warning(
                "listening on all interfaces but accepting only loopback Host headers: set allowed_hosts"
            )
        elif host not in LOOPBACK_HOSTS:
            options["allowed_hosts"] = [*LOOPBACK_HOSTS, host]
    app = create_app(server, path=path, **options)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
