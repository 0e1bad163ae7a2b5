"""The official SDK's spellings on `MCPServer`: `settings`, `session_manager`, `custom_route`'s routes.

Ported servers and their tests reach for these names; each is a thin view
of what the server already has, so there is one place for each knob. The
settings object writes through to the server (`mcp.settings.debug = True`
is `mcp.debug = True`), and keeps the host, port and paths the official
`Settings` once held for `run()`, which reads them when not given.
Nothing here loads Starlette: routes are kept as plain records and become
Starlette routes when an app is built (`_serving.http_app`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..auth.tokens import AuthSettings
    from ._facade import Lifespan, MCPServer

__all__ = ["CustomRoute", "ServerSettings", "SessionManager"]


class CustomRoute(NamedTuple):
    """One `@mcp.custom_route(...)`: a Starlette endpoint and how to route to it."""

    path: str
    endpoint: Callable[..., Any]
    methods: tuple[str, ...]
    name: str | None
    include_in_schema: bool


class ServerSettings:
    """`mcp.settings`: the official attribute names, read from and written to the server itself.

    `host`, `port`, `streamable_http_path`, `sse_path` and `message_path` are
    what `run()` uses when its call does not say; None means "from the
    environment, else the default" (MCP_RESOLVE_HOST, ..., docs/configuration.md).
    """

    def __init__(self, server: MCPServer, lifespan: Lifespan | None) -> None:
        self._server = server
        self.lifespan = lifespan
        """The lifespan given to the constructor (read-only in effect: the server runs the one it was built with)."""
        self.host: str | None = None
        self.port: int | None = None
        self.streamable_http_path = "/mcp"
        self.sse_path = "/sse"
        self.message_path = "/messages/"

    @property
    def debug(self) -> bool:
        return self._server.debug

    @debug.setter
    def debug(self, value: bool) -> None:
        self._server.debug = value

    @property
    def log_level(self) -> str:
        """The server's `log_level`, "INFO" when none was given (the official's default)."""
        return self._server.log_level or "INFO"

    @log_level.setter
    def log_level(self, value: Any) -> None:
        self._server.log_level = value

    @property
    def dependencies(self) -> list[str]:
        return self._server.dependencies

    @property
    def auth(self) -> AuthSettings | None:
        return self._server.auth

    @property
    def warn_on_duplicate_tools(self) -> bool:
        return self._server.registry.warn_on_duplicate["tool"]

    @property
    def warn_on_duplicate_resources(self) -> bool:
        return self._server.registry.warn_on_duplicate["resource"]

    @property
    def warn_on_duplicate_prompts(self) -> bool:
        return self._server.registry.warn_on_duplicate["prompt"]

    def run_options(self, transport: str, options: dict[str, Any]) -> dict[str, Any]:
        """`options` for `transport`, with the host, port and path set here where the call gives none.

        The official keyword names are accepted too: `streamable_http_path` for `path`.
        """
        options = dict(options)
        if transport == "stdio":
            return options
        if "streamable_http_path" in options:
            options["path"] = options.pop("streamable_http_path")
        if self.host is not None:
            options.setdefault("host", self.host)
        if self.port is not None:
            options.setdefault("port", self.port)
        if transport == "streamable-http" and self.streamable_http_path != "/mcp":
            options.setdefault("path", self.streamable_http_path)
        if transport == "sse":
            options.setdefault("sse_path", self.sse_path)
            options.setdefault("message_path", self.message_path)
        return options


class SessionManager:
    """`mcp.session_manager`: `run()` runs the lifespan of this server's HTTP apps, for a parent app's lifespan.

    A Starlette or FastAPI app that mounts ours does not run the lifespan of
    what it mounts; the official SDK's README has the parent enter
    `mcp.session_manager.run()` in its own. Here that enters each app's own
    lifespan (the server's lifespan, the session sweeper, shutdown of long
    streams), exactly what the app does when served on its own.
    """

    def __init__(self, apps: tuple[Any, ...]) -> None:
        self.apps = apps

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for app in self.apps:
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield
