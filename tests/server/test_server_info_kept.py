"""`serverInfo` is remembered between results, and never goes stale or leaks a change between them.

Every 2026-07-28 result carries the server's `serverInfo`; `MCPServer` keeps
the dict it made rather than building a model per result. What a result
carries must still follow the server's fields as they are now, and a result
whose `serverInfo` someone changes must not change the next one's.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from mcp_types import SERVER_INFO_META_KEY, Icon

from mcp_resolve import MCPServer
from mcp_resolve.transports.memory import connect_in_memory
from servers.raw_stdio import modern_meta

pytestmark = pytest.mark.anyio


async def _server_info_of_a_call(server: MCPServer) -> dict[str, Any]:
    """The `serverInfo` of one 2026-07-28 `tools/call` answered over an in-memory pipe."""
    ids = itertools.count(1)
    async with connect_in_memory(server) as pipe:
        request_id = next(ids)
        params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": modern_meta()}
        await pipe.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        while True:
            reply = await pipe.receive()
            if reply.get("id") == request_id and "method" not in reply:
                break
    assert reply["result"]["structuredContent"] == {"result": "hi"}
    info: dict[str, Any] = reply["result"]["_meta"][SERVER_INFO_META_KEY]
    return info


def _echo_server() -> MCPServer:
    mcp = MCPServer("first", version="1.0")

    @mcp.tool()
    async def echo(text: str) -> str:
        return text

    return mcp


async def test_a_result_carries_the_fields_as_they_are_at_the_call() -> None:
    mcp = _echo_server()
    assert await _server_info_of_a_call(mcp) == {"name": "first", "version": "1.0"}
    mcp.name, mcp.version, mcp.title, mcp.website_url = "second", "2.0", "Second", "https://example.com"
    assert await _server_info_of_a_call(mcp) == {
        "name": "second",
        "version": "2.0",
        "title": "Second",
        "websiteUrl": "https://example.com",
    }
    mcp.title = None
    assert await _server_info_of_a_call(mcp) == {
        "name": "second",
        "version": "2.0",
        "websiteUrl": "https://example.com",
    }


async def test_a_changed_result_does_not_change_the_next_one() -> None:
    mcp = _echo_server()
    first = mcp.server_info()
    first["name"] = "tampered"
    first["extra"] = "added"
    assert mcp.server_info() == {"name": "first", "version": "1.0"}
    assert await _server_info_of_a_call(mcp) == {"name": "first", "version": "1.0"}
    assert mcp.server_info() is not mcp.server_info()


async def test_icons_changed_in_place_are_seen() -> None:
    mcp = MCPServer("iconic", icons=[Icon(src="https://example.com/a.png")])
    assert mcp.server_info()["icons"] == [{"src": "https://example.com/a.png"}]
    assert mcp.icons is not None
    mcp.icons[0].src = "https://example.com/b.png"
    assert mcp.server_info()["icons"] == [{"src": "https://example.com/b.png"}]
    mcp.icons = None
    assert mcp.server_info() == {"name": "iconic", "version": "0.1.0"}
