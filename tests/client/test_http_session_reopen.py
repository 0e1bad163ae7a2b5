"""A handshake-era session the server ended (HTTP 404) is reopened by the client, as 2025-11-25 requires."""

from __future__ import annotations

import httpx
import pytest

from http_helpers import http_server
from mcp_resolve import Client, MCPServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_client_reopens_a_session_the_server_ended() -> None:
    server = MCPServer("reopen")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with http_server(server.streamable_http_app()) as base:
        url = f"{base}/mcp"
        async with Client(url, mode="legacy") as client:
            assert (await client.call_tool("echo", {"text": "one"})).content[0].text == "one"  # type: ignore[union-attr]
            pipe = client._require_session().pipe
            first_session = pipe.session_id  # type: ignore[attr-defined]
            async with httpx.AsyncClient() as http:  # the server ends the session behind the client's back
                ended = await http.delete(
                    url, headers={"mcp-session-id": first_session, "mcp-protocol-version": "2025-11-25"}
                )
            assert ended.status_code == 204
            second = await client.call_tool("echo", {"text": "two"})
            assert second.content[0].text == "two"  # type: ignore[union-attr]
            assert pipe.session_id not in (None, first_session)  # type: ignore[attr-defined]
            third = await client.call_tool("echo", {"text": "three"})
            assert third.content[0].text == "three"  # type: ignore[union-attr]
