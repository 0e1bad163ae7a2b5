"""Straight plans: each resolver depends on the one before it, so the engine walks them in order.

The walk keeps no concurrency bookkeeping; at the first question, failure or
declined answer it hands the rest of the run to the general engine. These
tests pin down which plans count as straight and that every hand-over ends
exactly as the general run would, on both eras.
"""

from typing import Annotated, Any

import pytest
from mcp_types import ElicitRequestFormParams
from pydantic import BaseModel

from mcp_resolve import (
    AcceptedElicitation,
    Client,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    ToolError,
)
from mcp_resolve.resolve import run as engine
from mcp_resolve.resolve.plan import build_resolver_plans, find_resolved_parameters
from mcp_resolve.resolve.run import plan_call

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]


@pytest.fixture(params=["walked in order", "general run"])
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Behaviour tests run twice: on the straight walk, and with every plan forced onto the general run.

    Servers are built inside the tests, after this fixture, so their plans see the patch.
    """
    if request.param == "general run":
        monkeypatch.setattr(engine, "_is_straight", lambda steps: False)
    return str(request.param)


def straight(fn: Any, arguments: set[str] | None = None) -> bool:
    resolved = find_resolved_parameters(fn)
    return plan_call(resolved, build_resolver_plans(resolved, arguments or set())).straight


async def stock(title: str) -> int:
    return {"Dune": 4}.get(title, 0)


async def delivery(count: Annotated[int, Resolve(stock)]) -> str:
    return "2 days" if count else "3 weeks"


async def label(when: Annotated[str, Resolve(delivery)], count: Annotated[int, Resolve(stock)]) -> str:
    return f"{count} left, {when}"


async def other() -> int:
    return 7


def test_a_chain_is_straight_and_siblings_or_a_fork_are_not() -> None:
    async def order_book(
        title: str, count: Annotated[int, Resolve(stock)], when: Annotated[str, Resolve(delivery)]
    ) -> str:
        return ""

    async def three_deep(text: Annotated[str, Resolve(label)]) -> str:
        return text

    async def siblings(a: Annotated[int, Resolve(stock)], b: Annotated[int, Resolve(other)]) -> str:
        return ""

    async def fork(when: Annotated[str, Resolve(delivery)], b: Annotated[int, Resolve(other)]) -> str:
        return ""

    async def alone(a: Annotated[int, Resolve(other)]) -> str:
        return ""

    assert straight(order_book, {"title"})
    assert straight(three_deep, {"title"})
    assert straight(alone)
    assert not straight(siblings, {"title"})
    assert not straight(fork, {"title"})


@pytest.mark.parametrize("mode", MODES)
async def test_a_straight_chain_gets_arguments_context_and_every_value_once(
    mode: str, engine_path: str
) -> None:
    server = MCPServer("chain")
    calls: list[str] = []

    async def counted_stock(title: str, ctx: Context) -> int:
        calls.append(f"stock {title} {ctx.protocol_version is not None}")
        return 4

    async def counted_delivery(count: Annotated[int, Resolve(counted_stock)]) -> str:
        calls.append(f"delivery {count}")
        return "2 days"

    @server.tool()
    async def order_book(
        title: str,
        count: Annotated[int, Resolve(counted_stock)],
        when: Annotated[str, Resolve(counted_delivery)],
    ) -> str:
        return f"{title}: {count} in stock, delivery in {when}"

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("order_book", {"title": "Dune"})
    assert result.content[0].text == "Dune: 4 in stock, delivery in 2 days"
    assert calls == ["stock Dune True", "delivery 4"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_failure_midway_stops_the_chain_there(mode: str, engine_path: str) -> None:
    server = MCPServer("failing chain")
    ran: list[str] = []

    async def first() -> int:
        ran.append("first")
        return 1

    async def second(value: Annotated[int, Resolve(first)]) -> int:
        ran.append("second")
        raise ToolError("the second lookup failed")

    async def third(value: Annotated[int, Resolve(second)]) -> int:
        ran.append("third")
        return value

    @server.tool()
    async def lookup(value: Annotated[int, Resolve(third)]) -> str:
        return "unreachable"

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("lookup", {})
    assert result.is_error is True
    assert result.content[0].text == "Error executing tool lookup: the second lookup failed"
    assert ran == ["first", "second"]


class Scope(BaseModel):
    full: bool


def asking_server(log: list[str]) -> MCPServer:
    """A chain whose first resolver asks; the second takes the plain answer, the tool the union too."""
    server = MCPServer("asking chain")

    async def scope() -> Elicit[Scope]:
        log.append("scope")
        return Elicit("Full refund?", Scope)

    async def amount(answer: Annotated[Scope, Resolve(scope)]) -> int:
        log.append("amount")
        return 100 if answer.full else 40

    @server.tool()
    async def refund(
        outcome: Annotated[ElicitationResult[Scope], Resolve(scope)],
        cents: Annotated[int, Resolve(amount)],
    ) -> str:
        assert isinstance(outcome, AcceptedElicitation)
        return f"refund {cents}"

    return server


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("answer", "expected"), [("accept", "refund 100"), ("decline", None)])
async def test_a_question_in_a_chain_hands_over_and_the_answer_flows_on(
    mode: str, answer: str, expected: str | None, engine_path: str
) -> None:
    log: list[str] = []
    asked: list[str] = []

    async def person(params: ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"full": True}} if answer == "accept" else {"action": answer}

    async with Client(asking_server(log), mode=mode, elicitation_handler=person) as client:
        result = await client.call_tool("refund", {})
    assert asked == ["Full refund?"]
    if expected is not None:
        assert result.content[0].text == expected
        assert log.count("amount") == 1
    else:
        # `amount` takes the plain model: a declined answer stops the run before it starts.
        assert result.is_error is True
        assert result.content[0].text == (
            "Error executing tool refund: Resolver for parameter 'answer' could not resolve: "
            "elicitation was decline"
        )
        assert "amount" not in log


async def test_a_chain_of_plain_values_never_enters_the_general_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def general_run(self: Any) -> Any:
        raise AssertionError("a straight plan with plain values needs no general run")

    monkeypatch.setattr(engine._CallRun, "_startable", general_run)
    server = MCPServer("walk")

    @server.tool()
    async def order_book(
        title: str, count: Annotated[int, Resolve(stock)], when: Annotated[str, Resolve(delivery)]
    ) -> str:
        return f"{title}: {count}, {when}"

    async with Client(server) as client:
        result = await client.call_tool("order_book", {"title": "Dune"})
    assert result.content[0].text == "Dune: 4, 2 days"


@pytest.mark.parametrize("mode", MODES)
async def test_a_generator_in_a_chain_is_cleaned_up_after_the_body_in_reverse_order(
    mode: str, engine_path: str
) -> None:
    server = MCPServer("generator chain")
    log: list[str] = []

    async def connection() -> Any:
        log.append("open")
        yield "conn"
        log.append("close")

    async def cursor(conn: Annotated[str, Resolve(connection)]) -> Any:
        log.append(f"cursor on {conn}")
        yield "cur"
        log.append("cursor closed")

    @server.tool()
    async def query(cur: Annotated[str, Resolve(cursor)]) -> str:
        log.append(f"body with {cur}")
        return cur

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("query", {})
    assert result.content[0].text == "cur"
    assert log == ["open", "cursor on conn", "body with cur", "cursor closed", "close"]
