"""The legacy HTTP+SSE transport, driven by the official client (`mcp.client.sse.sse_client`) over uvicorn.

The same server is built on the official SDK and on ours, each served with
its `sse_app()` on loopback, and the official client must see the same
answers from both: a resolver's elicitation round trip, progress, a tool's
error and an unknown tool. Then what is ours alone: a 2026-07-28 request is
refused on this transport, a server-wide notification reaches the session
on its stream, `mount_path`, and the bearer check of a protected server.
"""

from __future__ import annotations

from typing import Annotated, Any

import httpx
import mcp.types as official_types
import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.server.mcpserver import Context as OfficialContext
from mcp.server.mcpserver import Elicit as OfficialElicit
from mcp.server.mcpserver import MCPServer as OfficialServer
from mcp.server.mcpserver import Resolve as OfficialResolve
from pydantic import BaseModel

from http_helpers import http_server
from mcp_resolve import Context, Elicit, MCPServer, Resolve
from mcp_resolve.auth.tokens import AccessToken, AuthSettings
from mcp_resolve.exceptions import ToolError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class Colour(BaseModel):
    name: str


def define(mcp: Any, context: Any, resolve: Any, elicit: Any, tool_error: type[Exception]) -> Any:
    async def ask_colour() -> Any:
        return elicit("Favourite colour?", Colour)

    async def paint(wall: str, colour: Any) -> str:
        """Paint a wall in the person's colour."""
        return f"{wall} painted {colour.name}"

    paint.__annotations__ = {"wall": str, "colour": Annotated[Colour, resolve(ask_colour)], "return": str}
    mcp.tool()(paint)

    async def count(n: int, ctx: Any) -> str:
        """Count up, reporting progress."""
        for i in range(n):
            await ctx.report_progress(i + 1, n, f"step {i + 1}")
        return f"counted {n}"

    count.__annotations__ = {"n": int, "ctx": context, "return": str}
    mcp.tool()(count)

    @mcp.tool()
    def refuse(reason: str) -> str:
        """Always fails."""
        raise tool_error(f"refused: {reason}")

    return mcp


def ours() -> MCPServer:
    return define(MCPServer("sse-desk"), Context, Resolve, Elicit, ToolError)


def theirs() -> OfficialServer:
    from mcp.server.mcpserver.exceptions import ToolError as OfficialToolError

    return define(
        OfficialServer("sse-desk"), OfficialContext, OfficialResolve, OfficialElicit, OfficialToolError
    )


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def observe(base: str) -> dict[str, Any]:
    """What the official client sees over SSE: every answer as a dict, progress and questions included."""
    asked: list[str] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_elicit(_context: Any, params: Any) -> official_types.ElicitResult:
        asked.append(params.message)
        return official_types.ElicitResult(action="accept", content={"name": "teal"})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with (
        sse_client(f"{base}/sse") as (read, write),
        ClientSession(read, write, elicitation_callback=on_elicit) as session,
    ):
        init = await session.initialize()
        tools = await session.list_tools()
        painted = await session.call_tool("paint", {"wall": "north"})
        counted = await session.call_tool("count", {"n": 3}, progress_callback=on_progress)
        refused = await session.call_tool("refuse", {"reason": "no"})
        try:
            unknown: Any = dump(await session.call_tool("nope", {}))
        except Exception as exc:  # the official client raises its MCPError for a JSON-RPC error
            unknown = {"error": exc.error.code, "message": exc.error.message}  # type: ignore[attr-defined]
    return {
        "version": init.protocol_version,
        "tools": sorted(t.name for t in tools.tools),
        "painted": dump(painted),
        "asked": asked,
        "counted": dump(counted),
        "progress": progress,
        "refused": dump(refused),
        "unknown": unknown,
    }


async def test_the_official_sse_client_sees_the_same_answers_from_both_servers() -> None:
    async with http_server(theirs().sse_app()) as base:
        expected = await observe(base)
    async with http_server(ours().sse_app()) as base:
        got = await observe(base)
    # An unknown tool: the official answers a tool result with isError, ours the JSON-RPC error 2025-11-25
    # asks for (-32602, docs/porting.md); the transport carries either.
    assert expected.pop("unknown")["isError"] is True
    assert got.pop("unknown") == {"error": -32602, "message": "Unknown tool: nope"}
    assert got == expected
    assert got["painted"]["content"][0]["text"] == "north painted teal"
    assert got["asked"] == ["Favourite colour?"]
    assert got["progress"] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert got["refused"]["isError"] is True


async def test_a_server_wide_notification_reaches_the_session_on_its_stream() -> None:
    mcp = ours()

    @mcp.tool()
    async def grow() -> int:
        mcp.add_tool(lambda: "new", name="fresh")
        return await mcp.notify_list_changed("tools")

    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, official_types.ServerNotification) or hasattr(message, "method"):
            heard.append(getattr(message, "method", ""))

    async with (
        http_server(mcp.sse_app()) as base,
        sse_client(f"{base}/sse") as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        told = await session.call_tool("grow", {})
        assert told.structured_content == {"result": 1}
        assert "fresh" in [t.name for t in (await session.list_tools()).tools]
    assert "notifications/tools/list_changed" in heard


class Opened:
    """A GET stream opened by hand: the response, kept open, and the URL its `endpoint` event names."""

    def __init__(self, response: httpx.Response, lines: Any, endpoint: str) -> None:
        self.response, self.lines, self.endpoint = response, lines, endpoint

    async def aclose(self) -> None:
        await self.response.aclose()


async def _endpoint(http: httpx.AsyncClient, url: str, headers: dict[str, str] | None = None) -> Opened:
    response = await http.send(http.build_request("GET", url, headers=headers), stream=True)
    lines = response.aiter_lines()
    while True:
        line = await lines.__anext__()
        if line.startswith("data: "):
            return Opened(response, lines, line[6:])


async def test_mount_path_and_root_path_name_the_full_message_url() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    mounted = Starlette(routes=[Mount("/legacy", app=ours().sse_app())])
    async with http_server(mounted) as base, httpx.AsyncClient(timeout=10) as http:
        opened = await _endpoint(http, f"{base}/legacy/sse")
        endpoint = opened.endpoint
        await opened.aclose()
    assert endpoint.startswith("/legacy/messages/?session_id=")
    async with (
        http_server(ours().sse_app(mount_path="/github")) as base,
        httpx.AsyncClient(timeout=10) as http,
    ):
        opened = await _endpoint(http, f"{base}/sse")
        endpoint = opened.endpoint
        await opened.aclose()
    assert endpoint.startswith("/github/messages/?session_id=")


class StaticVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id=token, scopes=()) if token in ("alice", "bob") else None


async def test_a_protected_server_checks_the_token_on_the_stream_and_on_every_post() -> None:
    settings = AuthSettings(issuer_url="http://127.0.0.1:9/", resource_server_url="http://127.0.0.1:9/sse")
    mcp = define(
        MCPServer("guarded", token_verifier=StaticVerifier(), auth=settings),
        Context,
        Resolve,
        Elicit,
        ToolError,
    )
    async with http_server(mcp.sse_app()) as base, httpx.AsyncClient(timeout=10) as http:
        refused = await http.get(f"{base}/sse")
        assert refused.status_code == 401 and "resource_metadata" in refused.headers["www-authenticate"]
        assert (await http.get(f"{base}/.well-known/oauth-protected-resource/sse")).status_code == 200
        alice = {"authorization": "Bearer alice"}
        opened = await _endpoint(http, f"{base}/sse", alice)
        endpoint = opened.endpoint
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert (await http.post(f"{base}{endpoint}", json=ping)).status_code == 401
        # another caller's valid token does not reach alice's session: it is answered as unknown
        assert (
            await http.post(f"{base}{endpoint}", json=ping, headers={"authorization": "Bearer bob"})
        ).status_code == 404
        assert (await http.post(f"{base}{endpoint}", json=ping, headers=alice)).status_code == 202
        await opened.aclose()
    async with (
        http_server(mcp.sse_app()) as base,
        sse_client(f"{base}/sse", headers=alice) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert "paint" in [t.name for t in (await session.list_tools()).tools]
