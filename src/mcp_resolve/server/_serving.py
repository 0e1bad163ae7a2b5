"""Serving a server: its lifespan, shared by every transport and connection, and the choice of transport.

`MCPServer.running()`, `run()` and `streamable_http_app()` are the public
entry points; this is what they do. The lifespan is counted, not nested: the
first user (a stdio loop, an HTTP app, an in-memory client) enters it, the
last one out leaves it, so one server can be served several ways at once with
one `lifespan_context`. Transports are imported only when chosen, so a stdio
server never loads Starlette.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

if TYPE_CHECKING:
    from ._facade import MCPServer

__all__ = ["http_app", "running", "serve"]


@asynccontextmanager
async def running(server: MCPServer) -> AsyncIterator[MCPServer]:
    """Run the lifespan once however many transports or connections share `server`."""
    if server._lifespan_users == 0 and server._lifespan is not None:
        server._lifespan_stack = server._lifespan(server)
        server.lifespan_context = await server._lifespan_stack.__aenter__()
    server._lifespan_users += 1
    try:
        yield server
    finally:
        server._lifespan_users -= 1
        if server._lifespan_users == 0 and server.task_support is not None:
            await server.task_support.shutdown()  # tasks running here stop, and their records say so
        if server._lifespan_users == 0 and server._lifespan_stack is not None:
            stack, server._lifespan_stack = server._lifespan_stack, None
            with anyio.CancelScope(shield=True):
                await stack.__aexit__(None, None, None)
            server.lifespan_context = None
        if server._lifespan_users == 0 and server.redis is not None:
            with anyio.CancelScope(shield=True):  # this loop's Redis sockets close with it
                await server.redis.aclose()
        if server._lifespan_users == 0 and server.token_verifier is not None:
            await _close_verifier(server.token_verifier)


async def _close_verifier(verifier: Any) -> None:
    """Close the HTTP client our introspecting verifier keeps (it opens a new one if used again)."""
    from ..auth.introspection import IntrospectionVerifier

    if isinstance(verifier, IntrospectionVerifier):
        with anyio.CancelScope(shield=True):
            await verifier.aclose()


def serve(
    server: MCPServer, transport: Literal["stdio", "streamable-http"], log_level: str | None, **options: Any
) -> None:
    """Serve `server` on `transport` until stopped."""
    if transport == "stdio":
        from ..transports.stdio import serve_stdio

        anyio.run(partial(serve_stdio, server, log_level=log_level))
    elif transport == "streamable-http":
        from ..transports.http._app import serve_http

        serve_http(server, log_level=log_level, **options)
    else:
        raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'streamable-http'")


def http_app(server: MCPServer, path: str, **options: Any) -> Any:
    """The ASGI app serving `server` at `path`, in Starlette's debug mode when the server asks for it."""
    from ..transports.http._app import create_app

    app = create_app(server, path=path, **options)
    if server.debug:
        app.debug = True  # Starlette's: tracebacks in the error page of a crashed request
    return app
