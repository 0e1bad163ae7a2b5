"""The two task sets the resolver engine runs concurrent resolvers on: plain asyncio tasks, anyio's task group."""

import asyncio
import math
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from mcp_resolve._concurrency import _AsyncioTaskSet, _GroupTaskSet, asyncio_cancel_scope, cancel_scope

pytestmark = pytest.mark.anyio

DEADLINE = 10  # seconds; only reached when a task set is broken
TASK_SETS = [lambda: _AsyncioTaskSet(asyncio.get_running_loop()), _GroupTaskSet]


async def shielded(scope: anyio.CancelScope, entered: anyio.Event, ended: list[str]) -> str:
    """Runs under `scope`; a shielded section inside it must finish even once `scope` is cancelled."""
    with scope:
        with anyio.CancelScope(shield=True):
            entered.set()
            await anyio.sleep(0.05)
            ended.append("shielded section done")
        await anyio.sleep_forever()
    return "cancelled after its shield"


@pytest.mark.parametrize("make", TASK_SETS, ids=["asyncio tasks", "anyio task group"])
async def test_a_cancelled_task_set_cancels_its_tasks_but_not_their_shielded_sections(make: Any) -> None:
    ended: list[str] = []
    shielded_entered = anyio.Event()

    async def plain(scope: anyio.CancelScope) -> str:
        with scope:
            try:
                await anyio.sleep_forever()
            finally:
                ended.append("plain")
        return "plain, cancelled"

    with anyio.fail_after(DEADLINE):
        with anyio.CancelScope() as outer:
            async with make() as tasks:
                scope = cancel_scope()
                tasks.start(scope, plain, scope)
                inner = cancel_scope()
                tasks.start(inner, shielded, inner, shielded_entered, ended)
                await shielded_entered.wait()
                outer.cancel()
                await tasks.next_result()
    assert sorted(ended) == ["plain", "shielded section done"]


@pytest.mark.parametrize("make", TASK_SETS, ids=["asyncio tasks", "anyio task group"])
async def test_a_task_set_hands_results_over_in_the_order_they_finish(make: Any) -> None:
    release = anyio.Event()

    async def slow() -> str:
        await release.wait()
        return "slow"

    async def fast() -> str:
        release.set()
        return "fast"

    with anyio.fail_after(DEADLINE):
        async with make() as tasks:
            tasks.start(cancel_scope(), slow)
            tasks.start(cancel_scope(), fast)
            assert tasks.running == 2
            assert [await tasks.next_result(), await tasks.next_result()] == ["fast", "slow"]
            assert tasks.running == 0


@pytest.mark.parametrize("make", TASK_SETS, ids=["asyncio tasks", "anyio task group"])
async def test_a_task_set_scope_cancels_only_its_own_task(make: Any) -> None:
    """What the engine relies on when a failure cancels the resolvers after it, and only those."""
    with anyio.fail_after(DEADLINE):
        async with make() as tasks:

            async def waiting(scope: anyio.CancelScope, name: str) -> str:
                with scope:
                    await anyio.sleep(0.2)
                    return f"{name} finished"
                return f"{name} cancelled"

            first, second = cancel_scope(), cancel_scope()
            tasks.start(first, waiting, first, "first")
            tasks.start(second, waiting, second, "second")
            second.cancel()
            assert [await tasks.next_result(), await tasks.next_result()] == [
                "second cancelled",
                "first finished",
            ]


async def test_cancel_scope_is_anyio_s_own_and_keeps_shields() -> None:
    """The connection, the HTTP sessions and the client make their per-request scopes with it."""
    ended: list[str] = []
    entered = anyio.Event()
    scope = cancel_scope()
    assert type(scope) is type(anyio.CancelScope())
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(shielded, scope, entered, ended)
            await entered.wait()
            scope.cancel()
    assert scope.cancelled_caught and ended == ["shielded section done"]


async def test_on_asyncio_cancel_scope_skips_anyio_s_backend_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the helper: `anyio.CancelScope()` (its lookup) is not called once the class is known."""
    asyncio_cancel_scope()

    def looked_up(**_options: Any) -> anyio.CancelScope:
        raise AssertionError("anyio.CancelScope() was called")

    monkeypatch.setattr(anyio, "CancelScope", looked_up)
    with cancel_scope() as scope:
        scope.cancel()
        await anyio.lowlevel.checkpoint()
    assert scope.cancelled_caught


# -- the keep-alive ticker and the idle stream's primitives (transports/http streams use them) ----------
class _SetClock:
    """A loop whose time the test sets: a `Ticker` reads `time()` and schedules with `call_at`.

    The clock starts `into_tick` of a tick past a tick boundary, so which wake-up times share a tick
    does not depend on where the real clock happens to be.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, into_tick: float) -> None:
        from mcp_resolve._concurrency import TICK

        self.loop = loop
        self.now = math.floor(loop.time() / TICK + 100) * TICK + TICK * into_tick
        self.scheduled: list[tuple[float, asyncio.TimerHandle, Any]] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Any) -> asyncio.TimerHandle:
        handle = asyncio.TimerHandle(when, callback, (), self.loop)
        self.scheduled.append((when, handle, callback))
        return handle

    def armed(self) -> list[tuple[float, asyncio.TimerHandle, Any]]:
        return [entry for entry in self.scheduled if not entry[1].cancelled()]

    def fire_next(self) -> float:
        """Move the clock to the one armed timer and fire it; returns when it was due."""
        when, _, fire = self.armed()[0]
        self.scheduled.clear()
        self.now = when
        fire()
        return when


async def test_the_ticker_wakes_streams_due_in_the_same_tick_with_one_timer() -> None:
    from mcp_resolve._concurrency import TICK, Ticker

    # A tenth into a tick: the hundred times below (15.000 to 15.099 s away) share one tick.
    clock = _SetClock(asyncio.get_running_loop(), into_tick=0.1)  # held here: a ticker keeps its loop weakly
    ticker = Ticker(clock)  # type: ignore[arg-type]
    start = clock.now
    called: list[int] = []
    callbacks = [lambda i=i: called.append(i) for i in range(100)]
    keys = [ticker.add(start + 15 + i / 1000, callback) for i, callback in enumerate(callbacks)]
    assert len(ticker) == 100
    assert len(clock.armed()) == 1  # one timer for them all
    ticker.remove(keys[0], callbacks[0])
    assert len(ticker) == 99
    when = clock.fire_next()
    assert start + 15 <= when <= start + 15 + TICK  # on time, up to one tick late
    assert sorted(called) == list(range(1, 100)) and len(ticker) == 0
    assert not clock.armed()
    # Due soon: a timer of its own, on time (short keep-alive intervals, a ping due just after a write).
    soon = ticker.add(clock.now + TICK, lambda: called.append(-1))
    assert isinstance(soon, asyncio.TimerHandle) and soon.when() == clock.now + TICK
    ticker.remove(soon, lambda: None)
    assert soon.cancelled()


async def test_the_ticker_wakes_streams_due_in_two_ticks_once_per_tick_in_order() -> None:
    from mcp_resolve._concurrency import TICK, Ticker

    clock = _SetClock(asyncio.get_running_loop(), into_tick=0.55)
    ticker = Ticker(clock)  # type: ignore[arg-type]
    called: list[int] = []
    # 15.55 to 16.45 s past a boundary: five fall due in one tick, five in the next.
    for i in range(10):
        ticker.add(clock.now + 15 + i * TICK / 10, lambda i=i: called.append(i))
    clock.fire_next()
    assert called == [0, 1, 2, 3, 4] and len(ticker) == 5  # the first tick's, and a timer armed for the rest
    assert len(clock.armed()) == 1
    clock.fire_next()
    assert called == list(range(10)) and len(ticker) == 0
    assert not clock.armed()  # nothing left to wake the loop


async def test_a_wakeup_wakes_its_one_waiter_and_forgets_a_set_before_the_wait() -> None:
    from mcp_resolve._concurrency import Wakeup

    wakeup = Wakeup()
    wakeup.set()  # nobody waits: nothing is kept
    woken: list[str] = []

    async def wait() -> None:
        await wakeup.wait()
        woken.append("woken")

    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        await anyio.sleep(0.01)
        assert woken == []
        wakeup.set()
        with anyio.fail_after(DEADLINE):
            while not woken:
                await anyio.sleep(0.001)


def test_a_removed_timer_of_its_own_never_fires_on_uvloop_either() -> None:
    """A keep-alive due within 4 ticks gets a loop timer of its own; uvloop's handles are not
    asyncio.TimerHandle, and `remove` must still cancel them (else a stopped stream pings forever)."""
    import uvloop

    from mcp_resolve._concurrency import ticker

    for loop in (asyncio.new_event_loop(), uvloop.new_event_loop()):
        fired: list[str] = []
        try:
            keys = ticker(loop)
            key = keys.add(loop.time() + 0.05, partial(fired.append, "removed"))
            keys.add(loop.time() + 0.05, partial(fired.append, "kept"))
            keys.remove(key, lambda: None)
            loop.run_until_complete(asyncio.sleep(0.2))
        finally:
            loop.close()
        assert fired == ["kept"], type(loop)


def test_a_ticker_does_not_keep_its_event_loop_alive() -> None:
    import gc
    import weakref

    from mcp_resolve._concurrency import ticker

    loop = asyncio.new_event_loop()
    ticker(loop)
    gone = weakref.ref(loop)
    loop.close()
    del loop
    gc.collect()
    assert gone() is None
