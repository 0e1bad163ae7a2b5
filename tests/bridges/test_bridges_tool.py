"""`bridged_tool`: a tool from a JSON Schema and an async call, with hidden arguments filled by resolvers.

Driven through our Client in memory, on both eras: what the client lists,
what reaches the call, and that a client cannot choose a hidden argument.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

from mcp_resolve import Client, Context, Elicit, InvalidSignature, MCPServer, Resolve
from mcp_resolve.bridges import BridgedTool, bridged_tool
from mcp_resolve.cli._check import check
from mcp_resolve.cli._graph import graph

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "customer_id": {"type": "string"},
        "status": {"type": "string", "enum": ["open", "paid"]},
        "from": {"type": "string"},
        "customer-id": {"type": "integer"},
        "limit": {"type": "integer"},
    },
    "required": ["customer_id", "status"],
}


def current_customer(ctx: Context) -> str:
    return "cust-42"


def recording_server(seen: list[dict[str, Any]], **hide: Resolve) -> MCPServer:
    async def call(arguments: dict[str, Any], context: Context) -> CallToolResult:
        seen.append(dict(arguments))
        return CallToolResult(content=[TextContent(type="text", text=repr(sorted(arguments.items())))])

    mcp = MCPServer("bridge")
    mcp.add_tool(bridged_tool("get_orders", SCHEMA, call, hide=hide, description="Orders of a customer"))
    return mcp


@pytest.mark.parametrize("mode", ERAS)
async def test_hidden_argument_leaves_the_schema_and_comes_from_its_resolver(mode: str) -> None:
    seen: list[dict[str, Any]] = []
    mcp = recording_server(seen, customer_id=Resolve(current_customer))
    async with Client(mcp, mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "get_orders" and tool.description == "Orders of a customer"
        assert "customer_id" not in tool.input_schema["properties"]
        assert tool.input_schema["required"] == ["status"]
        assert set(tool.input_schema["properties"]) == {"status", "from", "customer-id", "limit"}
        # A client that sends the hidden argument anyway: its value is dropped, the resolver's wins.
        result = await client.call_tool("get_orders", {"status": "open", "customer_id": "someone-else"})
    assert not result.is_error
    assert seen == [{"status": "open", "customer_id": "cust-42"}]


@pytest.mark.parametrize("mode", ERAS)
async def test_arguments_with_any_name_pass_and_absent_ones_stay_absent(mode: str) -> None:
    seen: list[dict[str, Any]] = []
    mcp = recording_server(seen)
    async with Client(mcp, mode=mode) as client:
        await client.call_tool(
            "get_orders", {"customer_id": "c", "status": "paid", "from": "2024", "customer-id": 7}
        )
        await client.call_tool("get_orders", {"customer_id": "c", "status": "paid"})
    assert seen == [
        {"customer_id": "c", "status": "paid", "from": "2024", "customer-id": 7},
        {"customer_id": "c", "status": "paid"},  # no "from": None, no "limit": None
    ]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_missing_required_argument_is_a_tool_error_before_the_call(mode: str) -> None:
    seen: list[dict[str, Any]] = []
    mcp = recording_server(seen, customer_id=Resolve(current_customer))
    async with Client(mcp, mode=mode) as client:
        result = await client.call_tool("get_orders", {"from": "x"})
    assert result.is_error
    assert "status: Field required" in result.content[0].text  # type: ignore[union-attr]
    assert seen == []


class Consent(BaseModel):
    customer: str


def asked_customer() -> Elicit[Consent]:
    return Elicit("Which customer?", Consent)


def customer_from_answer(answer: Annotated[Consent, Resolve(asked_customer)]) -> str:
    return answer.customer


@pytest.mark.parametrize("mode", ERAS)
async def test_a_hidden_argument_may_ask_the_person(mode: str) -> None:
    """The resolver graph is the whole engine: a question goes mid-call or as an input-required round."""
    seen: list[dict[str, Any]] = []
    mcp = recording_server(seen, customer_id=Resolve(customer_from_answer))

    async def answer(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"customer": "asked-7"}}

    async with Client(mcp, mode=mode, elicitation_handler=answer) as client:
        result = await client.call_tool("get_orders", {"status": "open"})
    assert not result.is_error, result
    assert seen == [{"status": "open", "customer_id": "asked-7"}]


def customer_for_limit(limit: int, ctx: Context) -> str:
    return f"limit-{limit}"


async def test_a_resolver_may_read_a_visible_argument_and_results_may_be_wire_dicts() -> None:
    seen: list[dict[str, Any]] = []

    async def call(arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        seen.append(arguments)
        return {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"n": 1}, "isError": False}

    tool = bridged_tool(
        "orders",
        SCHEMA,
        call,
        hide={"customer_id": Resolve(customer_for_limit)},
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        title="Orders",
    )
    mcp = MCPServer(tools=[tool])
    async with Client(mcp) as client:
        listed = (await client.list_tools()).tools[0]
        result = await client.call_tool("orders", {"status": "open", "limit": 3})
    assert listed.title == "Orders" and listed.output_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    assert result.structured_content == {"n": 1}
    assert seen == [{"status": "open", "limit": 3, "customer_id": "limit-3"}]


def test_check_and_graph_show_the_hidden_argument() -> None:
    mcp = recording_server([], customer_id=Resolve(current_customer))
    tool = mcp.registered_tool("get_orders")
    assert isinstance(tool, BridgedTool) and "customer_id" not in tool.signature.argument_names
    text = graph(mcp)
    assert "customer_id" in text and "current_customer" in text
    assert "1 resolver" in check(mcp)


async def test_dependency_overrides_reach_a_bridged_tool() -> None:
    seen: list[dict[str, Any]] = []
    mcp = recording_server(seen, customer_id=Resolve(current_customer))
    mcp.dependency_overrides[current_customer] = lambda: "overridden"
    async with Client(mcp) as client:
        await client.call_tool("get_orders", {"status": "open"})
    assert seen == [{"status": "open", "customer_id": "overridden"}]


def test_bad_declarations_fail_at_registration() -> None:
    async def call(arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        return {"content": []}

    with pytest.raises(InvalidSignature, match="hides 'customerid', which its input schema does not have"):
        bridged_tool("t", SCHEMA, call, hide={"customerid": Resolve(current_customer)})
    with pytest.raises(InvalidSignature, match="must be Resolve"):
        bridged_tool("t", SCHEMA, call, hide={"customer_id": current_customer})  # type: ignore[dict-item]
    with pytest.raises(InvalidSignature, match="type 'object'"):
        bridged_tool("t", {"type": "string"}, call)

    def needs_unknown(nobody: str) -> str:
        return nobody

    with pytest.raises(InvalidSignature, match="cannot classify parameter 'nobody'"):
        bridged_tool("t", SCHEMA, call, hide={"customer_id": Resolve(needs_unknown)})


async def test_a_call_returning_something_else_is_a_tool_error() -> None:
    async def call(arguments: dict[str, Any], context: Context) -> Any:
        return "just text"

    mcp = MCPServer(tools=[bridged_tool("t", {"type": "object"}, call)])
    async with Client(mcp) as client:
        result = await client.call_tool("t", {})
    assert result.is_error and "not a CallToolResult" in result.content[0].text  # type: ignore[union-attr]
