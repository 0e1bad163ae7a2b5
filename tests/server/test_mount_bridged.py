"""Mounting bridged tools (OpenAPI operations, `bridged_tool`): their results and `hide=` survive the mount.

A mounted bridged tool converts its result as the bridge does (the wire dict
as it is: `structuredContent` kept, an upstream `isError` kept), and a
mount's `hide=` takes one of its schema arguments like a function tool's.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcp_resolve import Client, Context, MCPServer, Resolve
from mcp_resolve.bridges import bridged_tool

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/customers/{customer_id}": {
            "get": {
                "operationId": "get_customer",
                "parameters": [
                    {"name": "customer_id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"id": {"type": "string"}}}
                            }
                        },
                    }
                },
            }
        }
    },
}


def api(seen: list[str]) -> MCPServer:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json={"id": request.url.path.rsplit("/", 1)[1]})

    client = httpx.AsyncClient(base_url="https://api.example", transport=httpx.MockTransport(handler))
    return MCPServer.from_openapi(SPEC, client=client)


def alice() -> str:
    return "alice"


@pytest.mark.parametrize("mode", MODES)
async def test_a_mounted_openapi_tool_keeps_its_structured_result(mode: str) -> None:
    front = MCPServer("Front")
    front.mount(api([]), prefix="api")
    async with Client(front, mode=mode) as client:
        result = await client.call_tool("api_get_customer", {"customer_id": "7"})
    assert not result.is_error
    assert result.structured_content == {"id": "7"}
    assert result.content[0].text == '{"id":"7"}'


@pytest.mark.parametrize("mode", MODES)
async def test_hide_on_a_mounted_openapi_tool_fills_it_from_the_parent(mode: str) -> None:
    seen: list[str] = []
    guarded = MCPServer("Guarded")
    guarded.mount(api(seen), prefix="api", hide={"customer_id": Resolve(alice)})
    async with Client(guarded, mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.input_schema["properties"] == {} and "required" not in tool.input_schema
        result = await client.call_tool("api_get_customer", {"customer_id": "bob"})
    assert not result.is_error and result.structured_content == {"id": "alice"}
    assert seen == ["/customers/alice"]


async def relay(arguments: dict[str, Any], context: Context) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "upstream failed"}], "isError": True}


@pytest.mark.parametrize("mode", MODES)
async def test_a_mounted_bridged_tools_upstream_error_stays_an_error(mode: str) -> None:
    child = MCPServer("Child")
    child.add_tool(bridged_tool("bridged", {"type": "object", "properties": {}}, relay))
    parent = MCPServer("Parent")
    parent.mount(child, prefix="c")
    async with Client(parent, mode=mode) as client:
        result = await client.call_tool("c_bridged", {})
    assert result.is_error and result.content[0].text == "upstream failed"
