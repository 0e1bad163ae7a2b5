"""Bad resolver graphs fail at registration with InvalidSignature naming the resolver and the parameter.

No `from __future__ import annotations` here: the tools are local functions
whose annotations name local resolvers.
"""

import re
from typing import Annotated, Any

import pytest
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import BaseModel

from mcp_resolve import (
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    InvalidSignature,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp_resolve.resolve import (
    build_resolver_plans,
    find_resolved_parameters,
    resolve_arguments,
    returns_input_required,
)


class Answer(BaseModel):
    value: int


async def looked_up(title: str) -> int:
    return len(title)


async def ring_a(v: Annotated[int, Resolve(lambda: 0)], title: str) -> int:  # replaced below
    return v


async def ring_b(v: Annotated[int, Resolve(ring_a)]) -> int:
    return v


async def ring_c(w: Annotated[int, Resolve(ring_b)]) -> int:
    return w


# Close the loop a -> c -> b -> a (a module-level cycle needs a forward reference).
ring_a.__annotations__["v"] = Annotated[int, Resolve(ring_c)]


async def narcissus(me: Annotated[int, Resolve(lambda: 0)]) -> int:
    return me


narcissus.__annotations__["me"] = Annotated[int, Resolve(narcissus)]


async def unclassifiable(title: str, mystery: int) -> int:
    return mystery


async def nested_unclassifiable(base: Annotated[int, Resolve(unclassifiable)]) -> int:
    return base


async def two_arms(title: str) -> Elicit[Answer] | Sample:
    return Sample(title)


async def roots_or_elicit(title: str) -> ListRoots | Elicit[Answer] | int:
    return 1


async def buried_in_resolver(maybe: Annotated[int, Resolve(looked_up)] | None) -> int:
    return maybe or 0


def register(fn: Any) -> None:
    MCPServer("signatures").tool()(fn)


def message_of(fn: Any) -> str:
    with pytest.raises(InvalidSignature) as caught:
        register(fn)
    return str(caught.value)


def test_a_cycle_names_the_loop_and_the_parameter_that_closes_it() -> None:
    async def tool(title: str, n: Annotated[int, Resolve(ring_b)]) -> str:
        return ""

    message = message_of(tool)
    assert re.search(r"resolver \S+:ring_b .*depends on itself", message)
    assert "parameter 'w' of" in message  # ring_c reaches ring_b again through its parameter 'w'
    assert "ring_b -> " in message and "ring_a -> " in message and "ring_c -> " in message


def test_a_resolver_that_depends_on_itself_is_a_cycle() -> None:
    async def tool(n: Annotated[int, Resolve(narcissus)]) -> str:
        return ""

    message = message_of(tool)
    assert "narcissus" in message and "parameter 'me'" in message and "depends on itself" in message


def test_an_unclassifiable_parameter_names_resolver_and_parameter() -> None:
    async def tool(title: str, n: Annotated[int, Resolve(unclassifiable)]) -> str:
        return ""

    message = message_of(tool)
    assert "resolver " in message and ":unclassifiable" in message
    assert "cannot classify parameter 'mystery'" in message
    assert "filling parameter 'n'" in message
    assert "tool arguments: title" in message


def test_an_unclassifiable_parameter_deep_in_the_graph_names_its_consumer() -> None:
    async def tool(title: str, n: Annotated[int, Resolve(nested_unclassifiable)]) -> str:
        return ""

    message = message_of(tool)
    assert ":unclassifiable (filling parameter 'base' of " in message
    assert "nested_unclassifiable" in message and "'mystery'" in message


def test_a_tool_argument_name_on_the_tool_is_not_a_classification_for_a_missing_one() -> None:
    """A resolver parameter named like a tool argument is only fine when the tool has that argument."""

    async def without_title(n: Annotated[int, Resolve(looked_up)]) -> str:
        return ""

    async def with_title(title: str, n: Annotated[int, Resolve(looked_up)]) -> str:
        return ""

    assert "cannot classify parameter 'title'" in message_of(without_title)
    register(with_title)


def test_resolve_inside_a_union_on_a_tool_parameter() -> None:
    async def tool(title: str, n: Annotated[int, Resolve(looked_up)] | None = None) -> str:
        return ""

    message = message_of(tool)
    assert "parameter 'n'" in message and "Resolve(" in message and ":looked_up)" in message
    assert "union" in message


def test_resolve_inside_a_union_on_a_resolver_parameter() -> None:
    async def tool(title: str, n: Annotated[int, Resolve(buried_in_resolver)]) -> str:
        return ""

    message = message_of(tool)
    assert ":buried_in_resolver (filling parameter 'n')" in message
    assert "parameter 'maybe' wraps `Resolve" in message  # the official wording
    assert "hides Resolve(" in message and ":looked_up)" in message


@pytest.mark.parametrize("resolver", [two_arms, roots_or_elicit])
def test_two_marker_arms_in_a_return_annotation(resolver: Any) -> None:
    async def tool(title: str, n: Annotated[int, Resolve(resolver)]) -> str:
        return ""

    message = message_of(tool)
    assert f":{resolver.__name__} (filling parameter 'n')" in message
    assert "2 question arms" in message


def test_resolve_parameters_plus_an_input_required_return() -> None:
    async def tool(title: str, n: Annotated[int, Resolve(looked_up)]) -> CallToolResult | InputRequiredResult:
        return CallToolResult(content=[])

    message = message_of(tool)
    assert "parameter 'n'" in message and ":looked_up)" in message and "InputRequiredResult" in message

    async def hand_rolled(title: str) -> CallToolResult | InputRequiredResult:
        return CallToolResult(content=[])

    register(hand_rolled)


def test_prompts_and_templates_are_checked_the_same_way() -> None:
    server = MCPServer("signatures")

    async def prompt(title: str, n: Annotated[int, Resolve(unclassifiable)]) -> str:
        return ""

    async def template(title: str, n: Annotated[int, Resolve(ring_b)]) -> str:
        return ""

    with pytest.raises(InvalidSignature, match="cannot classify parameter 'mystery'"):
        server.prompt()(prompt)
    with pytest.raises(InvalidSignature, match="depends on itself"):
        server.resource("books://{title}")(template)


def test_find_resolved_parameters_reports_the_consumer_shape() -> None:
    async def tool(
        title: str,
        plain: Annotated[int, Resolve(looked_up)],
        outcome: Annotated[ElicitationResult[Answer], Resolve(looked_up)],
        declined: Annotated[DeclinedElicitation | CancelledElicitation, Resolve(looked_up)],
        ctx: Context,
    ) -> str:
        return ""

    found = find_resolved_parameters(tool)
    assert list(found) == ["plain", "outcome", "declined"]
    assert [wants_union for _marker, wants_union in found.values()] == [False, True, True]
    assert all(marker.fn is looked_up for marker, _wants_union in found.values())


def test_returns_input_required() -> None:
    async def plain() -> str:
        return ""

    async def hand_rolled() -> CallToolResult | InputRequiredResult:
        return CallToolResult(content=[])

    assert returns_input_required(plain) is False
    assert returns_input_required(hand_rolled) is True


def test_build_resolver_plans_orders_dependencies_first_and_shares_them() -> None:
    async def stock(title: str) -> int:
        return 1

    async def delivery(s: Annotated[int, Resolve(stock)], ctx: Context) -> str:
        return ""

    async def tool(
        title: str, s: Annotated[int, Resolve(stock)], d: Annotated[str, Resolve(delivery)]
    ) -> str:
        return ""

    plans = build_resolver_plans(find_resolved_parameters(tool), {"title"})
    assert list(plans) == [stock, delivery]
    assert [p.order for p in plans.values()] == [0, 1]
    assert plans[stock].argument_params == ("title",)
    assert plans[delivery].dependency_params == (("s", stock, False),)
    assert plans[delivery].context_params == ("ctx",)
    assert callable(resolve_arguments)


class Address(BaseModel):
    street: str


class Shipping(BaseModel):
    address: Address  # a nested object: no elicitation form can show it


async def ask_shipping() -> Elicit[Shipping]:
    return Elicit("Where to?", Shipping)


def test_an_elicit_model_that_cannot_be_a_form_fails_at_registration() -> None:
    async def tool(ship: Annotated[Shipping, Resolve(ask_shipping)]) -> str:
        return ""

    message = message_of(tool)
    assert ":ask_shipping (filling parameter 'ship')" in message
    assert "Shipping.address" in message and "not allowed" in message


async def _no_notifications(method: str, params: dict[str, Any]) -> None:
    raise AssertionError("this test sends no notifications")


@pytest.mark.anyio
async def test_resolve_arguments_cleans_a_generator_resolver_up_before_returning_or_with_the_given_stack() -> (
    None
):
    from collections.abc import AsyncIterator
    from contextlib import AsyncExitStack

    from mcp_resolve.context import Context, RequestScope

    events: list[str] = []

    async def session() -> AsyncIterator[str]:
        events.append("open")
        yield "session"
        events.append("close")

    async def tool(s: Annotated[str, Resolve(session)]) -> str:
        return s

    resolved = find_resolved_parameters(tool)
    plans = build_resolver_plans(resolved, set())
    context = Context(
        RequestScope(
            1, "tools/call", "modern", "2026-07-28", {}, None, None, None, {}, _no_notifications, None
        )
    )

    # Without a stack, the cleanup has run by the time the values are back.
    assert await resolve_arguments(resolved, plans, {}, context) == {"s": "session"}
    assert events == ["open", "close"]

    # With one, it waits for the stack: the body runs between.
    events.clear()
    async with AsyncExitStack() as stack:
        assert await resolve_arguments(resolved, plans, {}, context, exit_stack=stack) == {"s": "session"}
        assert events == ["open"]
    assert events == ["open", "close"]
