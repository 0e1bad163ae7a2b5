"""OpenAPI operations as tools, resources and templates: `from_fastapi(app)` in process, `from_openapi(spec)`.

The FastAPI order desk (tests/openapi_app.py) is called through httpx's ASGI
transport, so every request really goes through FastAPI's routing,
validation and its bearer check; our Client drives the server in memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_resolve import Client, Context, InvalidSignature, MCPServer, Resolve
from mcp_resolve.bridges import BridgedTool
from mcp_resolve.bridges.openapi import MCPType, RouteMap, openapi_components
from mcp_resolve.cli._check import check
from mcp_resolve.cli._graph import graph
from openapi_app import TOKEN, build_app

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
TWILIO = Path(__file__).parent / "data" / "twilio_conversations_v1.json"


def desk(token: str | None = TOKEN, **options: Any) -> MCPServer:
    app = build_app()
    headers = {"authorization": f"Bearer {token}"} if token else {}
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://desk", headers=headers
    )
    return MCPServer.from_fastapi(app, client=client, **options)


def current_customer(ctx: Context) -> str:
    return "cust-42"


async def test_operations_become_tools_with_their_parameters_and_output_schemas() -> None:
    async with Client(desk()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= {
        "list_orders",
        "get_order",
        "create_order",
        "add_note",
        "delete_order",
        "category_tree",
    }
    listing = tools["list_orders"]
    assert set(listing.input_schema["properties"]) == {"customer_id", "status", "limit"}
    assert listing.input_schema["required"] == ["customer_id"]
    assert (
        listing.description == "List Orders\n\nThe orders of one customer, newest first."
    )  # summary, description
    # An array answer is wrapped (MCP output schemas are objects); its $refs live in $defs.
    assert listing.output_schema["required"] == ["result"]
    assert listing.output_schema["properties"]["result"]["items"] == {"$ref": "#/$defs/Order"}
    assert set(listing.output_schema["$defs"]) == {"Order", "Customer", "Address", "Item"}
    # A header parameter keeps its wire name; an `Authorization` parameter is ignored, as OpenAPI says.
    assert set(tools["get_order"].input_schema["properties"]) == {"order_id", "x-request-id"}
    assert tools["get_order"].annotations.read_only_hint is True
    assert tools["delete_order"].annotations.destructive_hint is True
    # A JSON body's properties sit beside the parameters; 3.1 schemas pass unchanged (anyOf with null).
    created = tools["create_order"].input_schema
    assert set(created["properties"]) == {"customer_id", "items", "note"}
    assert created["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert created["$defs"]["Item"]["properties"]["quantity"]["minimum"] == 1
    # A path parameter and a body property with one name: the body keeps it, the parameter is renamed.
    assert set(tools["add_note"].input_schema["properties"]) == {"order_id__path", "order_id", "text"}
    # A recursive model stays finite: the tree's children point back at its definition.
    tree = tools["category_tree"].output_schema
    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    assert tree["$defs"]["Category"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}


@pytest.mark.parametrize("mode", ERAS)
async def test_calls_reach_the_api_with_path_query_header_and_body(mode: str) -> None:
    async with Client(desk(), mode=mode) as client:
        listed = await client.call_tool("list_orders", {"customer_id": "cust-42", "status": "open"})
        assert not listed.is_error
        assert [o["id"] for o in listed.structured_content["result"]] == [1]
        one = await client.call_tool("get_order", {"order_id": 3, "x-request-id": "r-1"})
        assert one.structured_content["customer"]["name"] == "Bob"
        assert one.structured_content["note"] == "request r-1"
        made = await client.call_tool(
            "create_order",
            {"customer_id": "cust-7", "items": [{"sku": "mug", "quantity": 2}], "note": "gift"},
        )
        assert made.structured_content["id"] == 4 and made.structured_content["note"] == "gift"
        again = await client.call_tool("list_orders", {"customer_id": "cust-7"})
        assert [o["id"] for o in again.structured_content["result"]] == [4, 3]
        noted = await client.call_tool(
            "add_note", {"order_id__path": 2, "order_id": "body-side", "text": "hi"}
        )
        assert noted.structured_content == {"path_order_id": "2", "body_order_id": "body-side", "text": "hi"}
        # A path value is encoded whole (%2F): it cannot climb to another route (GET /orders/1 answers 200).
        sneaky = await client.call_tool("list_orders", {"customer_id": "../../orders/1?"})
        assert sneaky.is_error and 'HTTP 404 Not Found: {"detail":"Not Found"}' in sneaky.content[0].text


async def test_query_arrays_repeat_their_key_and_cookies_are_sent() -> None:
    async with Client(desk()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["echo"].input_schema["properties"]["tag"]["type"] == "array"
        echoed = await client.call_tool("echo", {"tag": ["a", "b c"], "session": "s=1/x:y"})
        bare = await client.call_tool("echo", {"tag": ["z"], "session": None})
    assert echoed.structured_content == {"tag": ["a", "b c"], "session": "s=1/x:y"}
    assert bare.structured_content == {"tag": ["z"], "session": None}


async def test_api_errors_become_tool_errors_with_the_status() -> None:
    async with Client(desk()) as client:
        missing = await client.call_tool("get_order", {"order_id": 99})
        invalid = await client.call_tool("list_orders", {"customer_id": "c", "limit": 500})
    assert (
        missing.is_error and "GET /orders/{order_id} answered HTTP 404 Not Found" in missing.content[0].text
    )
    assert "no order 99" in missing.content[0].text
    assert invalid.is_error and "HTTP 422" in invalid.content[0].text
    async with Client(desk(token=None)) as client:
        refused = await client.call_tool("get_order", {"order_id": 1})
    assert refused.is_error and "HTTP 401" in refused.content[0].text


@pytest.mark.parametrize("mode", ERAS)
async def test_hidden_argument_comes_from_the_resolver_and_a_client_value_is_ignored(mode: str) -> None:
    mcp = desk(hide={"customer_id": Resolve(current_customer)})
    async with Client(mcp, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "customer_id" not in tools["list_orders"].input_schema["properties"]
        assert "customer_id" not in tools["list_orders"].input_schema.get("required", [])
        assert "customer_id" not in tools["create_order"].input_schema["properties"]  # a body property too
        result = await client.call_tool("list_orders", {"customer_id": "cust-7"})
        made = await client.call_tool(
            "create_order", {"customer_id": "cust-7", "items": [{"sku": "x", "quantity": 1}]}
        )
    assert {o["customer"]["id"] for o in result.structured_content["result"]} == {"cust-42"}
    assert made.structured_content["customer"]["id"] == "cust-42"


def test_check_and_graph_show_the_hidden_openapi_argument() -> None:
    mcp = desk(hide={"customer_id": Resolve(current_customer)})
    tool = mcp.registered_tool("list_orders")
    assert isinstance(tool, BridgedTool) and set(tool.hidden) == {"customer_id"}
    text = graph(mcp, "list_orders")
    assert "customer_id" in text and "current_customer" in text
    assert "resolver" in check(mcp)


def test_a_hidden_name_no_operation_has_is_refused() -> None:
    with pytest.raises(InvalidSignature, match="'customerid', which no tool has"):
        desk(hide={"customerid": Resolve(current_customer)})


async def test_route_maps_choose_resource_template_or_exclude() -> None:
    maps = [
        RouteMap(MCPType.EXCLUDE, tags={"ops"}),
        RouteMap(MCPType.EXCLUDE, methods=["DELETE"]),
        RouteMap(MCPType.RESOURCE_TEMPLATE, methods=["GET"], pattern=r"\{order_id\}$"),
        RouteMap(MCPType.RESOURCE, methods=["GET"], pattern=r"^/categories$"),
    ]
    async with Client(desk(route_maps=maps)) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        assert tools == {"list_orders", "create_order", "add_note"}
        assert [str(r.uri) for r in resources] == ["resource://category_tree"]
        assert [t.uri_template for t in templates] == ["resource://get_order/{order_id}"]
        read = await client.read_resource("resource://get_order/2")
        tree = await client.read_resource("resource://category_tree")
    assert json.loads(read.contents[0].text)["status"] == "paid"
    assert read.contents[0].mime_type == "application/json"
    assert json.loads(tree.contents[0].text)["children"][0]["name"] == "tea"


def test_openapi_30_nullable_and_bounds_become_2020_12() -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/things/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "put": {
                    "operationId": "put thing!",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}},
                    },
                    "responses": {"200": {"$ref": "#/components/responses/Ok"}},
                },
            }
        },
        "components": {
            "schemas": {
                "Thing": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "label": {"type": "string", "nullable": True, "example": "cup"},
                        "size": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                        "kind": {"$ref": "#/components/schemas/Kind"},
                    },
                },
                "Kind": {"type": "string", "enum": ["a", "b"], "nullable": True},
            },
            "responses": {
                "Ok": {"description": "ok", "content": {"application/json": {"schema": {"type": "string"}}}}
            },
        },
    }
    (tool,) = openapi_components(spec, httpx.AsyncClient(base_url="http://unused"))
    assert isinstance(tool, BridgedTool)
    definition = tool.definition()
    assert definition["name"] == "put_thing"
    schema = definition["inputSchema"]
    assert schema["required"] == ["id", "size"]
    assert schema["properties"]["label"] == {"type": ["string", "null"], "examples": ["cup"]}
    assert schema["properties"]["size"] == {"type": "number", "exclusiveMinimum": 0}
    assert schema["$defs"]["Kind"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert definition["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "string"}},
        "required": ["result"],
    }


def test_a_large_public_description_converts() -> None:
    """Twilio's Conversations API (MIT, tests/bridges/data/README.md): 103 operations, form bodies."""
    spec = json.loads(TWILIO.read_text())
    mcp = MCPServer.from_openapi(spec, httpx.AsyncClient(base_url="http://unused"))
    tools = mcp.registry.tools
    operations = sum(
        1
        for item in spec["paths"].values()
        for method in item
        if method in ("get", "post", "put", "delete", "patch")
    )
    assert len(tools) == operations == 103
    assert mcp.name == spec["info"]["title"]
    update = tools["UpdateConversation"].definition()["inputSchema"]
    assert update["required"] == ["Sid"]
    assert {"FriendlyName", "X-Twilio-Webhook-Enabled", "Attributes"} <= set(update["properties"])
    assert update["properties"]["X-Twilio-Webhook-Enabled"] == {
        "$ref": "#/$defs/conversation_enum_webhook_enabled_type",
        "description": "The X-Twilio-Webhook-Enabled HTTP request header",
    }
