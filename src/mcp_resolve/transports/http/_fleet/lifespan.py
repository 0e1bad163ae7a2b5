"""Running the server's lifespan exactly once per HTTP app, and refusing deployments that cannot work.

An app served on its own gets its lifespan from the ASGI server. An app
mounted in a parent Starlette/FastAPI app does not (parents ignore a mounted
app's lifespan), so the first request enters it instead, in a task of its own
that lives as long as the event loop: asyncio cancels it at shutdown, which
runs the server's lifespan exit. A parent that wants the exit tied to its own
shutdown passes `lifespan=mcp_app.router.lifespan_context`.

An ASGI server runs the lifespan's exit only after its open connections have
closed, or after its graceful timeout: too late for streams that end only when
asked (a `subscriptions/listen` stream, a handshake-era GET stream). While the
lifespan runs, the app is therefore also listed for `server_stopping()`, which
the ASGI server calls (from its event loop) when a graceful shutdown begins:
uvicorn with our protocol does (_fleet.limits), and so can any other server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from .workers import serving_processes

if TYPE_CHECKING:
    from ..._serves import ServedServer

__all__ = ["AppLifespan", "server_stopping"]

logger = logging.getLogger("mcp_resolve.http")

_STOPPING: list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = []
"""The apps whose lifespan runs, with their event loop: what `server_stopping` tells."""


def server_stopping() -> None:
    """The ASGI server on this event loop begins a graceful shutdown: its apps end their long-lived streams now."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for owner, stop in list(_STOPPING):
        if owner is loop:
            stop()


class AppLifespan:
    """`server.running()` for one app, entered by the ASGI lifespan or lazily by the first request."""

    def __init__(
        self,
        server: ServedServer,
        on_exit: Callable[[], None],
        background: Callable[[], Coroutine[Any, Any, None]] | None = None,
        on_stopping: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.on_exit = on_exit
        self.on_stopping = on_stopping
        """Called once the ASGI server begins to shut down (`server_stopping`), before `on_exit`."""
        self.background = background
        """Runs while the lifespan does (the session sweeper), cancelled at exit."""
        self.running = False
        self._starting: anyio.Lock | None = None
        self._background: asyncio.Task[None] | None = None

    @asynccontextmanager
    async def __call__(self, _app: Any = None) -> AsyncIterator[None]:
        # Workers of `uvicorn --workers N`, gunicorn or hypercorn are found here, in each worker.
        # Counting siblings costs a walk of /proc: only when the answer could refuse the fleet.
        deployment = self.server.deployment
        ephemeral = deployment.request_state_security.is_ephemeral
        counted = ephemeral or deployment.process_local_stores() or deployment.session_store is None
        deployment.check(serving_processes() if counted else 1)
        async with self.server.running(), anyio.create_task_group() as group:
            if self.background is not None:
                group.start_soon(self.background)
            self.running = True
            listed = self._list_for_stopping()
            try:
                yield
            finally:
                if listed is not None:
                    _STOPPING.remove(listed)
                self.running = False
                self.on_exit()
                group.cancel_scope.cancel()

    def _list_for_stopping(self) -> tuple[asyncio.AbstractEventLoop, Callable[[], None]] | None:
        if self.on_stopping is None:
            return None
        try:
            entry = (asyncio.get_running_loop(), self.on_stopping)
        except RuntimeError:  # not asyncio (trio): no server of ours runs it
            return None
        _STOPPING.append(entry)
        return entry

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
