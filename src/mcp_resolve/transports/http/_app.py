"""Streamable HTTP for both eras: `create_app` (an ASGI app to run or mount) and `serve_http` (uvicorn).

The endpoint itself lives in `_exchange.endpoint`; this module is what the rest of
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
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..._environment import settings_in_environment
from ..._logs import configure_logging
from ...errors import MCPError
from ._exchange.endpoint import StreamableHTTPEndpoint
from ._wire.hosts import LOOPBACK_HOSTS
from .options import HttpOptions

if TYPE_CHECKING:
    from .._serves import ServedServer
    from ._fleet.limits import ServerLimits

__all__ = [
    "HttpOptions",
    "StreamableHTTPApp",
    "StreamableHTTPEndpoint",
    "create_app",
    "serve_http",
    "serve_http_async",
]

logger = logging.getLogger("mcp_resolve.http")

_WILDCARD_BINDS = ("0.0.0.0", "::", "")
_UVICORN_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


class StreamableHTTPApp(Starlette):
    """A Starlette app with one route, the MCP endpoint, which requests for it reach directly.

    Starlette's error and exception middleware and its router cost a request
    a noticeable share of what serving a plain JSON answer costs
    (docs/performance.md), and add nothing for this endpoint (it raises no
    HTTPException, and the ASGI server answers 500 to an error just as
    ServerErrorMiddleware would). Anything else
    (other paths, a root_path, middleware or exception handlers added by the
    user, the lifespan) takes the regular Starlette path, and so does
    everything should Starlette rename the two attributes read here
    (tests/transports/http/test_http_fast_path.py runs a user's middleware through it).
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
    redis = endpoint.server.deployment.redis
    if redis is not None:
        try:
            await redis.ping()
        except MCPError as exc:
            return PlainTextResponse(exc.message, status_code=503)
        if endpoint.fleet is not None and not endpoint.fleet.healthy():
            return PlainTextResponse("session channel reconnecting", status_code=503)
    return PlainTextResponse("ok")


def create_app(server: ServedServer, *, path: str = "/mcp", **options: Any) -> StreamableHTTPApp:
    """A Starlette app serving `server` at `path`; options are `HttpOptions` fields.

    `allowed_hosts` and `allowed_origins` not passed here come from
    MCP_RESOLVE_ALLOWED_HOSTS and MCP_RESOLVE_ALLOWED_ORIGINS when those are
    set, so an app run by any ASGI server honours them. A server with a
    `token_verifier` gets the protected endpoint and its metadata routes
    (`_auth.protected`), and one with `auth_server_provider` the endpoints of
    its authorization server as well (`_auth.authorization_server`); an open one refuses to serve tools that declare
    `scopes=`, which nothing would then enforce.
    """
    # With no MCP_RESOLVE_* variable both are unset, and the settings model (about 1.7 MiB) stays unloaded.
    if settings_in_environment():
        from ...settings import load_settings

        settings = load_settings()
        for name in ("allowed_hosts", "allowed_origins"):
            if options.get(name) is None and getattr(settings, name) is not None:
                options[name] = getattr(settings, name)
    if server.token_verifier is not None or server.auth is not None:
        # Here, not at the top: an open server loads nothing of auth (joserfc, the bearer check).
        from ._auth.protected import ProtectedEndpoint

        http_options = HttpOptions(**options)
        protected = ProtectedEndpoint(server, http_options)
        app = StreamableHTTPApp(protected, path)
        app.router.routes.extend(protected.metadata_routes(path))
        if server.auth_server_provider is not None:  # this server is its own authorization server
            from ._auth.authorization_server import authorization_server_routes

            app.router.routes.extend(authorization_server_routes(server, http_options))
        return app
    scoped = [str(c.name) for c in server.components() if getattr(c, "scopes", ())]
    if scoped:
        raise ValueError(
            f"tools {', '.join(scoped)} declare scopes=, but this server has no token_verifier, so over HTTP "
            "anyone could call them: build MCPServer(..., token_verifier=..., auth=AuthSettings(...))"
        )
    return StreamableHTTPApp(StreamableHTTPEndpoint(server, HttpOptions(**options)), path)


def default_allowed_hosts(host: str) -> list[str] | None:
    """The `Host` headers to accept when none were configured: loopback names, plus `host` if it is a name."""
    if host in _WILDCARD_BINDS:
        logger.warning(
            "listening on all interfaces but accepting only loopback Host headers: set allowed_hosts"
        )
        return None
    return None if host in LOOPBACK_HOSTS else [*LOOPBACK_HOSTS, host]


def _stream_room(options: dict[str, Any], limits: ServerLimits) -> int:
    """`max_streams` for an app served with `limits`: what it asked for, within the unreserved connections."""
    room = limits.stream_connections
    if "max_streams" not in options:
        return room
    asked = options["max_streams"]
    if asked is None or asked > room:
        raise ValueError(
            f"max_streams={asked} would let long-lived streams take the connections kept for short "
            f"requests: at most max_connections - reserved_connections = {room} (ServerLimits)"
        )
    return int(asked)


def serve_http(
    server: ServedServer,
    *,
    host: str | None = None,
    port: int | None = None,
    path: str | None = None,
    workers: int = 1,
    app_import: str | None = None,
    log_level: str | None = None,
    limits: ServerLimits | None = None,
    trusted_proxies: Sequence[str] | None = None,
    extra_routes: Sequence[Any] = (),
    **options: Any,
) -> None:
    """Serve until stopped. Several workers need `app_import` ("package.module:app"), as uvicorn imports the app in each.

    `host`, `port`, `path`, `log_level`, `allowed_hosts`, `allowed_origins`
    and `trusted_proxies` not passed come from the environment
    (MCP_RESOLVE_HOST, ...), else the defaults: 127.0.0.1, 8000, /mcp, INFO,
    loopback names (plus a named host), origins whose host is allowed, no
    proxy trusted. uvicorn runs with `limits` (default `ServerLimits()`):
    bounded connections, header size and time for a request to arrive
    (`_fleet.limits`). The app's long-lived streams (`max_streams`) get at
    most the connections `limits` does not reserve for short requests.
    `extra_routes` (Starlette routes) are served after the endpoint (`@mcp.custom_route`).
    """
    from ...settings import load_settings  # here: the model loads pydantic-settings (about 1.7 MiB)

    settings = load_settings(log_level=log_level)  # arguments win; the environment fills in the rest
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    path = settings.path if path is None else path
    level = configure_logging(settings.log_level)
    logger.debug("settings: %s", settings.described())
    server.deployment.check(workers)
    # Here, not at the top: the limits module loads uvicorn's httptools protocol, which an app
    # mounted in another ASGI app never needs.
    from ._fleet.limits import ServerLimits, uvicorn_options

    limits = limits or ServerLimits()
    trusted = settings.trusted_proxies if trusted_proxies is None else trusted_proxies
    bounded = uvicorn_options(limits, workers=workers, trusted_proxies=trusted)
    uvicorn_level = level.lower() if level in _UVICORN_LEVELS else "info"
    if workers > 1:
        if app_import is None or options or path != "/mcp":
            raise ValueError(
                "uvicorn starts each worker by importing the app: pass app_import='package.module:app' "
                "(an app built with mcp.streamable_http_app(...), which carries its own options)"
            )
        uvicorn.run(app_import, host=host, port=port, workers=workers, log_level=uvicorn_level, **bounded)
        return
    app = _single_app(server, path, host, settings, limits, extra_routes, options)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=uvicorn_level,
        timeout_graceful_shutdown=5,
        **bounded,
    )


def _single_app(
    server: ServedServer,
    path: str,
    host: str,
    settings: Any,
    limits: ServerLimits,
    extra_routes: Sequence[Any],
    options: dict[str, Any],
) -> StreamableHTTPApp:
    """The app one process serves: hosts and origins from the settings where not given, streams within `limits`."""
    for name in ("allowed_hosts", "allowed_origins"):
        if options.get(name) is None:
            options[name] = getattr(settings, name)
    if options["allowed_hosts"] is None:
        options["allowed_hosts"] = default_allowed_hosts(host)
    options["max_streams"] = _stream_room(options, limits)
    app = create_app(server, path=path, **options)
    app.router.routes.extend(extra_routes)
    return app


async def serve_http_async(
    server: ServedServer,
    *,
    host: str | None = None,
    port: int | None = None,
    path: str | None = None,
    log_level: str | None = None,
    limits: ServerLimits | None = None,
    trusted_proxies: Sequence[str] | None = None,
    extra_routes: Sequence[Any] = (),
    **options: Any,
) -> None:
    """`serve_http` in the running event loop (one process): the official `run_streamable_http_async`."""
    from ...settings import load_settings  # here: the model loads pydantic-settings (about 1.7 MiB)

    settings = load_settings(log_level=log_level)
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    path = settings.path if path is None else path
    level = configure_logging(settings.log_level)
    server.deployment.check(1)
    from ._fleet.limits import ServerLimits, uvicorn_options

    limits = limits or ServerLimits()
    trusted = settings.trusted_proxies if trusted_proxies is None else trusted_proxies
    bounded = uvicorn_options(limits, workers=1, trusted_proxies=trusted)
    app = _single_app(server, path, host, settings, limits, extra_routes, options)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=level.lower() if level in _UVICORN_LEVELS else "info",
        timeout_graceful_shutdown=5,
        **bounded,
    )
    await uvicorn.Server(config).serve()
