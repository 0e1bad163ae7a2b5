"""The one Redis connection of a server's stores, and the rule every Redis store follows: fail closed.

Every Redis store of a server shares one `RedisConnection`: one client (and
its pool) per event loop, made on first use, so a server that never touches
Redis never imports redis-py, and one built before uvicorn forks its workers
opens nothing until each worker runs. Each call goes through `call`, which
turns any failure of the backend (refused, reset, timed out, read-only,
out of memory) into `StoreUnavailable`: a JSON-RPC -32603 naming the store,
never a silent "not claimed" or "no such session". A call may be retried
once on a fresh connection (a Redis restart leaves the pooled sockets dead),
and that is all: a request waits at most a couple of seconds for a backend
that is down, then fails, and the next request tries again, so the fleet
recovers by itself when Redis is back.

`PubSubHub` is the one subscriber connection per loop that the subscription
bus and the session fleet share: one reader task dispatching by channel,
reconnecting with backoff, and telling its users when it lost the
connection (messages published meanwhile are gone: pub/sub does not queue).

URLs are logged only through `redact`, which drops any password.
"""

from __future__ import annotations

import asyncio
import logging
import os
import urllib.parse
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import INTERNAL_ERROR, MCPError

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["PubSubHub", "RedisConnection", "StoreUnavailable", "redact"]

logger = logging.getLogger("mcp_resolve.stores")

T = TypeVar("T")


class StoreUnavailable(MCPError):
    """A shared store could not be reached: the request fails (-32603) rather than guess."""

    def __init__(self, what: str) -> None:
        super().__init__(
            INTERNAL_ERROR, f"{what} unavailable: the shared store did not answer; try again shortly"
        )
        self.what = what


def redact(url: str) -> str:
    """`url` without its password (and without a query, which may carry one), for logs and errors."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        if parts.username or parts.password:
            netloc = f"{parts.username or ''}:***@{netloc}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<unparsable redis url>"


# How long `aclose` waits for this loop's background work to stop before leaving it (and saying so).
STOP_S = 5.0
_RECANCEL_S = 0.1


async def stop_tasks(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait until they end, cancelling again any that lost its cancellation.

    A cancellation can be lost on the way: Python 3.11's `asyncio.wait_for`,
    which redis-py uses to write each command, returns the write's result
    instead of raising when a cancellation lands just as the write completes.
    A heartbeat that lost its cancellation so would beat on, and an `aclose`
    that awaited it once would never return; each further cancellation lands
    in the heartbeat's sleep. A task still running after `STOP_S` is left
    behind with a warning, so a shutdown never hangs on one.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_S
    pending = {task for task in tasks if not task.done()}
    while pending:
        remaining = deadline - loop.time()
        if remaining <= 0:
            logger.warning("%d Redis background task(s) did not stop within %.0f s", len(pending), STOP_S)
            break
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=min(_RECANCEL_S, remaining))
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a failure on the way out is not "never retrieved" noise


def _backend_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError, OSError, asyncio.TimeoutError)


class RedisConnection:
    """A Redis URL, a key prefix, and one client per event loop (per process), made lazily."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "mcp-resolve",
        connect_timeout: float = 1.0,
        timeout: float = 2.0,
    ) -> None:
        scheme = urllib.parse.urlsplit(url).scheme
        if scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"a Redis URL starts with redis://, rediss:// or unix://, not {redact(url)!r}")
        if not prefix or any(c in prefix for c in " \r\n{}"):
            raise ValueError("prefix must be a non-empty name without spaces or braces")
        self._url = url
        self.prefix = prefix
        self.safe_url = redact(url)
        self._connect_timeout = connect_timeout
        self.timeout = timeout
        self._clients: dict[int, tuple[Any, Redis, int]] = {}
        self._hubs: dict[int, PubSubHub] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        return f"RedisConnection({self.safe_url!r}, prefix={self.prefix!r})"

    def key(self, kind: str, name: str) -> str:
        """A key in this server's namespace; `name` must already be safe (a digest or our own token)."""
        return f"{self.prefix}:{kind}:{name}"

    def client(self) -> Redis:
        """This loop's client (made on first use, and again after a fork)."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is not None and entry[0] is loop and entry[2] == os.getpid():
            return entry[1]
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        client = redis.asyncio.Redis.from_url(
            self._url,
            socket_connect_timeout=self._connect_timeout,
            socket_timeout=self.timeout,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=30,
        )
        self._clients = {k: v for k, v in self._clients.items() if not v[0].is_closed()}
        self._clients[id(loop)] = (loop, client, os.getpid())
        return client

    async def call(self, what: str, operation: Callable[[Redis], Awaitable[T]]) -> T:
        """Run `operation` on this loop's client; any backend failure is `StoreUnavailable(what)`."""
        try:
            return await operation(self.client())
        except _backend_errors() as exc:
            logger.warning("%s: Redis at %s failed: %s", what, self.safe_url, type(exc).__name__)
            raise StoreUnavailable(what) from None

    def hub(self) -> PubSubHub:
        """This loop's subscriber (one reader for every channel of this server)."""
        loop = asyncio.get_running_loop()
        hub = self._hubs.get(id(loop))
        if hub is None or hub.loop is not loop or hub.pid != os.getpid():
            hub = PubSubHub(self, loop)
            self._hubs = {k: v for k, v in self._hubs.items() if not v.loop.is_closed()}
            self._hubs[id(loop)] = hub
        return hub

    def background(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `work` (a store's heartbeat) on this loop until it ends or `aclose` stops it.

        A store's loop that outlived `aclose` would open a fresh client on its
        next call, one nobody closes: its sockets would be left to the
        garbage collector (a ResourceWarning each) when the event loop ends.
        """
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def ping(self) -> None:
        """Raise `StoreUnavailable` unless Redis answers (the health route)."""
        await self.call("shared store", lambda r: r.ping())

    async def aclose(self) -> None:
        """Stop this loop's background work and subscriber, then close its client and pool.

        The server calls it when its lifespan ends (the last transport
        leaves), so the pooled sockets close with the loop that opened them.
        The connection stays usable: the next call on a loop opens a new client.
        """
        loop = asyncio.get_running_loop()
        await stop_tasks([task for task in self._tasks if task.get_loop() is loop])
        hub = self._hubs.pop(id(loop), None)
        if hub is not None:
            await hub.aclose()
        entry = self._clients.pop(id(loop), None)
        if entry is not None:
            try:
                await entry[1].aclose()
            except _backend_errors():
                pass


Handler = Callable[[bytes], None]


class PubSubHub:
    """One pub/sub connection for every channel this process listens on, kept up by one reader task.

    Handlers are plain functions called on the loop for each message; they
    must not raise (one that does is logged and skipped). `on_lost` callbacks
    run when the connection drops, so users can end what relied on it.
    """

    def __init__(self, connection: RedisConnection, loop: asyncio.AbstractEventLoop) -> None:
        self.connection = connection
        self.loop = loop
        self.pid = os.getpid()
        self._handlers: dict[str, list[Handler]] = {}
        self._on_lost: list[Callable[[], None]] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._dirty = False

    @property
    def connected(self) -> bool:
        return self._ready.is_set()

    def add(self, channel: str, handler: Handler) -> Callable[[], None]:
        """Listen on `channel` (subscribed by the reader within a second); returns the removal."""
        handlers = self._handlers.setdefault(channel, [])
        handlers.append(handler)
        self._dirty = True
        self.start()

        def remove() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return remove

    def on_lost(self, callback: Callable[[], None]) -> None:
        self._on_lost.append(callback)

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = self.loop.create_task(self._run())

    async def ready(self, timeout: float = 2.0) -> None:
        """Wait until subscribed; `StoreUnavailable` if Redis cannot be reached in `timeout`."""
        self.start()
        if self._ready.is_set() and not self._dirty:
            return
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except asyncio.TimeoutError:
            raise StoreUnavailable("subscription bus") from None

    async def _run(self) -> None:
        delay = 0.1
        errors = _backend_errors()
        while True:
            pubsub = self.connection.client().pubsub(ignore_subscribe_messages=True)
            try:
                subscribed: set[str] = set()
                while True:
                    if self._dirty or not subscribed:
                        self._dirty = False
                        wanted = set(self._handlers)
                        if wanted - subscribed:
                            await pubsub.subscribe(*(wanted - subscribed))
                            subscribed |= wanted
                        self._ready.set()
                        delay = 0.1
                    message = await pubsub.get_message(timeout=0.5)
                    if message is not None and message.get("type") == "message":
                        self._dispatch(message)
            except errors as exc:
                if self._ready.is_set():
                    logger.warning(
                        "lost the Redis subscriber at %s (%s); reconnecting",
                        self.connection.safe_url,
                        type(exc).__name__,
                    )
                self._lost()
            finally:
                try:
                    await pubsub.aclose()
                except errors:
                    pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _lost(self) -> None:
        was = self._ready.is_set()
        self._ready.clear()
        if was:
            for callback in list(self._on_lost):
                try:
                    callback()
                except Exception:  # a user's hook must not stop the reconnection
                    logger.exception("a lost-connection hook failed")

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message.get("channel")
        if isinstance(channel, bytes):
            channel = channel.decode("utf-8", "replace")
        data = message.get("data")
        if not isinstance(data, bytes):
            return
        for handler in list(self._handlers.get(channel, ())):  # type: ignore[arg-type]
            try:
                handler(data)
            except Exception:  # isolate handlers from each other
                logger.exception("a handler for Redis channel %r failed", channel)

    async def aclose(self) -> None:
        if self._task is not None:
            await stop_tasks([self._task])
        self._ready.clear()
