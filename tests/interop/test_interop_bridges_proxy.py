"""Our proxy between peers we did not write: official SDK and FastMCP servers behind it, official and TypeScript clients in front.

The target runs as a real stdio subprocess, the front is our proxy served by
uvicorn on loopback. The official target's `paint` asks the person a
question: a handshake-only target (a server from before 2026-07-28) asks it
mid-call, and a 2026-07-28 front must turn that into an input-required round
and back, the upstream call waiting meanwhile.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient

from conftest import REFUND_DESK, SERVERS
from http_helpers import http_server
from mcp_resolve import Client, MCPServer
from node_helpers import NODE_BIN, NODE_DIR

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]

OFFICIAL = SERVERS / "official_server.py"
FASTMCP = SERVERS / "fastmcp_target.py"
ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


@asynccontextmanager
async def proxied(command: list[str], **options: Any) -> AsyncIterator[str]:
    """Our proxy of the stdio `command`, on HTTP; yields its /mcp URL."""
    front = MCPServer.as_proxy(command, **options)
    async with http_server(front.streamable_http_app()) as base:
        yield f"{base}/mcp"


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("target_era", ["legacy-only", "dual"])
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_official_client_through_our_proxy_of_an_official_server(
    mode: str, version: str, target_era: str
) -> None:
    env = {"OFFICIAL_LEGACY_ONLY": "1"} if target_era == "legacy-only" else {}
    asked: list[str] = []
    logs: list[Any] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"colour": "teal"})

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async with (
        proxied([sys.executable, str(OFFICIAL)], env=env) as url,
        OfficialClient(url, mode=mode, elicitation_callback=on_elicit, logging_callback=on_log) as client,
    ):
        assert client.protocol_version == version
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"add", "shout", "paint"} <= set(tools)
        assert tools["add"].output_schema is not None  # the target's own schema, served as it is

        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"total": 5}
        if mode == "legacy":
            await client.set_logging_level("debug")
        shouted = await client.call_tool("shout", {"text": "hi"})
        assert _text(shouted) == "HI"
        if mode == "legacy":  # 2026-07-28 sends logs only to requests that ask (the official client does not)
            assert "shouting hi" in logs

        painted = await client.call_tool("paint", {"wall": "north"})
        assert _text(painted) == "north painted teal"
        assert asked == ["Favourite colour?"]

        note = await client.read_resource("note://hello")
        assert note.contents[0].text == "hello from the official server"  # type: ignore[union-attr]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["item://{item_id}"]
        item = await client.read_resource("item://7")
        assert item.contents[0].text == "item 7"  # type: ignore[union-attr]
        prompt = await client.get_prompt("summarise", {"topic": "owls"})
        assert "Summarise owls" in prompt.messages[0].content.text  # type: ignore[union-attr]
        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name="summarise"), {"name": "topic", "value": "ca"}
        )
        assert completion.completion.values == ["cats", "cars"]


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_our_client_through_our_proxy_of_a_fastmcp_server(mode: str, version: str) -> None:
    asked: list[str] = []
    progress: list[float] = []

    async def on_elicit(params: types.ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"value": "Ada"}}

    async def on_progress(params: types.ProgressNotificationParams) -> None:
        progress.append(params.progress)

    async with (
        # FastMCP's ctx.elicit asks mid-call, which 2026-07-28 has no room for: the proxy speaks the
        # handshake era to it, whatever era its own callers speak.
        proxied([sys.executable, str(FASTMCP)], mode="legacy") as url,
        Client(url, mode=mode, elicitation_handler=on_elicit, progress_handler=on_progress) as client,
    ):
        assert client.protocol_version == version
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"echo", "greet_asked", "count"} <= set(tools)
        assert _text(await client.call_tool("echo", {"text": "hello", "sender": "me"})) == "me: hello"
        assert _text(await client.call_tool("greet_asked", {})) == "Hello, Ada!"
        assert asked == ["Your name?"]
        assert _text(await client.call_tool("count", {"upto": 3})) == "3"
        assert progress == [1.0, 2.0, 3.0]
        resource = await client.read_resource("data://motto")
        assert resource.contents[0].text == "proxies all the way down"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_typescript_client_through_our_proxy_of_the_refund_desk(
    mode: str, node_env: dict[str, str]
) -> None:
    """The refund desk's questions (a resolver that asks twice) relayed by our proxy to the TypeScript client."""
    async with proxied([sys.executable, str(REFUND_DESK)]) as url:
        with anyio.fail_after(60):
            done = await anyio.run_process(
                [str(NODE_BIN / "node"), "refund_desk.mjs", url, mode],
                cwd=NODE_DIR,
                env=node_env,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stdout)
    assert report["version"] == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert report["result"]["isError"] is False, report["result"]
    assert len(report["questions"]) >= 1
