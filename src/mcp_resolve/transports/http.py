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
from functools import partial
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..deployment import check_state_keys
from ..errors import MCPError
from .http_endpoint import StreamableHTTPEndpoint
from .http_hosts import LOOPBACK_HOSTS
from .http_options import HttpOptions

if TYPE_CHECKING:
    from ..server import MCPServer
    from .uvicorn_limits import ServerLimits

__all__ = [
    "HttpOptions",
    "StreamableHTTPApp",
    "StreamableHTTPEndpoint",
    "create_app",
    "serve_http",
]

logger = logging.getLogger("mcp_resolve.http")

_WILDCARD_BINDS = ("0.0.0.0", "::", "")


class StreamableHTTPApp(Starlette):
    """A Starlette app with one route, the MCP endpoint, which requests for it reach directly.

    Starlette's error and exception middleware and its router cost a request
    more than a tenth of what serving a plain JSON answer costs (12-18 us and
    about 50 cold-cache misses a call, measured when this went in), and add
    nothing for this endpoint (it raises no HTTPException, and the ASGI server
    answers 500 to an error just as ServerErrorMiddleware would). Anything else
    (other paths, a root_path, middleware or exception handlers added by the
    user, the lifespan) takes the regular Starlette path, and so does
    everything should Starlette rename the two attributes read here
    (tests/test_http_fast_path.py runs a user's middleware through it).
    """

    def __init__(self, endpoint: StreamableHTTPEndpoint, path: str) -> None:
        routes = [Route(path, endpoint)]
        health_path = endpoint.options.health_path
        if health_path is not None and health_path != path:
            routes.append(Route(health_path, partial(health, endpoint), methods=["GET"]))
        super().__init__(routes=routes, lifespan=endpoint.lifespan)
        self.state.mcp_endpoint = endpoint
        self._mcp_endpoint = endpoint
        self._mcp_path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == self._mcp_path
            and not scope.get("root_path")
            and not getattr(self, "user_middleware", True)
            and not getattr(self, "exception_handlers", True)
        ):
            scope["app"] = self
            await self._mcp_endpoint(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


async def health(endpoint: StreamableHTTPEndpoint, request: Request) -> Response:
    """For load balancers: 200 "ok" when this worker serves; 503 when a shared store it needs does not answer."""
    if endpoint.server.redis is not None:
        try:
            await endpoint.server.redis.ping()
        except MCPError as exc:
            return PlainTextResponse(exc.message, status_code=503)
        if endpoint.fleet is not None and not endpoint.fleet.healthy():
            return PlainTextResponse("session channel reconnecting", status_code=503)
    return PlainTextResponse("ok")


def create_app(server: MCPServer, *, path: str = "/mcp", **options: Any) -> StreamableHTTPApp:
    """A Starlette app serving `server` at `path`; options are `HttpOptions` fields.

    A server with a `token_verifier` gets the protected endpoint and its
    metadata routes (`http_protected`); an open one refuses to serve tools
    that declare `scopes=`, which nothing would then enforce.
    """
    if server.token_verifier is not None or server.auth is not None:
        from .http_protected import protected_app

        return protected_app(server, path, HttpOptions(**options))
    scoped = [str(c.name) for c in server.components() if getattr(c, "scopes", ())]
    if scoped:
        raise ValueError(
            f"tools {', '.join(scoped)} declare scopes=, but this server has no token_verifier, so over HTTP "
            "anyone could call them: build MCPServer(..., token_verifier=..., auth=AuthSettings(...))"
        )
    return StreamableHTTPApp(StreamableHTTPEndpoint(server, HttpOptions(**options)), path)


def serve_http(
    server: MCPServer,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    workers: int = 1,
    app_import: str | None = None,
    log_level: str = "info",
    limits: ServerLimits | None = None,
    **options: Any,
) -> None:
    """Serve until stopped. Several workers need `app_import` ("package.module:app"), as uvicorn imports the app in each.

    uvicorn runs with `limits` (default `ServerLimits()`): bounded connections,
    header size and time for a request to arrive; see `uvicorn_limits`.
    """
    check_state_keys(server, workers)
    from .uvicorn_limits import ServerLimits, uvicorn_options

    bounded = uvicorn_options(limits or ServerLimits(), workers=workers)
    if workers > 1:
        if app_import is None or options or path != "/mcp":
            raise ValueError(
                "uvicorn starts each worker by importing the app: pass app_import='package.module:app' "
                "(an app built with mcp.streamable_http_app(...), which carries its own options)"
            )
        uvicorn.run(app_import, host=host, port=port, workers=workers, log_level=log_level, **bounded)
        return
    if options.get("allowed_hosts") is None:
        if host in _WILDCARD_BINDS:
            logger.warning(
                "listening on all interfaces but accepting only loopback Host headers: set allowed_hosts"
            )
        elif host not in LOOPBACK_HOSTS:
            options["allowed_hosts"] = [*LOOPBACK_HOSTS, host]
    app = create_app(server, path=path, **options)
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5, **bounded)
