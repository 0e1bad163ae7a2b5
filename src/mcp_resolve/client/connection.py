"""Opening the connection a Client talks over: the pipe for its target, and what signs HTTP requests.

A target is an `MCPServer` (in memory), an `http(s)://` URL, or a stdio
command; each option applies to some of them only, and `check_options`
says so at construction rather than letting an option be silently ignored.
The session over the pipe turns the transport's word that the OAuth flow
gave up back into an `AuthorizationError`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import MCPError
from .auth.errors import AuthorizationError
from .pipes import MessagePipe, open_stdio, stdio_command
from .session import ClientSession, NotificationHandler, RequestHandler

if TYPE_CHECKING:
    import ssl

    import httpx

    from ..server import MCPServer

__all__ = ["AuthorizingSession", "check_options", "http_auth", "is_http", "open_pipe", "open_session"]


def is_http(target: object) -> bool:
    """Whether `target` is an `http(s)://` URL (the only kind that takes auth, TLS and HTTP client options)."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def check_options(
    target: object,
    *,
    auth: object,
    http_client: object,
    verify: object,
    cwd: object,
) -> None:
    """Refuse an option that does not apply to `target`'s transport (ValueError)."""
    http = is_http(target)
    if auth is not None and not http:
        raise ValueError("auth= applies to http(s):// targets; a stdio server takes credentials from env=")
    if (http_client is not None or verify is not None) and not http:
        raise ValueError("http_client= and verify= apply to http(s):// targets")
    if http_client is not None and verify is not None:
        raise ValueError("pass verify= or http_client=, not both: set verify on your http_client")
    if cwd is not None and (http or not isinstance(target, str | list | tuple)):
        raise ValueError("cwd= applies to a stdio server (a command or script path)")


def http_auth(auth: httpx.Auth | str | None) -> httpx.Auth | None:
    """What `auth=` stands for: "oauth" is the full flow with its defaults, any other string a bearer token."""
    import httpx  # here, not at the top: a client without auth (or over stdio) need not load it

    if auth is None or isinstance(auth, httpx.Auth):
        return auth
    if not isinstance(auth, str):
        raise TypeError(f"auth must be an httpx.Auth, a bearer token or 'oauth', not {type(auth).__name__}")
    if auth == "oauth":
        try:
            from .auth.flow import OAuth
        except ImportError as exc:
            raise ImportError(f"{exc}; auth='oauth' needs: pip install 'mcp-resolve[auth]'") from None
        return OAuth()
    from .auth.bearer import BearerToken

    return BearerToken(auth)


@asynccontextmanager
async def open_pipe(
    target: MCPServer | str | Sequence[str],
    *,
    headers: dict[str, str] | None,
    auth: httpx.Auth | None,
    verify: ssl.SSLContext | bool | str | None,
    http_client: httpx.AsyncClient | None,
    env: dict[str, str] | None,
    cwd: str | os.PathLike[str] | None,
) -> AsyncIterator[MessagePipe]:
    """The message pipe to `target`: in memory, over HTTP, or to a stdio child process."""
    from ..server import MCPServer

    if isinstance(target, MCPServer):
        from ..transports.memory import connect_in_memory

        async with connect_in_memory(target) as memory_pipe:
            yield memory_pipe
    elif isinstance(target, str) and is_http(target):
        from .http import open_http

        async with open_http(
            target, headers=headers, auth=auth, verify=verify, http_client=http_client
        ) as http_pipe:
            yield http_pipe
    else:
        directory = None if cwd is None else os.fspath(cwd)
        async with open_stdio(stdio_command(target), env=env, cwd=directory) as stdio_pipe:
            yield stdio_pipe


@asynccontextmanager
async def open_session(
    pipe: AbstractAsyncContextManager[MessagePipe],
    on_request: RequestHandler,
    on_notification: NotificationHandler,
) -> AsyncIterator[ClientSession]:
    """A running session over the pipe `pipe` opens, reading until the block ends."""
    async with pipe as opened:
        session = AuthorizingSession(opened, on_request, on_notification)
        async with anyio.create_task_group() as group:
            group.start_soon(session.run, group)
            try:
                yield session
            finally:
                group.cancel_scope.cancel()


class AuthorizingSession(ClientSession):
    """The session, raising an `AuthorizationError` (not a bare MCPError) when the OAuth flow gave up."""

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        try:
            return await super().request(method, params, timeout=timeout)
        except MCPError as exc:
            typed = AuthorizationError.from_data(exc.message, exc.data)
            if typed is None:
                raise
            raise typed from None
