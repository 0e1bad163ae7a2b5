"""A real FastAPI application on uvicorn, bridged by `from_openapi`, driven by the official client over HTTP.

Two servers on loopback: the order desk (tests/openapi_app.py, checking a
bearer token) and our MCP server built from the description the desk
serves at /openapi.json. The official `mcp` client calls tools over our
streamable HTTP, on both eras; every call crosses a real socket twice.
"""

from __future__ import annotations

from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from http_helpers import http_server
from mcp_resolve import Context, MCPServer, Resolve
from openapi_app import TOKEN, build_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


def current_customer(ctx: Context) -> str:
    """Stands for the caller's identity (a token claim, a session): never the model's choice."""
    return "cust-42"


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_official_client_calls_a_fastapi_app_through_from_openapi(mode: str, version: str) -> None:
    async with http_server(build_app()) as api:
        async with httpx.AsyncClient() as fetch:
            spec = (await fetch.get(f"{api}/openapi.json")).json()
        upstream = httpx.AsyncClient(base_url=api, headers={"Authorization": f"Bearer {TOKEN}"})
        mcp = MCPServer.from_openapi(
            spec, upstream, hide={"customer_id": Resolve(current_customer)}, forward_headers=["x-request-id"]
        )
        async with upstream, http_server(mcp.streamable_http_app()) as base:
            http = create_mcp_http_client(headers={"x-request-id": "trace-9"})
            async with (
                http,
                OfficialClient(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client,
            ):  # type: ignore[arg-type]
                assert client.protocol_version == version
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert "customer_id" not in tools["list_orders"].input_schema["properties"]
                assert tools["list_orders"].output_schema["properties"]["result"]["type"] == "array"

                # The hidden argument: the model's value is dropped, the resolver's reaches the API.
                listed = await client.call_tool("list_orders", {"customer_id": "cust-7", "limit": 5})
                assert not listed.is_error
                assert [o["id"] for o in listed.structured_content["result"]] == [2, 1]

                # A selected incoming header travels upstream; the API echoes it in the note.
                order = await client.call_tool("get_order", {"order_id": 3})
                assert order.structured_content["note"] == "request trace-9"
                assert order.structured_content["customer"]["address"] is None

                made = await client.call_tool("create_order", {"items": [{"sku": "tea", "quantity": 3}]})
                assert made.structured_content["customer"]["id"] == "cust-42"
                assert made.structured_content["items"] == [{"sku": "tea", "quantity": 3}]

                missing = await client.call_tool("get_order", {"order_id": 404})
                assert missing.is_error and "HTTP 404 Not Found" in _text(missing)
                crashed = await client.call_tool("crash", {})
                assert crashed.is_error and "HTTP 500" in _text(crashed) and TOKEN not in _text(crashed)


async def test_without_the_bearer_token_the_api_refuses_and_the_tool_says_so() -> None:
    async with http_server(build_app()) as api:
        async with httpx.AsyncClient() as fetch:
            spec = (await fetch.get(f"{api}/openapi.json")).json()
        async with (
            httpx.AsyncClient(base_url=api) as upstream,
            http_server(MCPServer.from_openapi(spec, upstream).streamable_http_app()) as base,
            OfficialClient(f"{base}/mcp", mode="legacy") as client,
        ):
            refused = await client.call_tool("get_order", {"order_id": 1})
            open_route = await client.call_tool("category_tree", {})
    assert refused.is_error and "HTTP 401 Unauthorized" in _text(refused)
    assert "missing or wrong bearer token" in _text(refused)
    assert open_route.structured_content["children"][0]["children"] == [{"name": "green", "children": []}]
