"""Concurrency helpers for the whole package: cancel scopes, and task sets whose results come as they finish.

A neutral home: the connection, the HTTP exchange and sessions, the client
and the resolver engine all use these, and none of them owns them.

Two shortcuts past anyio's portable API live here, and only here; each is
used only on asyncio, has its plain counterpart next to it (what trio runs,
and what the tests run too), and was kept because it pays (what each
measured: docs/performance.md):

* `asyncio_cancel_scope`: anyio's asyncio `CancelScope` class, instantiated
  directly, since `anyio.CancelScope()` looks the running backend up on every
  call, per request and per resolver task. If anyio ever stops letting its
  backend class be built that way, the probe in `asyncio_cancel_scope`
  notices and the plain `anyio.CancelScope` is used.
* `_AsyncioTaskSet`: concurrent resolvers as plain asyncio tasks and one
  future, instead of a task group, its scopes and a memory stream, which cost
  several times more for a few resolvers ready together. It uses only
  asyncio's public API and anyio's scopes; the plain counterpart is
  `_GroupTaskSet`, anyio's task group.

The contract of a task set is the task group's: every task started in it has
ended when the `async with` block is left. Leaving it by an exception (the call
was cancelled, or a task let a BaseException through) first cancels each running
task through its own anyio `CancelScope`, so shielded sections inside a
resolver stay shielded, then waits for them all.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

import anyio

__all__ = [
    "TICK",
    "TaskSet",
    "Ticker",
    "Wakeup",
    "asyncio_cancel_scope",
    "cancel_scope",
    "light_lock",
    "open_task_set",
    "ticker",
]

T = TypeVar("T")


class TaskSet(Protocol[T]):
    """Start tasks, then take their results one at a time as they finish."""

    running: int
    """Tasks started whose results have not been taken yet."""

    def start(self, scope: anyio.CancelScope, fn: Callable[..., Awaitable[T]], *args: Any) -> None:
        """Run `fn(*args)` as a task; `scope` (from `cancel_scope()`) is the one it runs under, entered by `fn`."""

    async def next_result(self) -> T:
        """The result of the next task to finish (its exception, if it raised one)."""

    async def __aenter__(self) -> TaskSet[T]: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...


@functools.cache
def asyncio_cancel_scope() -> type[anyio.CancelScope]:
    """anyio's CancelScope class for asyncio; call it only where an asyncio event loop runs.

    `anyio.CancelScope()` looks the running backend up on every call, which
    costs about half of what entering and leaving the scope costs: per
    request in the HTTP exchange, per resolver task in the engine. The class
    is probed once; should a future anyio refuse to build it directly, this
    returns `anyio.CancelScope` itself (correct, only slower).
    """
    backend_class = type(anyio.CancelScope())
    return backend_class if _builds_directly(backend_class) else anyio.CancelScope


def _builds_directly(backend_class: type[anyio.CancelScope]) -> bool:
    """Whether anyio's backend class still makes a working scope when called with no arguments."""
    try:
        return isinstance(backend_class(), anyio.CancelScope)
    except Exception:
        return False


def cancel_scope() -> anyio.CancelScope:
    """`anyio.CancelScope()` for whichever event loop runs, built without anyio's lookup on asyncio."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio)
        return anyio.CancelScope()
    return asyncio_cancel_scope()()


def light_lock() -> AbstractAsyncContextManager[Any]:
    """A lock for one long-lived stream's writes: asyncio's on asyncio, anyio's elsewhere (trio).

    asyncio's lock makes its queue of waiters only when a second writer waits;
    anyio's makes one up front (about 0.7 KiB), paid by every idle stream.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio)
        return anyio.Lock()
    return asyncio.Lock()


class Wakeup:
    """One waiter woken by `set`, whatever task calls it: an idle stream waiting for its next event.

    On asyncio it waits on a bare future made only while it waits (anyio's
    `Event` would hold a queue of waiters for the stream's whole life); on
    trio, on an `anyio.Event`. Only one task waits at a time.
    """

    __slots__ = ("_waiter",)

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | anyio.Event | None = None

    def wait(self) -> Awaitable[None]:
        """Until `set` is called (a `set` before this wait is not kept: check the condition first).

        On asyncio the future itself, not a coroutine awaiting it: an idle stream parks one frame fewer.
        The future stays referenced once done or cancelled; `set` ignores it then.
        """
        try:
            waiter = asyncio.get_running_loop().create_future()
        except RuntimeError:  # not asyncio (trio)
            event = self._waiter = anyio.Event()
            return event.wait()
        self._waiter = waiter
        return waiter

    def set(self) -> None:
        waiter = self._waiter
        if waiter is None:
            return
        if isinstance(waiter, asyncio.Future):
            if not waiter.done():
                waiter.set_result(None)
        else:
            waiter.set()


logger = logging.getLogger("mcp_resolve.concurrency")

TICK = 1.0
"""Seconds the keep-alive `Ticker` rounds its wake-ups up to: streams due within one tick share it."""


class Ticker:
    """One timer for the keep-alives of every idle stream on an asyncio loop.

    A stream asks to be called back at a time (`add`); the time is rounded up
    to the next `TICK`, and the streams due in the same tick are kept in one
    bucket, so thousands of idle streams cost the loop one timer (not one
    each, about 0.6 KiB apiece on uvloop) and one wake-up per tick in which
    some are due. A callback runs in the loop's own callback (it may start a
    task, never await) and is called once; `remove` takes it back.
    """

    __slots__ = ("_buckets", "_loop_ref", "_timer", "_timer_at")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weakly: the loop keys this ticker in `_TICKERS`, and a strong reference would keep it forever.
        self._loop_ref = weakref.ref(loop)
        self._buckets: dict[int, dict[Callable[[], object], None]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._buckets.values())

    def add(self, when: float, callback: Callable[[], object]) -> int | asyncio.TimerHandle:
        """Call `callback` at `when` (loop time), or up to one `TICK` later; returns its key for `remove`.

        A time less than `4 * TICK` away gets a timer of its own, on time (short
        keep-alive intervals, a ping due soon after a write).
        """
        loop = self._loop()
        if when - loop.time() < 4 * TICK:
            return loop.call_at(when, callback)
        key = math.ceil(when / TICK)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = {}
        bucket[callback] = None
        if self._timer is None or key < self._timer_at:
            self._arm(key)
        return key

    def remove(self, key: int | asyncio.TimerHandle, callback: Callable[[], object]) -> None:
        if not isinstance(key, int):  # a timer of its own (uvloop's handles are not asyncio.TimerHandle)
            key.cancel()
            return
        bucket = self._buckets.get(key)
        if bucket is not None:
            bucket.pop(callback, None)
            if not bucket:
                del self._buckets[key]
        if not self._buckets and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, key: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = key
        self._timer = self._loop().call_at(key * TICK, self._fire)

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop_ref()
        if loop is None:  # only a loop still running calls here
            raise RuntimeError("the event loop of this Ticker is gone")
        return loop

    def _fire(self) -> None:
        self._timer = None
        now = math.floor(self._loop().time() / TICK + 0.01)  # a timer may fire a hair early
        for key in sorted(k for k in self._buckets if k <= now):
            for callback in self._buckets.pop(key):
                try:
                    callback()
                except Exception as exc:  # one stream's failure must not end every other stream's keep-alive
                    logger.error("a keep-alive callback failed (%s)", type(exc).__name__)
        if self._buckets:  # the callbacks may have armed the timer for a later tick than the next one
            first = min(self._buckets)
            if self._timer is None or first < self._timer_at:
                self._arm(first)


_TICKERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Ticker] = weakref.WeakKeyDictionary()


def ticker(loop: asyncio.AbstractEventLoop) -> Ticker:
    """The keep-alive `Ticker` of `loop` (made on first use)."""
    found = _TICKERS.get(loop)
    if found is None:
        found = _TICKERS[loop] = Ticker(loop)
    return found


def open_task_set() -> TaskSet[Any]:
    """A task set for the running event loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio): anyio's task group
        return _GroupTaskSet()
    return _AsyncioTaskSet(loop)


class _AsyncioTaskSet(Generic[T]):
    __slots__ = ("_finished", "_loop", "_started", "_wake", "running")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._started: list[tuple[asyncio.Task[None], anyio.CancelScope]] = []
        self._finished: deque[tuple[bool, Any]] = deque()
        self._wake: asyncio.Future[None] | None = None
        self.running = 0

    def start(self, scope: anyio.CancelScope, fn: Callable[..., Awaitable[T]], *args: Any) -> None:
        self._started.append((self._loop.create_task(self._run(fn, args)), scope))
        self.running += 1

    async def _run(self, fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> None:
        # The outcome is handed over here, from the task itself, rather than by a done callback: a
        # callback runs a loop turn later, and a sibling that should be cancelled by a failure
        # reported here could run on meanwhile.
        try:
            outcome: tuple[bool, Any] = (True, await fn(*args))
        except BaseException as exc:  # raised again by next_result, in the caller
            outcome = (False, exc)
        self._finished.append(outcome)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def next_result(self) -> T:
        while not self._finished:
            self._wake = self._loop.create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        self.running -= 1
        ok, value = self._finished.popleft()
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    async def __aenter__(self) -> _AsyncioTaskSet[T]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        unfinished = [(task, scope) for task, scope in self._started if not task.done()]
        if unfinished:  # left early, by an exception: nothing may outlive the block
            for _task, scope in unfinished:
                scope.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait([task for task, _scope in unfinished])
        return None


class _GroupTaskSet(Generic[T]):
    def __init__(self) -> None:
        self._group = anyio.create_task_group()
        self._send, self._receive = anyio.create_memory_object_stream[T](math.inf)
        self.running = 0

    def start(self, scope: anyio.CancelScope, fn: Callable[..., Awaitable[T]], *args: Any) -> None:
        self.running += 1
        self._group.start_soon(self._relay, fn, args)

    async def _relay(self, fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> None:
        # An exception here fails the whole group, which is how it reaches the caller.
        self._send.send_nowait(await fn(*args))

    async def next_result(self) -> T:
        value = await self._receive.receive()
        self.running -= 1
        return value

    async def __aenter__(self) -> _GroupTaskSet[T]:
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        try:
            return await self._group.__aexit__(exc_type, exc, tb)
        finally:
            self._send.close()
            self._receive.close()
