"""Serving a server: its lifespan, shared by every transport and connection, and the choice of transport.

`MCPServer.running()`, `run()` and `streamable_http_app()` are the public
entry points; this is what they do. The lifespan is counted, not nested: the
first user (a stdio loop, an HTTP app, an in-memory client) enters it, the
last one out leaves it, so one server can be served several ways at once with
one `lifespan_context`. Transports are imported only when chosen, so a stdio
server never loads Starlette.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

if TYPE_CHECKING:
    from ._facade import MCPServer

__all__ = ["SharedLifespan", "http_app", "running", "serve", "serve_async", "sse_app"]

Transport = Literal["stdio", "streamable-http", "sse"]


class SharedLifespan:
    """The author's lifespan, run once for all of a server's users: how many there are, and the open context.

    The facade owns one (built from `MCPServer(lifespan=...)`) and hands it
    to `running`, the one place that counts users in and out.
    """

    def __init__(self, fn: Callable[[Any], AbstractAsyncContextManager[Any]] | None) -> None:
        self.fn = fn
        self.users = 0
        """Transports and connections inside `running()` now."""
        self._open: AbstractAsyncContextManager[Any] | None = None
        self.companions: list[Callable[[], AbstractAsyncContextManager[Any]]] = []
        """Entered after the lifespan and left before it: the `running()` of each server mounted in this one."""
        self._companions: AsyncExitStack | None = None
        self.changing: anyio.Event | None = None
        """Set while the first user enters or the last one leaves: others wait for it, so two users
        arriving at once enter the lifespan (and each mounted server's) once. Made per change, so
        no event outlives the loop it was made in."""

    async def enter_companions(self) -> None:
        stack = AsyncExitStack()
        try:
            for companion in self.companions:
                await stack.enter_async_context(companion())
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stack.aclose()
            raise
        self._companions = stack

    async def exit_companions(self) -> None:
        stack, self._companions = self._companions, None
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()

    async def enter(self, server: MCPServer) -> Any:
        """Enter the lifespan for `server`; what it yields is the server's `lifespan_context`."""
        assert self.fn is not None
        self._open = self.fn(server)
        return await self._open.__aenter__()

    @property
    def is_open(self) -> bool:
        return self._open is not None

    async def exit(self) -> None:
        """Leave the lifespan entered last, even when the caller is being cancelled."""
        opened, self._open = self._open, None
        if opened is not None:
            with anyio.CancelScope(shield=True):
                await opened.__aexit__(None, None, None)


@asynccontextmanager
async def running(server: MCPServer, lifespan: SharedLifespan) -> AsyncIterator[MCPServer]:
    """Run `lifespan` once however many transports or connections share `server`."""
    while lifespan.changing is not None:  # another user is entering or leaving it: wait for the outcome
        await lifespan.changing.wait()
    if lifespan.users == 0:
        lifespan.changing = anyio.Event()
        try:
            await _first_one_in(server, lifespan)
        finally:
            changed, lifespan.changing = lifespan.changing, None
            changed.set()
    lifespan.users += 1  # no await since the check: nobody else enters in between
    try:
        yield server
    finally:
        lifespan.users -= 1
        if lifespan.users == 0 and lifespan.changing is None:
            lifespan.changing = anyio.Event()
            try:
                await _last_one_out(server, lifespan)
            finally:
                changed, lifespan.changing = lifespan.changing, None
                changed.set()


async def _first_one_in(server: MCPServer, lifespan: SharedLifespan) -> None:
    """The first user: enter the lifespan, then the mounted servers' (leaving it again if they fail)."""
    if lifespan.fn is not None:
        server.lifespan_context = await lifespan.enter(server)
    if lifespan.companions:
        try:
            await lifespan.enter_companions()
        except BaseException:
            if lifespan.is_open:
                await lifespan.exit()
                server.lifespan_context = None
            raise


async def _last_one_out(server: MCPServer, lifespan: SharedLifespan) -> None:
    """The last user left: stop the tasks, leave the lifespan, close what this event loop opened."""
    if server.task_support is not None:
        await server.task_support.shutdown()  # tasks running here stop, and their records say so
    await lifespan.exit_companions()  # the servers mounted here leave their lifespans first
    if lifespan.is_open:
        await lifespan.exit()
        server.lifespan_context = None
    redis = server.deployment.redis
    if redis is not None:
        with anyio.CancelScope(shield=True):  # this loop's Redis sockets close with it
            await redis.aclose()
    if server.token_verifier is not None:
        await _close_verifier(server.token_verifier)


async def _close_verifier(verifier: Any) -> None:
    """Close the HTTP client our introspecting verifier keeps (it opens a new one if used again)."""
    from ..auth.introspection import IntrospectionVerifier

    if isinstance(verifier, IntrospectionVerifier):
        with anyio.CancelScope(shield=True):
            await verifier.aclose()


def serve(server: MCPServer, transport: Transport, log_level: str | None, **options: Any) -> None:
    """Serve `server` on `transport` until stopped."""
    if transport == "stdio":
        from ..transports.stdio import serve_stdio

        anyio.run(partial(serve_stdio, server, log_level=log_level))
    elif transport == "streamable-http":
        from ..transports.http import serve_http

        options = _health_yields(server, with_transport_security(options))
        serve_http(server, log_level=log_level, extra_routes=starlette_routes(server), **options)
    elif transport == "sse":
        from ..transports.http.sse import serve_sse

        options = with_transport_security(options)
        serve_sse(server, log_level=log_level, extra_routes=starlette_routes(server), **options)
    else:
        raise ValueError(f"unknown transport {transport!r}: use 'stdio', 'streamable-http' or 'sse'")


async def serve_async(server: MCPServer, transport: Transport, log_level: str | None, **options: Any) -> None:
    """Serve `server` on `transport` in the running event loop until stopped (or cancelled)."""
    if transport == "stdio":
        from ..transports.stdio import serve_stdio

        await serve_stdio(server, log_level=log_level)
    elif transport == "streamable-http":
        from ..transports.http import serve_http_async

        options = _health_yields(server, with_transport_security(options))
        await serve_http_async(server, log_level=log_level, extra_routes=starlette_routes(server), **options)
    elif transport == "sse":
        from ..transports.http.sse import serve_sse_async

        options = with_transport_security(options)
        await serve_sse_async(server, log_level=log_level, extra_routes=starlette_routes(server), **options)
    else:
        raise ValueError(f"unknown transport {transport!r}: use 'stdio', 'streamable-http' or 'sse'")


def with_transport_security(options: dict[str, Any]) -> dict[str, Any]:
    """The official `transport_security=` option as our `allowed_hosts`/`allowed_origins`."""
    if "transport_security" not in options:
        return options
    from ..transports.http.security import with_transport_security as convert

    return convert(options)


def _app_options(options: dict[str, Any]) -> dict[str, Any]:
    """An app's options with the official's `transport_security=` and `host=` (the address it will be
    served on: its name joins the loopback ones as an accepted Host) taken as ours."""
    options = with_transport_security(options)
    if "host" not in options:
        return options
    from ..transports.http import default_allowed_hosts

    options = dict(options)
    host = options.pop("host")
    if options.get("allowed_hosts") is None and host is not None:
        options["allowed_hosts"] = default_allowed_hosts(host)
    return options


def starlette_routes(server: MCPServer) -> list[Any]:
    """The server's `@mcp.custom_route` routes as Starlette routes."""
    from starlette.routing import Route

    return [
        Route(r.path, r.endpoint, methods=list(r.methods), name=r.name, include_in_schema=r.include_in_schema)
        for r in server.custom_routes
    ]


def _health_yields(server: MCPServer, options: dict[str, Any]) -> dict[str, Any]:
    """No built-in health route where a custom route of the server takes its path (`/health` is popular)."""
    health = options.get("health_path", "/health")
    if health is not None and any(route.path == health for route in server.custom_routes):
        options = {**options, "health_path": None}
    return options


def http_app(server: MCPServer, path: str, **options: Any) -> Any:
    """The ASGI app serving `server` at `path`, in Starlette's debug mode when the server asks for it.

    The server's custom routes come after the endpoint's own, so they never shadow it; one
    at the built-in health route's path replaces that route.
    """
    from ..transports.http import create_app

    app = create_app(server, path=path, **_health_yields(server, _app_options(options)))
    app.router.routes.extend(starlette_routes(server))
    if server.debug:
        app.debug = True  # Starlette's: tracebacks in the error page of a crashed request
    return app


def sse_app(server: MCPServer, **options: Any) -> Any:
    """The legacy HTTP+SSE app serving `server` (handshake era only), with the server's custom routes."""
    from ..transports.http.sse import create_sse_app

    app = create_sse_app(server, **_app_options(options))
    app.router.routes.extend(starlette_routes(server))
    if server.debug:
        app.debug = True
    return app
