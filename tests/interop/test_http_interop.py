"""Streamable HTTP between real peers on 127.0.0.1: the official `mcp` client and server, and ours, in both eras.

Every server here is served by uvicorn on a free port; every client talks
real HTTP to it. `auto` must land on 2026-07-28 and `legacy` on 2025-11-25,
and the refund desk's six-call story must come out identically on both.
"""

from __future__ import annotations

import subprocess
from types import ModuleType
from typing import Annotated, Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import Elicit as OfficialElicit
from mcp.server.mcpserver import Resolve as OfficialResolve
from pydantic import BaseModel
from starlette.types import Receive, Scope, Send

from conftest import PYTHON, REFUND_DESK
from http_helpers import free_port, http_server, refund_answers, run_refund_trajectory
from mcp_resolve import Client, Context, MCPServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


def ours(base: str, mode: Any, **options: Any) -> Client:
    return Client(f"{base}/mcp", mode=mode, **options)


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def basics_server() -> MCPServer:
    """Tools (one streaming progress and logs), a resource, a template and a prompt."""
    mcp = MCPServer("http-basics")

    @mcp.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    async def count_up(steps: int, ctx: Context) -> str:
        """Report progress and log at each step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
            await ctx.info(f"step {step}")
        return f"counted to {steps}"

    @mcp.resource("note://greeting", mime_type="text/plain")
    def greeting() -> str:
        return "hello over http"

    @mcp.resource("note://users/{name}")
    def user(name: str) -> str:
        return f"user {name}"

    @mcp.prompt()
    def review(code: str) -> str:
        """Ask for a review."""
        return f"Review this: {code}"

    return mcp


async def _refund_call_elicit(answers: Any) -> Any:
    async def callback(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        return types.ElicitResult.model_validate(answers.answer(params.message))

    return callback


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_official_client_runs_the_refund_desk_over_http(
    refund_desk: ModuleType, mode: str, version: str
) -> None:
    answers = refund_answers()
    async with http_server(refund_desk.mcp.streamable_http_app()) as base:
        callback = await _refund_call_elicit(answers)
        async with OfficialClient(f"{base}/mcp", mode=mode, elicitation_callback=callback) as client:
            assert client.protocol_version == version
            tool, *_app_only = (await client.list_tools()).tools  # the receipt view's receipt_lines, restock
            assert tool.name == "refund_order"
            assert set(tool.input_schema["properties"]) == {"order_id", "reason"}
            assert sorted(tool.input_schema["required"]) == ["order_id", "reason"]
            await run_refund_trajectory(
                lambda arguments: client.call_tool("refund_order", arguments), answers
            )


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_official_client_tools_resources_prompts_over_http(mode: str, version: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with (
        http_server(basics_server().streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode) as client,
    ):
        assert client.protocol_version == version
        assert {t.name for t in (await client.list_tools()).tools} == {"add", "count_up"}
        assert (await client.call_tool("add", {"a": 40, "b": 2})).structured_content == {"result": 42}
        counted = await client.call_tool("count_up", {"steps": 3}, progress_callback=on_progress)
        assert _text(counted) == "counted to 3"
        assert progress == [1, 2, 3]  # notifications rode the POST's SSE stream, ahead of the result

        (resource,) = (await client.list_resources()).resources
        assert str(resource.uri) == "note://greeting"
        read = await client.read_resource("note://greeting")
        assert read.contents[0].text == "hello over http"  # type: ignore[union-attr]
        templated = await client.read_resource("note://users/ada")
        assert templated.contents[0].text == "user ada"  # type: ignore[union-attr]
        (template,) = (await client.list_resource_templates()).resource_templates
        assert template.uri_template == "note://users/{name}"

        (prompt,) = (await client.list_prompts()).prompts
        assert prompt.name == "review"
        rendered = await client.get_prompt("review", {"code": "x = 1"})
        assert rendered.messages[0].content.text == "Review this: x = 1"  # type: ignore[union-attr]


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_our_client_runs_the_refund_desk_over_http(
    refund_desk: ModuleType, mode: str, version: str
) -> None:
    answers = refund_answers()

    async def elicit(params: types.ElicitRequestFormParams) -> dict[str, Any]:
        return answers.answer(params.message)

    async with (
        http_server(refund_desk.mcp.streamable_http_app()) as base,
        ours(base, mode, elicitation_handler=elicit) as client,
    ):
        assert client.protocol_version == version
        tool, *_app_only = (await client.list_tools()).tools
        assert set(tool.input_schema["properties"]) == {"order_id", "reason"}
        await run_refund_trajectory(lambda arguments: client.call_tool("refund_order", arguments), answers)


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_our_client_basics_over_http(mode: str, version: str) -> None:
    progress: list[float] = []
    logs: list[Any] = []

    async def on_progress(params: types.ProgressNotificationParams) -> None:
        progress.append(params.progress)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with (
        http_server(basics_server().streamable_http_app()) as base,
        ours(base, mode, progress_handler=on_progress, log_handler=on_log) as client,
    ):
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info["name"] == "http-basics"
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        assert _text(await client.call_tool("count_up", {"steps": 2})) == "counted to 2"
        assert progress == [1, 2]
        assert logs == ["step 1", "step 2"]
        assert (await client.read_resource("note://users/bo")).contents[0].text == "user bo"  # type: ignore[union-attr]
        rendered = await client.get_prompt("review", {"code": "y"})
        assert rendered.messages[0].content.text == "Review this: y"  # type: ignore[union-attr]


class Colour(BaseModel):
    colour: str


async def ask_colour() -> OfficialElicit[Colour]:
    return OfficialElicit("Favourite colour?", Colour)


def official_server() -> OfficialServer:
    """A server built with the official SDK, resolver question included."""
    mcp = OfficialServer("official-http-peer")

    @mcp.tool()
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    @mcp.tool()
    async def paint(wall: str, colour: Annotated[Colour, OfficialResolve(ask_colour)]) -> str:
        """Paint a wall in the colour the person picks."""
        return f"{wall} painted {colour.colour}"

    @mcp.resource("note://official", mime_type="text/plain")
    def note() -> str:
        return "from the official server"

    @mcp.prompt()
    def summarise(topic: str) -> str:
        """Summarise a topic."""
        return f"Summarise {topic}."

    return mcp


def legacy_only(app: Any, status: int, body: bytes) -> Any:
    """The official app as a pre-2026 server: a POST with a modern version header is refused, as SDK 1.x did."""

    async def gate(scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"mcp-protocol-version", b"").startswith(b"2026"):
            kind = [(b"content-type", b"application/json")] if body else []
            await send({"type": "http.response.start", "status": status, "headers": kind})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return gate


OLD_SDK_REFUSAL = (
    b'{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,'
    b'"message":"Bad Request: Unsupported protocol version: 2026-07-28"}}'
)


@pytest.mark.parametrize(
    ("mode", "refusal", "version"),
    [
        ("auto", None, "2026-07-28"),
        ("legacy", None, "2025-11-25"),
        ("auto", (400, OLD_SDK_REFUSAL), "2025-11-25"),
        ("auto", (404, b""), "2025-11-25"),
    ],
    ids=["auto", "legacy", "auto-vs-legacy-400", "auto-vs-legacy-404"],
)
async def test_our_client_drives_the_official_server_over_http(
    mode: str, refusal: tuple[int, bytes] | None, version: str
) -> None:
    app = official_server().streamable_http_app()
    if refusal is not None:
        app = legacy_only(app, *refusal)
    asked: list[str] = []

    async def elicit(params: types.ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"colour": "teal"}}

    async with http_server(app) as base, ours(base, mode, elicitation_handler=elicit) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info["name"] == "official-http-peer"
        assert {t.name for t in (await client.list_tools()).tools} == {"multiply", "paint"}
        assert (await client.call_tool("multiply", {"a": 6, "b": 7})).structured_content == {"result": 42}
        assert _text(await client.call_tool("paint", {"wall": "north"})) == "north painted teal"
        assert asked == ["Favourite colour?"]
        assert (await client.read_resource("note://official")).contents[0].text == "from the official server"  # type: ignore[union-attr]
        prompt = await client.get_prompt("summarise", {"topic": "tides"})
        assert prompt.messages[0].content.text == "Summarise tides."  # type: ignore[union-attr]


async def test_our_client_ends_its_handshake_session_on_close() -> None:
    app = basics_server().streamable_http_app()
    async with http_server(app) as base:
        async with Client(f"{base}/mcp", mode="legacy") as client:
            await client.ping()
            assert len(app.state.mcp_endpoint.sessions) == 1
            session_id = client._require_session().pipe.session_id  # type: ignore[attr-defined]
        assert len(app.state.mcp_endpoint.sessions) == 0  # the client sent DELETE
        async with httpx.AsyncClient() as raw:
            stale = await raw.delete(f"{base}/mcp", headers={"mcp-session-id": session_id})
        assert stale.status_code == 404


async def test_the_example_serves_http_from_its_own_process() -> None:
    """`mcp.run(transport="streamable-http", port=...)`, as `examples/refund_desk/server.py --http` calls it."""
    port = free_port()
    command = [PYTHON, str(REFUND_DESK), "--http", "--port", str(port)]
    async with await anyio.open_process(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as process:
        try:
            with anyio.fail_after(20):
                while True:  # wait until it listens
                    try:
                        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                        break
                    except OSError:
                        await anyio.sleep(0.05)
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
                tool, *_app_only = (await client.list_tools()).tools
                assert tool.name == "refund_order"
        finally:
            process.terminate()
            await process.wait()
