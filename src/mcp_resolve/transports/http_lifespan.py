"""Running the server's lifespan exactly once per HTTP app, and refusing deployments that cannot work.

An app served on its own gets its lifespan from the ASGI server. An app
mounted in a parent Starlette/FastAPI app does not (parents ignore a mounted
app's lifespan), so the first request enters it instead, in a task of its own
that lives as long as the event loop: asyncio cancels it at shutdown, which
runs the server's lifespan exit. A parent that wants the exit tied to its own
shutdown passes `lifespan=mcp_app.router.lifespan_context`.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ..sealing import ENV_KEYS
from .http_workers import serving_processes

if TYPE_CHECKING:
    from ..server import MCPServer

__all__ = ["AppLifespan", "check_state_keys"]

logger = logging.getLogger("mcp_resolve.http")

_warned_ephemeral: weakref.WeakSet[Any] = weakref.WeakSet()


def check_state_keys(server: MCPServer, workers: int) -> None:
    """Refuse a multi-worker fleet without shared requestState keys; warn once for a lone worker.

    With per-process keys every worker rejects state another worker sealed, so
    most input-required retries would fail at random: better not to start.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if not server.request_state_security.is_ephemeral:
        return
    if workers > 1:
        raise RuntimeError(
            f"refusing to start {workers} workers with a per-process requestState key: each worker would "
            f"reject the state the others sealed. Share keys by setting {ENV_KEYS} (comma-separated secrets "
            'of at least 32 bytes; generate one with: python -c "import secrets; print(secrets.token_urlsafe(48))") '
            "or pass MCPServer(..., request_state_security=RequestStateSecurity(keys=[...]))."
        )
    if server not in _warned_ephemeral:
        _warned_ephemeral.add(server)
        logger.warning(
            "requestState is sealed with a per-process ephemeral key: input-required retries that arrive "
            "after a restart will be rejected; set %s to keep them valid across restarts",
            ENV_KEYS,
        )


class AppLifespan:
    """`server.running()` for one app, entered by the ASGI lifespan or lazily by the first request."""

    def __init__(
        self,
        server: MCPServer,
        on_exit: Callable[[], None],
        background: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self.server = server
        self.on_exit = on_exit
        self.background = background
        """Runs while the lifespan does (the session sweeper), cancelled at exit."""
        self.running = False
        self._starting: anyio.Lock | None = None
        self._background: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def __call__(self, _app: Any = None) -> AsyncIterator[None]:
        # Workers of `uvicorn --workers N`, gunicorn or hypercorn are found here, in each worker.
        ephemeral = self.server.request_state_security.is_ephemeral
        check_state_keys(self.server, serving_processes() if ephemeral else 1)
        async with self.server.running(), anyio.create_task_group() as group:
            if self.background is not None:
                group.start_soon(self.background)
            self.running = True
            try:
                yield
            finally:
                self.running = False
                self.on_exit()
                group.cancel_scope.cancel()

    async def ensure(self) -> None:
        """Enter the lifespan now unless it runs already (the app is mounted in a parent)."""
        if self.running:
            return
        self._starting = self._starting or anyio.Lock()
        async with self._starting:
            if self.running:
                return
            ready, failure = anyio.Event(), []

            async def hold() -> None:
                try:
                    async with self():
                        ready.set()
                        await anyio.sleep_forever()
                except BaseException as exc:
                    failure.append(exc)
                    ready.set()
                    raise

            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError(
                    "the MCP app is mounted without its lifespan on a non-asyncio loop: pass "
                    "lifespan=mcp_app.router.lifespan_context to the parent app"
                ) from None
            self._background = loop.create_task(hold())
            await ready.wait()
            if failure:
                raise RuntimeError("the MCP server's lifespan failed to start") from failure[0]
