"""Per-call execution of resolver plans: concurrent, once per call, deterministic on failure.

Every resolver whose dependencies are satisfied starts at once; the result
is nevertheless the one a one-after-another run would give. The trick is a
single sequential order fixed by the plan (dependencies first, signature
order): when a step fails, every step later in that order is cancelled or
never started, earlier ones are allowed to finish, and the failure reported
is the earliest. Tool parameters that unwrap an elicitation outcome are steps
too, so a declined answer stops exactly what a sequential run would stop. On
2026-07-28 a question still open earlier in the order than a failure is asked
first, as the sequential run would, because its answer may end the call sooner.

Three ways through a call, the cheaper two taken only where they give the
same result as the general one (tests/resolve/test_resolve_straight.py and the
concurrency tests pin that down): a straight plan (each resolver needing the
one before) is walked in order with no bookkeeping; while exactly one resolver
can run it is awaited in place, with no task; otherwise resolvers run as tasks
of a task set (`mcp_resolve._concurrency`), the general run that either of the
other two hands over to as soon as its condition stops holding. What the two
save: docs/performance.md.

The engine never touches a wire. Questions go to a `Questioner` that the
protocol layer builds for the request and the caller hands to the run: the handshake era asks mid-call, the
2026-07-28 era answers from the retry or returns `PENDING`, and the engine
then asks the questioner to turn the open questions into an
`InputRequiredResult`.

A resolver written `Resolve(fn, carry=True)` makes its handler's plan a
carrying one (`CallPlan.carried`); only such a run reads the values earlier
rounds carried, leaves out the resolvers they replace, and hands the
questioner the values to carry on (`carry.py`). A plan without one takes the
paths above untouched: the test is one attribute, once per call.

Telemetry reaches the engine the same way: the protocol layer may hand a run
a `RunObserver`, which the engine tells about each resolver it runs and knows
nothing more of (no telemetry library is imported here). A run without one is
the plain `_CallRun`, so not observing costs nothing per resolver.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from contextlib import AbstractContextManager, AsyncExitStack
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from mcp_types import InputRequiredResult

from .._concurrency import cancel_scope, open_task_set
from ..elicitation import ACCEPTED_ANY, AcceptedElicitation, CancelledElicitation, DeclinedElicitation
from ..errors import MISSING_REQUIRED_CLIENT_CAPABILITY, MCPError, ToolError
from .carry import carry_values, restore_values
from .markers import Elicit, ListRoots, Sample
from .plan import ResolvedParameters, ResolverPlan
from .questions import (
    Question,
    capability_name,
    has_capability,
    parse_answer,
    render_question,
    required_capability,
)

if TYPE_CHECKING:
    from ..context import Context

__all__ = [
    "PENDING",
    "CallPlan",
    "Questioner",
    "QuestionerSource",
    "RunObserver",
    "plan_call",
    "resolve_arguments",
    "run_steps",
    "sequential_steps",
]

QuestionerSource = Callable[[], "Questioner | None"]
"""Where a run's questions go, asked for only when a resolver asks (None: this request cannot ask)."""

PENDING: Any = type("Pending", (), {"__repr__": lambda self: "PENDING"})()
"""Returned by a questioner that has no answer yet (2026-07-28): ask in the next round."""


class Questioner(Protocol):
    """Where a resolver's question goes; the protocol layer supplies one per request."""

    async def ask(self, wire_key: str, question: Question) -> Any:
        """Return the client's raw answer, or PENDING when it must be asked in a later round."""
        ...

    def input_required(
        self, pending: dict[str, Question], carried: Mapping[str, Any] | None = None
    ) -> InputRequiredResult:
        """Build the round's result from the questions still open and the values carried to the next round."""
        ...

    def carried(self) -> Mapping[str, Any]:
        """The values earlier rounds of this call carried (JSON by resolver key).

        Empty on a first round, and always on an era whose call is one request.
        """
        ...


class RunObserver(Protocol):
    """Told about each resolver a run starts (telemetry); the protocol layer supplies one per request.

    `resolver(name)` is entered around the resolver's body and its question,
    in the resolver's own task: whatever the observer makes current there (a
    span) is current for the resolver's code too, and resolvers running
    concurrently each have their own. It sees the resolver's exception, if
    any, and lets it through.
    """

    def resolver(self, name: str) -> AbstractContextManager[Any]: ...


@dataclass(frozen=True)
class _Unwrap:
    """The sequential-order step at which a tool parameter takes its resolver's value."""

    parameter: str
    key: Hashable
    wants_union: bool


_Step = ResolverPlan | _Unwrap


def sequential_steps(
    resolved_params: ResolvedParameters, plans: Mapping[Hashable, ResolverPlan]
) -> list[_Step]:
    """Resolvers and tool-parameter unwraps in the order a one-after-another run meets them."""
    steps: list[_Step] = []
    emitted: set[Hashable] = set()
    by_order = sorted(plans.values(), key=lambda p: p.order)

    def closure(key: Hashable, into: set[Hashable]) -> None:
        if key in into:
            return
        into.add(key)
        for _param, dep, _wants in plans[key].dependency_params:
            closure(dep, into)

    for parameter, (marker, wants_union) in resolved_params.items():
        needed: set[Hashable] = set()
        closure(marker.fn, needed)
        steps.extend(p for p in by_order if p.key in needed and p.key not in emitted)
        emitted |= needed
        steps.append(_Unwrap(parameter, marker.fn, wants_union))
    return steps


@dataclass(frozen=True)
class CallPlan:
    """A handler's resolver run, worked out once from its plans (a registered handler keeps one)."""

    steps: list[_Step]
    """Resolvers and tool-parameter unwraps in the order a one-after-another run meets them."""
    has_generators: bool
    """Some resolver is a generator, whose cleanup must wait for an exit stack."""
    straight: bool
    """Each resolver depends on the one before it: no two can ever run at once, so a run needs no
    concurrency bookkeeping until something other than a plain value turns up."""
    carried: tuple[ResolverPlan, ...] = ()
    """The resolvers written `Resolve(fn, carry=True)`, in plan order; empty for almost every handler."""


def plan_call(resolved_params: ResolvedParameters, plans: Mapping[Hashable, ResolverPlan]) -> CallPlan:
    steps = sequential_steps(resolved_params, plans)
    return CallPlan(
        steps,
        has_generators=any(plan.kind in ("generator", "async_generator") for plan in plans.values()),
        straight=_is_straight(steps),
        carried=tuple(sorted((p for p in plans.values() if p.carry is not None), key=lambda p: p.order)),
    )


def _without(
    call: CallPlan, restored: Mapping[Hashable, Any], plans: Mapping[Hashable, ResolverPlan]
) -> CallPlan:
    """The plan left once `restored` resolvers have their values: they do not run, nor do the
    resolvers only they needed (one a running resolver or a tool parameter still needs does)."""
    needed: set[Hashable] = set()

    def need(key: Hashable) -> None:
        if key in needed or key in restored:
            return
        needed.add(key)
        for _param, dep, _wants in plans[key].dependency_params:
            need(dep)

    for step in call.steps:
        if isinstance(step, _Unwrap):
            need(step.key)
    steps = [step for step in call.steps if isinstance(step, _Unwrap) or step.key in needed]
    return CallPlan(steps, call.has_generators, _is_straight(steps), call.carried)


def _is_straight(steps: list[_Step]) -> bool:
    previous: Hashable | None = None
    for step in steps:
        if isinstance(step, _Unwrap):
            continue
        if previous is not None and all(dep != previous for _param, dep, _wants in step.dependency_params):
            return False
        previous = step.key
    return True


def _consumer_value(parameter: str, outcome: Any, wants_union: bool) -> Any:
    if isinstance(outcome, AcceptedElicitation):
        return outcome if wants_union else outcome.data
    if isinstance(outcome, (DeclinedElicitation, CancelledElicitation)):
        if wants_union:
            return outcome
        raise ToolError(
            f"Resolver for parameter '{parameter}' could not resolve: elicitation was {outcome.action}"
        )
    return ACCEPTED_ANY(data=outcome) if wants_union else outcome


class _CallRun:
    """The state of one call's resolver run."""

    def __init__(
        self,
        plans: Mapping[Hashable, ResolverPlan],
        tool_args: Mapping[str, Any],
        context: Context,
        questioner: QuestionerSource,
        exit_stack: AsyncExitStack | None,
    ) -> None:
        self.plans = plans
        self.tool_args = tool_args
        self.context = context
        self._questioner = questioner
        self.exit_stack = exit_stack
        self.outcomes: dict[Hashable, Any] = {}
        self.pending: dict[Hashable, tuple[str, Question]] = {}
        """Resolver -> (wire key, question) of the questions still open this round."""
        self.wire_keys: dict[str, Hashable] = {}
        self.blocked: set[Hashable] = set()
        self.scopes: dict[Hashable, anyio.CancelScope] = {}
        self.failure: tuple[int, BaseException] | None = None
        self.injected: dict[str, Any] = {}
        self.steps: list[_Step] = []
        self.remaining: list[tuple[int, _Step]] = []
        """The steps neither applied nor started yet, with their index in the one-after-another order."""
        self._position: dict[int, int] | None = None

    @property
    def questioner(self) -> Questioner | None:
        """Read when a question is asked, not before: the context builds its request scope on first use."""
        return self._questioner()

    async def execute(self, call: CallPlan) -> dict[str, Any] | InputRequiredResult:
        steps = self.steps = call.steps
        start = await self._run_straight(steps) if call.straight else 0
        if start == len(steps):
            return self.injected
        self.remaining = list(enumerate(steps[start:], start))
        ready = self._startable()
        # While exactly one resolver can run and none is running, there is nothing to overlap it
        # with: await it here instead of paying for a task and its bookkeeping.
        while len(ready) == 1:
            plan, inputs = ready[0]
            self._settle(plan.key, *await self._attempt(plan, inputs))
            ready = self._startable()
        if ready:
            await self._run_concurrently(ready)
        if self.failure is not None:
            failed_at, error = self.failure
            # A question earlier in the order comes first in a one-after-another run, and its answer
            # may abort the call with an earlier error: ask it before reporting this failure.
            self.pending = {k: v for k, v in self.pending.items() if self._index(k) < failed_at}
            if not self.pending:
                raise error
        if self.pending:
            questioner = self.questioner
            assert questioner is not None
            ordered = sorted(self.pending.items(), key=lambda item: self.plans[item[0]].order)
            pending = dict(pending for _key, pending in ordered)
            if call.carried:
                return questioner.input_required(pending, carry_values(call.carried, self.outcomes))
            return questioner.input_required(pending)
        return self.injected

    def restore(self, call: CallPlan) -> CallPlan:
        """Take the values earlier rounds carried as outcomes; the plan of what is left to run.

        Only for a carrying plan. A value restored here makes its resolver a
        finished one before anything starts, so every consumer reads it as if
        the resolver had just returned it.
        """
        questioner = self.questioner
        stored = None if questioner is None else questioner.carried()
        if not stored:
            return call
        restored = restore_values(call.carried, stored)
        if not restored:
            return call
        self.outcomes.update(restored)
        return _without(call, restored, self.plans)

    async def _run_straight(self, steps: list[_Step]) -> int:
        """Take the steps in order while every resolver gives a value; where the general run takes over.

        Only for a straight plan, whose one-after-another order is the only order things can happen
        in. A question, a failure or a declined answer hands the rest to the general run: the
        resolver's outcome is settled and the run resumes after it, or, for an unwrap or inputs
        that cannot take a declined answer, at that step, which the general run then fails.
        """
        for index, step in enumerate(steps):
            # Everything a step needs came earlier in the walk and gave a value, so the unwrap
            # applies and the inputs are there (or a declined answer raises).
            try:
                if isinstance(step, _Unwrap):
                    self._unwrap(step)
                    continue
                inputs = self._inputs_for(step)
            except ToolError:
                return index
            assert inputs is not None
            try:  # _attempt, without its coroutine and tuple: a straight walk awaits every resolver
                value = await self._invoke(step, inputs)
            except Exception as exc:
                self._settle(step.key, "error", exc)
                return index + 1
            if isinstance(value, _Pending):
                self._settle(step.key, "pending", (value.wire_key, value.question))
                return index + 1
            self.outcomes[step.key] = value
        return len(steps)

    async def _run_concurrently(self, ready: list[tuple[ResolverPlan, dict[str, Any]]]) -> None:
        """Run every startable resolver as its own task, starting newly unblocked ones as results arrive."""
        async with open_task_set() as tasks:
            while True:
                for plan, inputs in ready:
                    scope = cancel_scope()
                    self.scopes[plan.key] = scope
                    tasks.start(scope, self._run_resolver, plan, inputs, scope)
                if not tasks.running:
                    break
                self._settle(*await tasks.next_result())
                ready = self._startable()

    def _startable(self) -> list[tuple[ResolverPlan, dict[str, Any]]]:
        """Apply the unwraps that can be applied now; return the resolvers that can start.

        Applied, returned and blocked steps leave `remaining`, and so do those after a failure:
        each pass looks only at what is left.
        """
        ready: list[tuple[ResolverPlan, dict[str, Any]]] = []
        remaining: list[tuple[int, _Step]] = []
        for index, step in self.remaining:
            if self.failure is not None and index > self.failure[0]:
                break
            try:
                if isinstance(step, _Unwrap):
                    if not self._unwrap(step):
                        remaining.append((index, step))
                    continue
                inputs = self._inputs_for(step)
            except ToolError as exc:
                self._fail(index, exc)
                continue
            if inputs is not None:
                ready.append((step, inputs))
            elif step.key not in self.blocked:
                remaining.append((index, step))
        self.remaining = remaining
        return ready

    def _index(self, key: Hashable) -> int:
        """The resolver's index in the one-after-another order (needed only once something fails)."""
        if self._position is None:
            self._position = {id(step): index for index, step in enumerate(self.steps)}
        return self._position[id(self.plans[key])]

    def _settle(self, key: Hashable, status: str, value: Any) -> None:
        if status == "ok":
            self.outcomes[key] = value
        elif status == "pending":
            self.pending[key] = value
        elif status == "error":
            self._fail(self._index(key), value)

    def _fail(self, index: int, error: BaseException) -> None:
        """Record a failure at `index`; the earliest failure wins and everything later is cancelled."""
        if self.failure is not None and self.failure[0] < index:
            return
        self.failure = (index, error)
        for key, scope in self.scopes.items():
            if self._index(key) > index:
                scope.cancel()

    def _claim_wire_key(self, plan: ResolverPlan, chosen: str | None) -> str:
        """The question's key on the wire: the marker's own `key`, else the plan's; one resolver per key."""
        wire_key = chosen or plan.wire_key
        owner = self.wire_keys.setdefault(wire_key, plan.key)
        if owner != plan.key:
            raise ToolError(
                f"Resolvers {self.plans[owner].name} and {plan.name} both ask under the key {wire_key!r}; "
                "give each question its own key"
            )
        return wire_key

    def _unwrap(self, step: _Unwrap) -> bool:
        """Give the tool parameter its resolver's value, once there is one; whether it has it now."""
        if step.key not in self.outcomes:
            return False
        self.injected[step.parameter] = _consumer_value(
            step.parameter, self.outcomes[step.key], step.wants_union
        )
        return True

    def _inputs_for(self, plan: ResolverPlan) -> dict[str, Any] | None:
        """The resolver's arguments, or None while a dependency is still running or blocked.

        Raises ToolError when a dependency's outcome cannot be unwrapped (declined).
        """
        inputs: dict[str, Any] = {}
        for parameter, dep, wants_union in plan.dependency_params:
            if dep in self.pending or dep in self.blocked:
                self.blocked.add(plan.key)
                return None
            if dep not in self.outcomes:
                return None
            inputs[parameter] = _consumer_value(parameter, self.outcomes[dep], wants_union)
        for parameter in plan.argument_params:
            inputs[parameter] = self.tool_args[parameter]
        for parameter in plan.context_params:
            inputs[parameter] = self.context
        return inputs

    async def _run_resolver(
        self, plan: ResolverPlan, inputs: dict[str, Any], scope: anyio.CancelScope
    ) -> tuple[Hashable, str, Any]:
        status, value = "cancelled", None
        with scope:
            status, value = await self._attempt(plan, inputs)
        return plan.key, status, value

    async def _attempt(self, plan: ResolverPlan, inputs: dict[str, Any]) -> tuple[str, Any]:
        """Run one resolver to its outcome: ("ok", value), ("pending", (wire key, question)) or ("error", exc)."""
        try:
            value = await self._invoke(plan, inputs)
        except Exception as exc:
            return "error", exc
        if isinstance(value, _Pending):
            return "pending", (value.wire_key, value.question)
        return "ok", value

    async def _invoke(self, plan: ResolverPlan, inputs: dict[str, Any]) -> Any:
        if plan.kind == "async":  # the common kind, awaited here rather than through one more coroutine
            value = await plan.fn(**inputs)
        else:
            value = await _call_resolver(plan, inputs, self.exit_stack)
        if not isinstance(value, (Elicit, Sample, ListRoots)):
            return value
        required = required_capability(value)
        if not has_capability(self.context.client_capabilities_dict, required):
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Resolver {plan.name} needs a client capability the client did not declare "
                f"({capability_name(required)})",
                {"requiredCapabilities": required},
            )
        if self.questioner is None:
            raise ToolError(f"Resolver {plan.name} asked a question, but this request cannot ask the client")
        wire_key = self._claim_wire_key(plan, value.key)
        try:
            question = render_question(value)
        except TypeError as exc:  # a form the client could not show; registration catches annotated ones
            raise ToolError(f"Resolver {plan.name} asked a question that cannot be rendered: {exc}") from None
        answer = await self.questioner.ask(wire_key, question)
        if answer is PENDING:
            return _Pending(wire_key, question)
        try:
            return parse_answer(value, answer)
        except ValueError as exc:
            reason = str(exc)  # "Received ...", the official wording, after the resolver's name
            raise ToolError(f"Resolver {plan.name!r} {reason[:1].lower()}{reason[1:]}") from None


class _ObservedRun(_CallRun):
    """A run that tells an observer about each resolver; chosen only when there is one."""

    observer: RunObserver

    async def _invoke(self, plan: ResolverPlan, inputs: dict[str, Any]) -> Any:
        with self.observer.resolver(plan.name):
            return await super()._invoke(plan, inputs)


@dataclass(frozen=True)
class _Pending:
    wire_key: str
    question: Question


async def _call_resolver(
    plan: ResolverPlan, inputs: dict[str, Any], exit_stack: AsyncExitStack | None
) -> Any:
    """Run a resolver of any kind but "async" (which `_invoke` awaits directly)."""
    fn = plan.fn
    if plan.kind == "sync":
        return await anyio.to_thread.run_sync(partial(fn, **inputs))
    assert exit_stack is not None, "a run with a generator resolver needs an exit stack (run_steps)"
    if plan.kind == "async_generator":
        agen = fn(**inputs)
        value = await agen.__anext__()
        exit_stack.push_async_exit(partial(_finish_async_generator, agen, plan.name))
        return value
    gen = fn(**inputs)
    value = await anyio.to_thread.run_sync(next, gen)
    exit_stack.push_async_exit(partial(_finish_generator, gen, plan.name))
    return value


async def _finish_async_generator(
    agen: Any, name: str, exc_type: Any, exc: BaseException | None, tb: Any
) -> bool:
    try:
        if exc is None:
            await agen.__anext__()
        else:
            await agen.athrow(exc)
    except StopAsyncIteration:
        return False
    except BaseException as raised:
        if raised is exc:
            return False
        raise
    raise RuntimeError(f"resolver {name} yielded more than once")


async def _finish_generator(gen: Any, name: str, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
    def finish() -> None:
        try:
            if exc is None:
                next(gen)
            else:
                gen.throw(exc)
        except StopIteration:
            return
        except BaseException as raised:
            if raised is exc:
                return
            raise
        raise RuntimeError(f"resolver {name} yielded more than once")

    await anyio.to_thread.run_sync(finish)
    return False


async def resolve_arguments(
    resolved_params: ResolvedParameters,
    plans: Mapping[Hashable, ResolverPlan],
    tool_args: Mapping[str, Any],
    context: Context,
    *,
    exit_stack: AsyncExitStack | None = None,
) -> dict[str, Any] | InputRequiredResult:
    """Resolve every Resolve-marked tool parameter into a concrete value.

    Returns the mapping of tool parameter name to injected value when every
    resolver is satisfied. When a resolver still needs client input (and the
    negotiated protocol is >= 2026-07-28), returns an InputRequiredResult
    carrying the batched questions instead; the tool body is not run.

    Pass `exit_stack` to keep generator resolvers open until the body has
    run; without one their cleanup runs before this function returns.

    Raises:
        ToolError: If an elicited value is declined or cancelled and the
            consumer asked for the unwrapped model, or a resolver raised it.
    """
    call = plan_call(resolved_params, plans)
    questioner = context.questioner
    observer = getattr(context, "observer", None)
    if exit_stack is not None or not call.has_generators:
        return await run_steps(
            call, plans, tool_args, context, questioner=questioner, exit_stack=exit_stack, observer=observer
        )
    async with AsyncExitStack() as own_stack:
        return await run_steps(
            call, plans, tool_args, context, questioner=questioner, exit_stack=own_stack, observer=observer
        )


async def run_steps(
    call: CallPlan,
    plans: Mapping[Hashable, ResolverPlan],
    tool_args: Mapping[str, Any],
    context: Context,
    *,
    questioner: QuestionerSource,
    exit_stack: AsyncExitStack | None = None,
    observer: RunObserver | None = None,
) -> dict[str, Any] | InputRequiredResult:
    """`resolve_arguments` with the run already planned (a registered handler plans it once).

    `questioner` gives the channel questions go to, called only when a
    resolver asks (the protocol layer builds it on first use); `exit_stack`
    takes generator resolvers' cleanup, and a run with a generator resolver
    must have one; `observer`, when the server is instrumented, hears of
    each resolver run.
    """
    run: _CallRun
    if observer is None:
        if not call.carried:
            return await _CallRun(plans, tool_args, context, questioner, exit_stack).execute(call)
        run = _CallRun(plans, tool_args, context, questioner, exit_stack)
    else:
        run = _ObservedRun(plans, tool_args, context, questioner, exit_stack)
        run.observer = observer
    return await run.execute(run.restore(call) if call.carried else call)
