"""The Client a toolset builds: ours, plus the connection options pydantic-ai's `MCPToolset` takes.

`Client` covers the target, the era, the handlers, headers and `auth=`.
pydantic-ai's toolset also takes `verify=`, `http_client=`, a stdio `cwd`
(from a config file), `init_timeout=`, `read_timeout=`, and hears every
notification (to drop its caches). `Client` has no public hook for those
yet, so this subclass adds them at its extension points: the pipe it opens,
the negotiation, each request, each notification, and a way to withdraw a
request (to end a `subscriptions/listen` stream).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx

from ..client import Client
from ..client.http import HttpPipe
from ..client.pipes import MessagePipe, open_stdio, stdio_command

__all__ = ["ToolsetClient"]

NotificationHook = Callable[[str, dict[str, Any]], Awaitable[None]]
_HTTP_TIMEOUT = 30.0
UNTIMED_METHODS = frozenset({"subscriptions/listen"})
"""Requests that last as long as the connection: `read_timeout` does not apply to them."""


class ToolsetClient(Client):
    """A `Client` with a stdio working directory, TLS and HTTP-client choices, timeouts and a notification hook.

    `init_timeout` bounds the era negotiation (`server/discover` or
    `initialize`), except while a person logs in through `auth="oauth"`;
    `read_timeout` bounds each request's wait for its answer (on the
    handshake era that includes a person answering a question asked mid-call;
    on 2026-07-28 each round is a request of its own, so it does not).
    """

    def __init__(
        self,
        target: Any,
        *,
        cwd: str | None = None,
        verify: ssl.SSLContext | bool | str | None = None,
        http_client: httpx.AsyncClient | None = None,
        init_timeout: float | None = None,
        read_timeout: float | None = None,
        **options: Any,
    ) -> None:
        super().__init__(target, **options)
        self.cwd = cwd
        self.verify = verify
        self.http_client = http_client
        self.init_timeout = init_timeout
        self.read_timeout = read_timeout
        self.on_notification: NotificationHook | None = None
        """Called with every notification after the log and progress handlers (the toolset's caches)."""

    @property
    def is_http(self) -> bool:
        """Whether the server is reached over Streamable HTTP (else stdio or in memory)."""
        return isinstance(self.target, str) and self.target.startswith(("http://", "https://"))

    @asynccontextmanager
    async def _open_pipe(self) -> AsyncIterator[MessagePipe]:
        if self.is_http and (self.verify is not None or self.http_client is not None):
            async with self._open_http() as http_pipe:
                yield http_pipe
        elif self.cwd is not None and not self.is_http and isinstance(self.target, str | list | tuple):
            async with open_stdio(stdio_command(self.target), env=self.env, cwd=self.cwd) as stdio_pipe:
                yield stdio_pipe
        else:
            async with super()._open_pipe() as pipe:
                yield pipe

    @asynccontextmanager
    async def _open_http(self) -> AsyncIterator[HttpPipe]:
        """Streamable HTTP through the caller's `http_client` (never closed here) or one built with `verify`."""
        assert isinstance(self.target, str)
        async with AsyncExitStack() as stack:
            http: Any
            if self.http_client is not None:
                http = _Borrowed(self.http_client, self.auth)
            else:
                timeout = httpx.Timeout(_HTTP_TIMEOUT, read=None)
                http = await stack.enter_async_context(
                    httpx.AsyncClient(timeout=timeout, verify=_tls(self.verify), auth=self.auth)
                )
            group = await stack.enter_async_context(anyio.create_task_group())
            pipe = HttpPipe(self.target, http, group, self.headers)
            try:
                yield pipe
            finally:
                await pipe.aclose()
                group.cancel_scope.cancel()
                pipe._inbox.close()  # as `open_http` does: an unclosed reading end warns when collected

    async def _negotiate(self) -> None:
        person_time = getattr(self.auth, "time_with_person", None)
        if self.init_timeout is None or person_time is not None:
            await super()._negotiate()  # a login's minutes with a person are not a slow server
            return
        with anyio.fail_after(self.init_timeout):
            await super()._negotiate()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.read_timeout is None or method in UNTIMED_METHODS:
            return await super().request(method, params)
        with anyio.fail_after(self.read_timeout):
            return await super().request(method, params)

    async def cancel_request(self, request_id: Any, reason: str) -> None:
        """Tell the server we no longer want the answer to `request_id` (`notifications/cancelled`)."""
        await self._require_session().notify(
            "notifications/cancelled", {"requestId": request_id, "reason": reason}
        )

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        await super()._notified(method, params)
        if self.on_notification is not None:
            await self.on_notification(method, params)


def _tls(verify: ssl.SSLContext | bool | str | None) -> ssl.SSLContext | bool:
    """`verify` as httpx takes it: a CA bundle path becomes a context trusting that bundle."""
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return True if verify is None else verify


class _Borrowed:
    """The caller's `httpx.AsyncClient`, signing each request with `auth=` (it is theirs: we never close it)."""

    def __init__(self, http: httpx.AsyncClient, auth: httpx.Auth | None) -> None:
        self._http = http
        self._auth: dict[str, Any] = {} if auth is None else {"auth": auth}

    async def post(self, url: str, **options: Any) -> httpx.Response:
        return await self._http.post(url, **options, **self._auth)

    async def delete(self, url: str, **options: Any) -> httpx.Response:
        return await self._http.delete(url, **options, **self._auth)

    def stream(self, method: str, url: str, **options: Any) -> Any:
        return self._http.stream(method, url, **options, **self._auth)
