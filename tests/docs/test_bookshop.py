"""The dependencies guide's Bookshop, verbatim in behaviour, on both protocol eras."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import ElicitRequestFormParams

from mcp_resolve import Client
from servers_bookshop import ask_when_you_must, declare_one, dependencies_of_dependencies

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]

RESERVE_BOOK_SCHEMA = {
    "type": "object",
    "properties": {"title": {"title": "Title", "type": "string"}},
    "required": ["title"],
    "title": "reserve_bookArguments",
}


class Asked:
    """An elicitation handler that records each question and gives one scripted answer."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.questions: list[ElicitRequestFormParams] = []

    async def __call__(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        self.questions.append(params)
        return self.answer


def text(result: Any) -> str:
    assert len(result.content) == 1
    return str(result.content[0].text)


async def test_reserve_book_input_schema_is_exactly_the_guides() -> None:
    shop = declare_one()
    async with Client(shop.mcp, mode="2026-07-28") as client:
        listed = await client.request("tools/list")
    (tool,) = listed["tools"]
    assert tool["name"] == "reserve_book"
    assert tool["inputSchema"] == RESERVE_BOOK_SCHEMA


@pytest.mark.parametrize("mode", MODES)
async def test_reserve_book_gets_its_stock_from_the_resolver(mode: str) -> None:
    shop = declare_one()
    async with Client(shop.mcp, mode=mode) as client:
        dune = await client.call_tool("reserve_book", {"title": "Dune"})
        neuromancer = await client.call_tool("reserve_book", {"title": "Neuromancer"})
        # A client that sends the resolved parameter anyway is ignored.
        forged = await client.call_tool(
            "reserve_book", {"title": "Neuromancer", "stock": {"title": "x", "copies": 99}}
        )
    assert text(dune) == "Reserved 'Dune' (6 copies left)."
    assert text(neuromancer) == "'Neuromancer' is out of stock."
    assert text(forged) == "'Neuromancer' is out of stock."
    assert shop.stock_lookups == ["Dune", "Neuromancer", "Neuromancer"]


@pytest.mark.parametrize("mode", MODES)
async def test_order_book_runs_check_stock_once_for_two_consumers(mode: str) -> None:
    shop = dependencies_of_dependencies()
    async with Client(shop.mcp, mode=mode) as client:
        tools = await client.request("tools/list")
        dune = await client.call_tool("order_book", {"title": "Dune"})
        assert shop.stock_lookups == ["Dune"]  # one lookup, two consumers
        neuromancer = await client.call_tool("order_book", {"title": "Neuromancer"})
    assert list(tools["tools"][0]["inputSchema"]["properties"]) == ["title"]
    assert text(dune) == "Ordered 'Dune'; it arrives tomorrow."
    assert text(neuromancer) == "'Neuromancer' is on backorder; it would arrive in 2-3 weeks."
    assert shop.stock_lookups == ["Dune", "Neuromancer"]  # once per call, nothing cached across calls


@pytest.mark.parametrize("mode", MODES)
async def test_confirm_backorder_asks_nothing_when_in_stock(mode: str) -> None:
    shop = ask_when_you_must()
    asked = Asked({"action": "decline"})
    async with Client(shop.mcp, mode=mode, elicitation_handler=asked) as client:
        result = await client.call_tool("order_book", {"title": "Dune"})
    assert text(result) == "Ordered 'Dune'."
    assert asked.questions == []
    assert shop.stock_lookups == ["Dune"]


@pytest.mark.parametrize("mode", MODES)
async def test_out_of_stock_asks_and_accepting_backorders(mode: str) -> None:
    shop = ask_when_you_must()
    asked = Asked({"action": "accept", "content": {"confirm": True}})
    async with Client(shop.mcp, mode=mode, elicitation_handler=asked) as client:
        result = await client.call_tool("order_book", {"title": "Neuromancer"})
    assert text(result) == "Backordered 'Neuromancer'; it ships in 2-3 weeks."
    (question,) = asked.questions
    assert question.message == "'Neuromancer' is out of stock (2-3 weeks). Order anyway?"
    assert question.requested_schema == {
        "type": "object",
        "title": "Backorder",  # the model's name, as the official SDK sends it
        "properties": {
            "confirm": {"type": "boolean", "title": "Confirm", "description": "Order anyway and wait?"}
        },
        "required": ["confirm"],
    }


@pytest.mark.parametrize("mode", MODES)
async def test_answering_no_is_still_an_answer(mode: str) -> None:
    shop = ask_when_you_must()
    asked = Asked({"action": "accept", "content": {"confirm": False}})
    async with Client(shop.mcp, mode=mode, elicitation_handler=asked) as client:
        result = await client.call_tool("order_book", {"title": "Neuromancer"})
    assert result.is_error is False
    assert text(result) == "No order placed."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declining_aborts_the_unwrapped_consumer(mode: str, action: str) -> None:
    shop = ask_when_you_must()
    asked = Asked({"action": action})
    async with Client(shop.mcp, mode=mode, elicitation_handler=asked) as client:
        result = await client.call_tool("order_book", {"title": "Neuromancer"})
    assert result.is_error is True
    assert text(result) == (
        f"Error executing tool order_book: Resolver for parameter 'backorder' could not resolve: elicitation was {action}"
    )
    assert len(asked.questions) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_result_consumer_branches_on_decline(mode: str) -> None:
    shop = ask_when_you_must()
    declined = Asked({"action": "decline"})
    async with Client(shop.mcp, mode=mode, elicitation_handler=declined) as client:
        result = await client.call_tool("order_book_or_suggest", {"title": "Neuromancer"})
    assert result.is_error is False
    assert text(result) == "No backorder (decline); may we suggest 'Dune'?"

    accepted = Asked({"action": "accept", "content": {"confirm": True}})
    async with Client(shop.mcp, mode=mode, elicitation_handler=accepted) as client:
        in_stock = await client.call_tool("order_book_or_suggest", {"title": "Dune"})
        backordered = await client.call_tool("order_book_or_suggest", {"title": "Neuromancer"})
    # A plain value arrives as an accepted outcome; the question is only asked when out of stock.
    assert text(in_stock) == "Backordered 'Dune'."
    assert text(backordered) == "Backordered 'Neuromancer'."
    assert len(accepted.questions) == 1
