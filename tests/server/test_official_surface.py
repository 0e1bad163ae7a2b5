"""The official `MCPServer` and `Context` names a port calls directly, compared with the official server.

Each server is written once and built on both SDKs (`mcp.server.mcpserver`
and ours); the direct calls tests make (`list_tools`, `read_resource`,
`get_prompt`, `Context(mcp_server=...)`, ...) must give the same answers.
Where ours does more (a `ctx.notify_*` reaching handshake-era sessions too),
the test says so.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.mcpserver import Context as OfficialContext
from mcp.server.mcpserver import MCPServer as OfficialServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError as OfficialNotFound
from mcp.server.mcpserver.prompts import Prompt as OfficialPrompt
from mcp_types import InputRequiredResult
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount

from http_helpers import http_server
from mcp_resolve import Client, Context, MCPServer
from mcp_resolve.auth.tokens import AccessToken, AuthSettings
from mcp_resolve.exceptions import ResourceNotFoundError
from mcp_resolve.prompts import Prompt

pytestmark = pytest.mark.anyio


def define(mcp: Any, context: Any) -> Any:
    """The same offer on either SDK's server, with that SDK's Context class for annotations."""

    @mcp.tool()
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    async def peek(uri: str, ctx: Any) -> str:
        """Read one of the server's resources from inside a tool."""
        return repr([(c.content, c.mime_type) for c in await ctx.read_resource(uri)])

    peek.__annotations__ = {"uri": str, "ctx": context, "return": str}  # each SDK's own Context
    mcp.tool()(peek)

    @mcp.resource("note://a", mime_type="text/plain", description="A note")
    def note() -> str:
        return "hello"

    @mcp.resource("blob://b", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01"

    @mcp.resource("user://{id}/profile")
    def profile(id: str) -> str:
        """A profile."""
        return f"user {id}"

    @mcp.prompt()
    def greet(name: str, tone: str = "warm") -> str:
        """Greet someone."""
        return f"Hello {name}, {tone}"

    return mcp


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def both() -> tuple[MCPServer, OfficialServer]:
    return define(MCPServer("surface"), Context), define(OfficialServer("surface"), OfficialContext)


@pytest.mark.parametrize(
    "listing", ["list_tools", "list_resources", "list_resource_templates", "list_prompts"]
)
async def test_direct_listings_are_the_official_models_with_the_same_content(listing: str) -> None:
    ours, theirs = both()
    got = await getattr(ours, listing)()
    expected = await getattr(theirs, listing)()
    assert [dump(item) for item in got] == [dump(item) for item in expected]
    assert got and type(got[0]).__name__ == type(expected[0]).__name__


@pytest.mark.parametrize("uri", ["note://a", "blob://b", "user://7/profile"])
async def test_direct_read_resource_gives_the_official_contents(uri: str) -> None:
    ours, theirs = both()
    got = [(c.content, c.mime_type, c.meta) for c in await ours.read_resource(uri)]  # type: ignore[union-attr]
    expected = [(c.content, c.mime_type, c.meta) for c in await theirs.read_resource(uri)]  # type: ignore[union-attr]
    assert got == expected


async def test_direct_read_of_an_unknown_uri_raises_not_found_as_the_official() -> None:
    ours, theirs = both()
    with pytest.raises(OfficialNotFound) as official:
        await theirs.read_resource("nope://x")
    with pytest.raises(ResourceNotFoundError) as raised:
        await ours.read_resource("nope://x")
    assert str(raised.value) == str(official.value) == "Unknown resource: nope://x"


async def test_direct_get_prompt_and_its_errors_match_the_official() -> None:
    ours, theirs = both()
    assert dump(await ours.get_prompt("greet", {"name": "Al"})) == dump(
        await theirs.get_prompt("greet", {"name": "Al"})
    )
    for server in (ours, theirs):
        with pytest.raises(ValueError, match=r"^Unknown prompt: nope$"):
            await server.get_prompt("nope")
        with pytest.raises(ValueError):
            await server.get_prompt("greet", {})


async def test_add_prompt_and_remove_prompt_as_the_official() -> None:
    ours, theirs = both()

    def bye(name: str) -> str:
        """Say goodbye."""
        return f"Bye {name}"

    ours.add_prompt(Prompt.from_function(bye))
    theirs.add_prompt(OfficialPrompt.from_function(bye))
    assert dump(await ours.get_prompt("bye", {"name": "x"})) == dump(
        await theirs.get_prompt("bye", {"name": "x"})
    )
    assert [p.name for p in await ours.list_prompts()] == [p.name for p in await theirs.list_prompts()]
    ours.remove_prompt("bye")
    theirs.remove_prompt("bye")
    assert [p.name for p in await ours.list_prompts()] == ["greet"]
    for server in (ours, theirs):
        with pytest.raises(ValueError, match=r"^Unknown prompt: bye$"):
            server.remove_prompt("bye")


async def test_a_context_built_with_mcp_server_calls_a_tool_that_reads_a_resource() -> None:
    ours, theirs = both()
    got = await ours.call_tool("peek", {"uri": "note://a"}, Context(mcp_server=ours))
    expected = await theirs.call_tool("peek", {"uri": "note://a"}, OfficialContext(mcp_server=theirs))
    assert dump(got) == dump(expected)
    assert Context(mcp_server=ours).mcp_server is ours
    with pytest.raises(ValueError, match="outside of a request"):
        _ = Context().mcp_server
    with pytest.raises(ValueError, match="outside of a request"):
        _ = OfficialContext().mcp_server


async def test_ctx_read_resource_of_an_input_required_template_raises_runtime_error() -> None:
    mcp = MCPServer("asks")

    @mcp.resource("ask://{x}")
    def ask(x: str) -> InputRequiredResult:
        return InputRequiredResult(input_requests={}, request_state="s")

    @mcp.tool()
    async def peek(ctx: Context) -> str:
        await ctx.read_resource("ask://1")
        return "unreachable"

    assert isinstance(await mcp.read_resource("ask://1"), InputRequiredResult)
    with pytest.raises(Exception) as raised:
        await mcp.call_tool("peek", {})
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert "ctx.read_resource() only returns content" in str(raised.value.__cause__)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_ctx_read_resource_inside_a_served_tool_on_both_eras(mode: str) -> None:
    ours, _ = both()
    async with Client(ours, mode=mode) as client:
        result = await client.call_tool("peek", {"uri": "user://9/profile"})
    assert result.content[0].text == "[('user 9', 'text/plain')]"  # type: ignore[union-attr]


def notifier() -> MCPServer:
    mcp = MCPServer("notifier")

    @mcp.resource("note://a", mime_type="text/plain")
    def note() -> str:
        return "a"

    @mcp.tool()
    async def changed(ctx: Context) -> str:
        await ctx.notify_tools_changed()
        await ctx.notify_prompts_changed()
        await ctx.notify_resources_changed()
        await ctx.notify_resource_updated("note://a")
        await ctx.close_sse_stream()  # nothing to close in memory or on a listen-era call: a no-op
        await ctx.close_standalone_sse_stream()
        return "told"

    return mcp


async def test_ctx_notify_reaches_a_handshake_era_session() -> None:
    heard: list[str] = []

    async def every(method: str, params: dict[str, Any]) -> None:
        heard.append(method)

    async with Client(notifier(), mode="legacy", notification_handler=every) as client:
        await client.request("resources/subscribe", {"uri": "note://a"})
        assert (await client.call_tool("changed")).content[0].text == "told"  # type: ignore[union-attr]
        with anyio.fail_after(5):
            while len(heard) < 4:
                await anyio.sleep(0.01)
    assert sorted(heard) == sorted(
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/resources/updated",
        ]
    )


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def modern(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": MODERN_META}}


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    found = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
        "Accept": "application/json, text/event-stream",
    }
    if name is not None:
        found["Mcp-Name"] = name
    return found


@pytest.mark.slow
async def test_ctx_notify_reaches_a_2026_listen_stream() -> None:
    asked = {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourcesListChanged": True,
        "resourceSubscriptions": ["note://a"],
    }
    async with http_server(notifier().streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        url = f"{base}/mcp"
        body = modern(1, "subscriptions/listen", {"notifications": asked})
        async with http.stream(
            "POST", url, json=body, headers=modern_headers("subscriptions/listen")
        ) as stream:
            lines = stream.aiter_lines()

            async def next_event() -> dict[str, Any]:
                with anyio.fail_after(5):
                    async for line in lines:
                        if line.startswith("data: ") and line[6:].strip():
                            return json.loads(line[6:])  # type: ignore[no-any-return]
                raise AssertionError("the stream ended")

            assert (await next_event())["method"] == "notifications/subscriptions/acknowledged"
            call = modern(2, "tools/call", {"name": "changed", "arguments": {}})
            reply = await http.post(url, json=call, headers=modern_headers("tools/call", "changed"))
            assert reply.json()["result"]["content"][0]["text"] == "told"
            heard = sorted([(await next_event())["method"] for _ in range(4)])
    assert heard == [
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/tools/list_changed",
    ]


def test_settings_carry_the_official_attribute_names() -> None:
    ours = MCPServer("s", debug=True, log_level="WARNING", dependencies=["x"], warn_on_duplicate_tools=False)
    theirs = OfficialServer(
        "s", debug=True, log_level="WARNING", dependencies=["x"], warn_on_duplicate_tools=False
    )
    for name in (
        "debug",
        "log_level",
        "dependencies",
        "warn_on_duplicate_tools",
        "warn_on_duplicate_resources",
        "warn_on_duplicate_prompts",
        "auth",
        "lifespan",
    ):
        assert getattr(ours.settings, name) == getattr(theirs.settings, name), name
    ours.settings.debug = False
    assert ours.debug is False
    assert MCPServer("t").settings.log_level == OfficialServer("t").settings.log_level == "INFO"
    ours.settings.port = 9123
    ours.settings.host = "127.0.0.2"
    assert ours.settings.run_options("streamable-http", {"streamable_http_path": "/x"}) == {
        "path": "/x",
        "host": "127.0.0.2",
        "port": 9123,
    }


def test_session_manager_exists_only_once_an_app_was_built_as_in_the_official() -> None:
    for server in (MCPServer("s"), OfficialServer("s")):
        with pytest.raises(RuntimeError):
            _ = server.session_manager


def official_style_app(mcp: Any) -> Starlette:
    """The official README's pattern: the MCP app mounted in a parent whose lifespan runs the session manager."""
    inner = mcp.streamable_http_app()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with mcp.session_manager.run():
            yield

    return Starlette(routes=[Mount("/api", app=inner)], lifespan=lifespan)


@pytest.mark.slow
async def test_session_manager_run_in_a_parent_lifespan_runs_the_server_lifespan() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: Any) -> Any:
        events.append("enter")
        yield {"db": "ready"}
        events.append("exit")

    mcp = MCPServer("mounted", lifespan=lifespan)

    @mcp.tool()
    def db(ctx: Context) -> str:
        return str(ctx.lifespan_context["db"])

    async with (
        http_server(official_style_app(mcp)) as base,
        Client(f"{base}/api/mcp", mode="legacy") as client,
    ):
        assert events == ["enter"]  # entered by the parent's lifespan, before any request
        assert (await client.call_tool("db")).content[0].text == "ready"  # type: ignore[union-attr]
    assert events == ["enter", "exit"]


def route_server(server: Any) -> Any:
    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "path": request.url.path})

    @server.custom_route("/hook", methods=["POST"], name="hook")
    async def hook(request: Request) -> Response:
        return JSONResponse({"got": (await request.json())["n"]})

    return server


async def _routes_answers(app: Any, mcp_path: str) -> list[Any]:
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        health = await http.get(f"{base}/health")
        hook = await http.post(f"{base}/hook", json={"n": 3})
        wrong = await http.get(f"{base}/hook")
        return [health.status_code, health.json(), hook.json(), wrong.status_code]


@pytest.mark.slow
async def test_custom_routes_answer_beside_the_mcp_endpoint_as_on_the_official() -> None:
    ours = route_server(MCPServer("routes"))
    theirs = route_server(OfficialServer("routes"))
    expected = await _routes_answers(theirs.streamable_http_app(), "/mcp")
    assert await _routes_answers(ours.streamable_http_app(), "/mcp") == expected
    assert await _routes_answers(ours.sse_app(), "/sse") == expected
    assert expected[:2] == [200, {"status": "ok", "path": "/health"}]


class StaticVerifier:
    """One known token: enough to tell a protected endpoint from an open route."""

    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="c", scopes=()) if token == "good" else None


def protected(name: str) -> MCPServer:
    settings = AuthSettings(issuer_url="http://127.0.0.1:9/", resource_server_url="http://127.0.0.1:9/mcp")
    return MCPServer(name, token_verifier=StaticVerifier(), auth=settings)


@pytest.mark.slow
async def test_custom_routes_are_outside_the_bearer_check_as_on_the_official() -> None:
    mcp = route_server(protected("guarded"))
    async with http_server(mcp.streamable_http_app()) as base, httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{base}/health")).json()["status"] == "ok"
        assert (await http.post(f"{base}/mcp", json={})).status_code == 401


def test_top_level_error_names_import_from_the_package_with_the_official_meaning() -> None:
    import mcp as official
    from mcp_types import ElicitRequestURLParams

    import mcp_resolve

    asked = [
        ElicitRequestURLParams(message="Sign in", url="https://example.com/consent", elicitation_id="e1")
    ]
    ours = mcp_resolve.UrlElicitationRequiredError(asked)
    theirs = official.UrlElicitationRequiredError(asked)
    assert isinstance(ours, mcp_resolve.MCPError)
    assert (ours.code, ours.message, ours.data) == (theirs.code, theirs.message, theirs.data)
    plain, reference = (
        mcp_resolve.MCPError(-32000, "busy", {"x": 1}),
        official.MCPError(-32000, "busy", {"x": 1}),
    )
    assert (plain.code, plain.message, plain.data) == (reference.code, reference.message, reference.data)
    for name in ("MCPError", "UrlElicitationRequiredError", "StdioServerParameters"):
        assert name in mcp_resolve.__all__ and hasattr(mcp_resolve, name)
