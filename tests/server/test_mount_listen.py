"""A mounted server's `notify_*` calls reach the parent's 2026-07-28 `subscriptions/listen` streams over HTTP.

The mounted server has no clients of its own; a client listening on the
parent hears the tool list change and the resource update, the URI under the
parent's prefix, tagged with its listen request's id.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from http_helpers import http_server
from mcp_resolve import MCPServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def _post(request_id: int, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    headers = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        "Accept": "application/json, text/event-stream",
    }
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
    return {"json": body, "headers": headers}


def composed() -> MCPServer:
    shop = MCPServer("Shop")

    @shop.tool()
    async def restock(title: str) -> int:
        """Add a tool to the shop at run time and announce it, and that a book's page changed."""
        shop.add_tool(lambda: "on sale", name=f"sale_{title}")
        told = await shop.notify_list_changed("tools")
        return told + await shop.notify_resource_updated(f"books://{title}")

    front = MCPServer("Front")
    front.mount(shop, prefix="shop")
    return front


async def test_a_mounted_servers_changes_reach_the_parents_listen_streams() -> None:
    async with http_server(composed().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        asked = {"toolsListChanged": True, "resourceSubscriptions": ["books://shop/dune"]}
        listen = _post(5, "subscriptions/listen", {"notifications": asked})
        async with http.stream("POST", url, **listen) as stream:
            lines = stream.aiter_lines()

            async def next_event() -> dict[str, Any]:
                with anyio.fail_after(5):
                    async for line in lines:
                        if line.startswith("data: ") and line[6:].strip():
                            return json.loads(line[6:])  # type: ignore[no-any-return]
                raise AssertionError("the stream ended")

            assert (await next_event())["method"] == "notifications/subscriptions/acknowledged"
            called = await http.post(
                url,
                **_post(
                    6, "tools/call", {"name": "shop_restock", "arguments": {"title": "dune"}}, "shop_restock"
                ),
            )
            assert called.json()["result"]["isError"] is False
            changed, updated = await next_event(), await next_event()
        assert changed["method"] == "notifications/tools/list_changed"
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"]["uri"] == "books://shop/dune"
        assert updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 5
        listed = await http.post(url, **_post(7, "tools/list", {}))
        assert {tool["name"] for tool in listed.json()["result"]["tools"]} == {
            "shop_restock",
            "shop_sale_dune",
        }
