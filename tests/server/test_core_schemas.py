"""Tool schemas as a client sees them: input schemas from the signature, output schemas from the return type.

Listed through our Client in memory (the JSON round trip included), and each
`structuredContent` checked against its tool's `outputSchema` with
jsonschema, so a schema that does not describe the data fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import jsonschema
import pytest
from pydantic import BaseModel, Field

from conftest import load_module
from mcp_resolve import Client, Context, MCPServer, Resolve
from servers.raw_stdio import EVERYTHING_CORE

pytestmark = pytest.mark.anyio

SEED_RESERVE_BOOK_SCHEMA = {
    "type": "object",
    "properties": {"title": {"title": "Title", "type": "string"}},
    "required": ["title"],
    "title": "reserve_bookArguments",
}


INVENTORY = {"Dune": 7, "Neuromancer": 0}


class Stock(BaseModel):
    title: str
    copies: int


async def check_stock(title: str) -> Stock:
    return Stock(title=title, copies=INVENTORY.get(title, 0))


class Item(BaseModel):
    sku: str = Field(description="Stock keeping unit")


def _seed_bookshop() -> MCPServer:
    """The dependencies-guide seed's server, verbatim apart from the import."""
    mcp = MCPServer("Bookshop")

    @mcp.tool()
    async def reserve_book(title: str, stock: Annotated[Stock, Resolve(check_stock)]) -> str:
        """Reserve a copy of a book."""
        if stock.copies == 0:
            return f"{title!r} is out of stock."
        return f"Reserved {title!r} ({stock.copies - 1} copies left)."

    return mcp


async def _tools(server: MCPServer) -> dict[str, dict[str, Any]]:
    async with Client(server) as client:
        listed = await client.list_tools()
    return {tool.name: tool.model_dump(by_alias=True, exclude_none=True) for tool in listed.tools}


async def test_reserve_book_lists_exactly_the_seed_schema() -> None:
    server = _seed_bookshop()
    tools = await _tools(server)
    assert tools["reserve_book"]["inputSchema"] == SEED_RESERVE_BOOK_SCHEMA
    assert tools["reserve_book"]["description"] == "Reserve a copy of a book."
    async with Client(server) as client:
        dune = await client.call_tool(
            "reserve_book", {"title": "Dune", "stock": {"title": "Dune", "copies": 0}}
        )
        neuromancer = await client.call_tool("reserve_book", {"title": "Neuromancer"})
    assert dune.content[0].type == "text" and dune.content[0].text == "Reserved 'Dune' (6 copies left)."
    assert (
        neuromancer.content[0].type == "text"
        and neuromancer.content[0].text == "'Neuromancer' is out of stock."
    )


async def test_a_context_parameter_never_appears_in_the_schema() -> None:
    # everything_core's reserve_book also takes `ctx: Context`: the schema is still the seed's
    tools = await _tools(load_module(EVERYTHING_CORE).mcp)
    assert tools["reserve_book"]["inputSchema"] == SEED_RESERVE_BOOK_SCHEMA
    assert tools["ask_name"]["inputSchema"] == {
        "type": "object",
        "properties": {},
        "title": "ask_nameArguments",
    }

    mcp = MCPServer("contexts")

    @mcp.tool()
    async def spelled(count: int, context: Context[Any, Any], *, extra: Context) -> str:
        return str(count)

    listed = await _tools(mcp)
    assert listed["spelled"]["inputSchema"] == {
        "type": "object",
        "properties": {"count": {"title": "Count", "type": "integer"}},
        "required": ["count"],
        "title": "spelledArguments",
    }


@dataclass
class Point:
    x: int
    y: int


OUTPUT_SCHEMAS = {
    "weather": {
        "type": "object",
        "properties": {
            "city": {"title": "City", "type": "string"},
            "celsius": {"title": "Celsius", "type": "number"},
        },
        "required": ["city", "celsius"],
        "title": "Weather",
    },
    "point": {
        "type": "object",
        "properties": {"x": {"title": "X", "type": "integer"}, "y": {"title": "Y", "type": "integer"}},
        "required": ["x", "y"],
        "title": "Point",
    },
    "book": {
        "type": "object",
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "pages": {"title": "Pages", "type": "integer"},
        },
        "required": ["title", "pages"],
        "title": "Book",
    },
    "add": {
        "type": "object",
        "properties": {"result": {"title": "Result", "type": "integer"}},
        "required": ["result"],
        "title": "addOutput",
    },
}

CALLS: dict[str, tuple[dict[str, Any], Any]] = {
    "weather": ({"city": "Oslo"}, {"city": "Oslo", "celsius": 21.5}),
    "point": ({"x": 3, "y": 4}, {"x": 3, "y": 4}),
    "book": ({"title": "Dune"}, {"title": "Dune", "pages": 412}),
    "add": ({"a": 1, "b": 2}, {"result": 3}),
    "greet": ({"name": "Bo"}, {"result": "Hello, Bo!"}),
}


async def test_output_schemas_for_model_dataclass_typeddict_and_primitive_returns() -> None:
    server = load_module(EVERYTHING_CORE).mcp
    tools = await _tools(server)
    for name, schema in OUTPUT_SCHEMAS.items():
        assert tools[name]["outputSchema"] == schema, name
    for content_tool in ("picture", "sound", "attachment"):
        assert "outputSchema" not in tools[content_tool]
    async with Client(server) as client:
        for name, (arguments, structured) in CALLS.items():
            result = await client.call_tool(name, arguments)
            assert result.structured_content == structured, name
            jsonschema.validate(result.structured_content, tools[name]["outputSchema"])
            assert result.content[0].type == "text"


async def test_container_and_optional_returns() -> None:
    mcp = MCPServer("containers")

    @mcp.tool()
    async def numbers() -> list[int]:
        return [1, 2, 3]

    @mcp.tool()
    async def counts() -> dict[str, int]:
        return {"a": 1}

    @mcp.tool()
    async def maybe_item(found: bool) -> Item | None:
        return Item(sku="X-1") if found else None

    @mcp.tool()
    async def dataclass_list() -> list[Point]:
        return [Point(1, 2)]

    @mcp.tool(structured_output=False)
    async def unstructured() -> dict[str, int]:
        return {"a": 1}

    tools = await _tools(mcp)
    assert tools["numbers"]["outputSchema"]["properties"]["result"] == {
        "items": {"type": "integer"},
        "title": "Result",
        "type": "array",
    }
    assert tools["counts"]["outputSchema"] == {
        "additionalProperties": {"type": "integer"},
        "type": "object",
        "title": "countsDictOutput",  # as the official titles a dict[str, X] schema
    }
    assert "outputSchema" not in tools["unstructured"]
    expected = {
        ("numbers", None): {"result": [1, 2, 3]},
        ("counts", None): {"a": 1},
        ("maybe_item", True): {"result": {"sku": "X-1"}},
        ("maybe_item", False): {"result": None},
        ("dataclass_list", None): {"result": [{"x": 1, "y": 2}]},
    }
    async with Client(mcp) as client:
        for (name, found), structured in expected.items():
            result = await client.call_tool(name, {"found": found} if found is not None else {})
            assert result.structured_content == structured, name
            jsonschema.validate(result.structured_content, tools[name]["outputSchema"])
        plain = await client.call_tool("unstructured", {})
        assert plain.structured_content is None
        assert (
            plain.content[0].type == "text" and plain.content[0].text == '{\n  "a": 1\n}'
        )  # indented, as the official


async def test_argument_validation_failures_are_tool_errors_naming_the_field() -> None:
    async with Client(load_module(EVERYTHING_CORE).mcp, mode="legacy") as client:
        missing = await client.call_tool("point", {"x": 1})
        wrong = await client.call_tool("point", {"x": 1, "y": "up"})
        none = await client.call_tool("point")
    for result in (missing, wrong, none):
        assert result.is_error is True
        assert result.content[0].type == "text"
        assert result.content[0].text.startswith("Error executing tool point: invalid arguments: ")
    assert "y: Field required" in missing.content[0].text
    assert "x" not in missing.content[0].text.split("invalid arguments: ")[1].split(":")[0]
    assert "y: Input should be a valid integer" in wrong.content[0].text
    assert "x: Field required" in none.content[0].text and "y: Field required" in none.content[0].text


async def test_optional_context_parameter_is_injected_and_hidden() -> None:
    server = MCPServer("optional-context")

    @server.tool()
    async def stamp(a: int, ctx: Context | None = None) -> str:
        return f"{a}:{ctx is not None and ctx.request_id is not None}"

    async with Client(server) as client:
        schema = (await client.list_tools()).tools[0].input_schema
        result = await client.call_tool("stamp", {"a": 1})
    assert schema["properties"] == {"a": {"title": "A", "type": "integer"}}
    assert result.content[0].text == "1:True"  # type: ignore[union-attr]
