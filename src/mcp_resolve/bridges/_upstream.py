"""The upstream side of a proxy: lanes (one upstream session each), leased per caller, and relays.

A lane is one `Client` connected to the proxied server, living in a task of
its own (an anyio context must be left by the task that entered it) and
serving one forwarded request at a time. One forwarded request in flight is a
`Relay`: it carries what the upstream says back (questions, the result) to
whichever downstream request now serves it. That may be the request that
started it, or, on 2026-07-28, a later round of it: the relay then waits,
parked, with its lane still leased, until the caller comes back with the
answers or the relay's deadline passes.

Bounds: each caller holds at most `lanes_per_caller` lanes, the proxy at most
`max_lanes` (idle ones are closed to make room, and after `idle_timeout`);
every relay has one deadline for the whole request, questions included; the
notifications forwarded per relay are capped and its event buffer is bounded.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp_types import LoggingMessageNotificationParams, ProgressNotificationParams

from ..client import Client
from ..context import Context
from ..errors import INTERNAL_ERROR, INVALID_REQUEST, MCPError

__all__ = ["Done", "Lane", "LanePool", "ProxyLimits", "Question", "Relay", "UpstreamError"]

logger = logging.getLogger("mcp_resolve.bridges.proxy")

RELAYED = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
"""What a proxied server may ask its client, which the proxy asks its own caller."""


class UpstreamError(Exception):
    """The proxied server failed a request: it crashed, never answered, or could not be reached."""


@dataclass(frozen=True)
class ProxyLimits:
    """How long and how much a proxy gives its target and each caller."""

    timeout: float = 120.0
    """Seconds one forwarded request may take in all, the caller's answers to relayed questions included."""
    connect_timeout: float = 30.0
    """Seconds opening an upstream session may take (starting a stdio target, the era negotiation)."""
    lanes_per_caller: int = 4
    """Upstream sessions one caller may hold at once (concurrent calls, parked relays)."""
    max_lanes: int = 64
    """Upstream sessions the proxy holds in all."""
    idle_timeout: float = 300.0
    """Seconds an unused upstream session is kept."""
    max_notifications: int = 1000
    """Log and progress notifications forwarded per request; the rest are dropped."""
    max_subscriptions: int = 100
    """Resource URIs one caller may subscribe to through the proxy at once; past it `resources/subscribe`
    is refused (each caller's subscriptions hold one upstream session, counted in `max_lanes`)."""

    def __post_init__(self) -> None:
        for name in ("timeout", "connect_timeout", "idle_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"ProxyLimits.{name} must be positive")
        for name in ("lanes_per_caller", "max_lanes", "max_notifications", "max_subscriptions"):
            if getattr(self, name) < 1:
                raise ValueError(f"ProxyLimits.{name} must be at least 1")


@dataclass
class Question:
    method: str
    params: dict[str, Any]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None
    error: MCPError | None = None

    def settle(self, answer: dict[str, Any] | None = None, error: MCPError | None = None) -> None:
        if not self.answered.is_set():
            self.answer, self.error = answer, error
            self.answered.set()


@dataclass
class Done:
    result: dict[str, Any] | None = None
    error: BaseException | None = None


Event = Question | Done


class Relay:
    """One forwarded request in flight: the upstream's questions and result, for the downstream to take."""

    def __init__(self, caller: str, principal: str | None, deadline: float, limits: ProxyLimits) -> None:
        self.id = secrets.token_urlsafe(16)
        self.caller = caller
        self.principal = principal
        self.deadline = deadline
        self.limits = limits
        self.context: Context | None = None
        """The downstream request serving this relay now (None while parked)."""
        self.open: dict[str, Question] = {}
        """Questions put to the caller in an input-required round, by their key there."""
        self._asked = 0
        self._notified = 0
        send, receive = anyio.create_memory_object_stream[Event](64)
        self._send: MemoryObjectSendStream[Event] = send
        self.events: MemoryObjectReceiveStream[Event] = receive
        self.scope = anyio.CancelScope()
        self.finished = False
        self.rounds = True
        """Whether the upstream's input-required rounds run here (False: they go to the caller as they are)."""

    def remaining(self) -> float:
        return max(0.0, self.deadline - anyio.current_time())

    def question_key(self) -> str:
        self._asked += 1
        return f"upstream-{self._asked}"

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The upstream asks (mid-call, or in its own round): wait for the caller's answer, within the deadline."""
        question = Question(method, params)
        self._post(question)
        with anyio.move_on_after(self.remaining()):
            await question.answered.wait()
        if not question.answered.is_set():
            question.settle(error=MCPError(INTERNAL_ERROR, "the caller did not answer in time"))
        if question.error is not None:
            raise question.error
        assert question.answer is not None
        return question.answer

    def finish(self, result: dict[str, Any] | None = None, error: BaseException | None = None) -> None:
        self.finished = True
        self._post(Done(result, error))
        for question in self.open.values():
            question.settle(error=MCPError(INTERNAL_ERROR, "the call ended"))

    def _post(self, event: Event) -> None:
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:  # the upstream asks faster than anyone answers: end it
            if isinstance(event, Question):
                event.settle(error=MCPError(INTERNAL_ERROR, "too many questions at once"))
            self.scope.cancel()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def notify(self, forward: Callable[[Context], Awaitable[None]]) -> None:
        """Forward one log or progress notification to the caller, up to the cap."""
        context = self.context
        if context is None:
            return
        self._notified += 1
        if self._notified > self.limits.max_notifications:
            if self._notified == self.limits.max_notifications + 1:
                logger.warning(
                    "a proxied request sent over %d notifications; dropping the rest",
                    self.limits.max_notifications,
                )
            return
        try:
            await forward(context)
        except Exception:  # the caller's channel is gone: the call goes on
            logger.debug("could not forward a notification", exc_info=True)


class _UpstreamClient(Client):
    """Our Client, with the upstream's questions and notifications routed to the lane's relay."""

    lane: Lane

    async def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method in RELAYED:
            relay = self.lane.relay
            if relay is None:
                raise MCPError(INVALID_REQUEST, f"{method} outside any call: the proxy has no one to ask")
            return await relay.ask(method, params)
        return await super()._answer(method, params)

    async def forward(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """`method` upstream, through the upstream's own input-required rounds if it speaks 2026-07-28."""
        return await self._interactive(method, params)


async def _no_answer(*_: Any) -> Any:  # declares the capability; _answer relays instead
    raise MCPError(INTERNAL_ERROR, "unreachable")


class Lane:
    """One upstream session, serving one relay at a time."""

    def __init__(self, pool: LanePool, caller: str) -> None:
        self.pool = pool
        self.caller = caller
        self.client: _UpstreamClient | None = None
        self.relay: Relay | None = None
        self.busy = True
        self.dead = False
        self.last_used = anyio.current_time()
        send, receive = anyio.create_memory_object_stream[tuple[Relay, str, dict[str, Any]]](1)
        self._jobs_send, self._jobs = send, receive

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            async with self.pool.make_client(self) as client:
                self.client = client
                if self.pool.on_connect is not None:
                    await self.pool.on_connect(client)
                started = True
                task_status.started()
                async for relay, method, params in self._jobs:
                    await self._serve(client, relay, method, params)
        except Exception as exc:
            if not started:
                raise
            logger.warning("an upstream session ended: %s", type(exc).__name__)
        finally:
            self.dead = True
            if self.relay is not None and not self.relay.finished:
                self.relay.finish(error=UpstreamError("the proxied server's session ended"))
            self.pool.forget(self)

    def start(self, relay: Relay, method: str, params: dict[str, Any]) -> None:
        self.relay = relay
        self._jobs_send.send_nowait((relay, method, params))

    async def _serve(
        self, client: _UpstreamClient, relay: Relay, method: str, params: dict[str, Any]
    ) -> None:
        result: dict[str, Any] | None = None
        error: BaseException | None = None
        try:
            with relay.scope:
                with anyio.fail_after(relay.remaining()):
                    if relay.rounds:
                        result = await client.forward(method, params)
                    else:  # the caller answers the target's own rounds: its result, as it is
                        result = await client.request(method, params)
        except TimeoutError:
            error = UpstreamError(f"the proxied server did not answer within {relay.limits.timeout:g}s")
            self.close()  # a target that never answers keeps nothing of ours
        except MCPError as exc:
            error = exc
        except Exception as exc:
            error = UpstreamError(f"the proxied server failed ({type(exc).__name__})")
            self.close()
        if relay.scope.cancel_called and result is None and error is None:
            error = UpstreamError("the proxied request was cancelled")
        self.relay = None
        relay.finish(result, error)
        self.last_used = anyio.current_time()
        self.busy = False
        self.pool.released(relay)

    def close(self) -> None:
        """End this session: its request (if any) is cancelled, and the client closes uncancelled, so a
        stdio target is stopped and waited for."""
        self.dead = True
        self._jobs_send.close()
        if self.relay is not None:
            self.relay.scope.cancel()


class LanePool:
    """The lanes of one proxy, by caller."""

    def __init__(
        self,
        task_group: TaskGroup,
        limits: ProxyLimits,
        make_client: Callable[[Lane], Any],
    ) -> None:
        self._tg = task_group
        self.limits = limits
        self.make_client = make_client
        self._lanes: dict[str, list[Lane]] = {}
        self._parked: dict[str, Relay] = {}
        self._freed = anyio.Event()
        self.on_connect: Callable[[Client], Awaitable[None]] | None = None
        """Awaited once each new upstream session is open, before it serves (the proxy's preparation)."""

    def lanes(self) -> Sequence[Lane]:
        return [lane for lanes in self._lanes.values() for lane in lanes]

    async def lease(self, caller: str, deadline: float) -> Lane:
        """An idle lane of `caller`'s, a new one, or the first freed within the deadline."""
        while True:
            self._reap()
            mine = self._lanes.setdefault(caller, [])
            for lane in mine:
                if not lane.busy and not lane.dead:
                    lane.busy = True
                    return lane
            if len(mine) < self.limits.lanes_per_caller and self._room():
                return await self._open(caller, deadline)
            freed = self._freed
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                await freed.wait()
                continue
            raise UpstreamError("too many requests to the proxied server at once; try again shortly")

    def _room(self) -> bool:
        lanes = self.lanes()
        if len(lanes) < self.limits.max_lanes:
            return True
        idle = [lane for lane in lanes if not lane.busy and not lane.dead]
        if not idle:
            return False
        min(idle, key=lambda lane: lane.last_used).close()
        return True

    async def _open(self, caller: str, deadline: float) -> Lane:
        lane = Lane(self, caller)
        self._lanes[caller].append(lane)
        timeout = min(self.limits.connect_timeout, max(0.0, deadline - anyio.current_time()))
        try:
            with anyio.fail_after(timeout):
                await self._tg.start(lane.run)
        except TimeoutError:
            lane.close()
            self.forget(lane)
            raise UpstreamError(f"the proxied server did not start within {timeout:g}s") from None
        except Exception as exc:
            self.forget(lane)
            logger.warning(
                "could not reach the proxied server: %s", type(exc).__name__
            )  # its text may hold a URL
            raise UpstreamError(f"cannot reach the proxied server ({type(exc).__name__})") from None
        return lane

    def _reap(self) -> None:
        now = anyio.current_time()
        for lane in self.lanes():
            if not lane.busy and not lane.dead and now - lane.last_used > self.limits.idle_timeout:
                lane.close()

    def forget(self, lane: Lane) -> None:
        lanes = self._lanes.get(lane.caller)
        if lanes is not None and lane in lanes:
            lanes.remove(lane)
            if not lanes:
                del self._lanes[lane.caller]
        self._wake()

    def released(self, relay: Relay) -> None:
        self._parked.pop(relay.id, None)
        self._wake()

    def _wake(self) -> None:
        self._freed.set()
        self._freed = anyio.Event()

    # -- parked relays (2026-07-28 callers, between rounds) ---------------------------------------
    def park(self, relay: Relay) -> None:
        relay.context = None
        if not relay.finished:
            self._parked[relay.id] = relay

    def unpark(self, relay_id: str, principal: str | None) -> Relay | None:
        relay = self._parked.get(relay_id)
        if relay is None or relay.principal != principal:
            return None
        del self._parked[relay_id]
        return relay

    def close_all(self) -> None:
        for lane in self.lanes():
            lane.close()


def progress_forwarder(params: ProgressNotificationParams) -> Callable[[Context], Awaitable[None]]:
    async def forward(context: Context) -> None:
        await context.report_progress(params.progress, params.total, params.message)

    return forward


def log_forwarder(params: LoggingMessageNotificationParams) -> Callable[[Context], Awaitable[None]]:
    async def forward(context: Context) -> None:
        await context.log(params.level, params.data, logger=params.logger)

    return forward


def upstream_client(
    lane: Lane,
    target: Any,
    *,
    notification_handler: Callable[[str, dict[str, Any]], Awaitable[None]] | None,
    options: dict[str, Any],
) -> _UpstreamClient:
    """One upstream Client for `lane`: it declares elicitation, sampling and roots, and relays them."""

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        relay = lane.relay
        if relay is not None:
            await relay.notify(log_forwarder(params))

    async def on_progress(params: ProgressNotificationParams) -> None:
        relay = lane.relay
        if relay is not None:
            await relay.notify(progress_forwarder(params))

    client = _UpstreamClient(
        target,
        elicitation_handler=_no_answer,
        sampling_handler=_no_answer,
        roots=_no_answer,
        log_handler=on_log,
        progress_handler=on_progress,
        notification_handler=notification_handler,
        init_timeout=lane.pool.limits.connect_timeout,
        **options,
    )
    client.lane = lane
    return client
