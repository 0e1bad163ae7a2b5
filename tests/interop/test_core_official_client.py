"""The official `mcp` client (a peer we did not write) drives our server over a stdio subprocess, in both eras.

`mode="auto"` must land on 2026-07-28 (our `server/discover` works) and
`mode="legacy"` on 2025-11-25. The official client validates every result
against its own models and `structuredContent` against each tool's
`outputSchema`, so a malformed result fails these tests even where no
assertion names it.
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from servers.raw_stdio import EVERYTHING_CORE

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),  # we test it on purpose
    pytest.mark.slow,
]

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


def official_client(mode: str, page_size: int = 100, **options: Any) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(EVERYTHING_CORE)],
        # This process's import path, so the server runs the mcp_resolve under test.
        env={"CORE_PAGE_SIZE": str(page_size), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    return Client(params, mode=mode, **options)


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_official_client_lists_and_calls_tools_with_structured_output(mode: str, version: str) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={"name": "Grace"})
        return types.ElicitResult(action="decline")

    async with official_client(mode, page_size=4, elicitation_callback=on_elicit) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info.name == "everything-core"
        assert client.server_capabilities.tools is not None

        tools: dict[str, types.Tool] = {}
        cursor: str | None = None
        pages = 0
        while True:  # the server pages by 4: the official client must be able to follow our cursors
            page = await client.list_tools(cursor=cursor)
            pages += 1
            assert len(page.tools) <= 4
            tools.update({tool.name: tool for tool in page.tools})
            cursor = page.next_cursor
            if cursor is None:
                break
        assert pages >= 4
        assert {"greet", "weather", "point", "book", "add", "picture", "reserve_book", "ask_name"} <= set(
            tools
        )
        assert "stock" not in tools["reserve_book"].input_schema["properties"]
        assert "ctx" not in tools["reserve_book"].input_schema["properties"]
        assert tools["picture"].output_schema is None

        greeting = await client.call_tool("greet", {"name": "Ada"})
        assert _text(greeting) == "Hello, Ada!"
        assert greeting.is_error is False

        weather = await client.call_tool("weather", {"city": "Paris"})
        assert weather.structured_content == {"city": "Paris", "celsius": 21.5}
        assert tools["weather"].output_schema is not None
        assert tools["weather"].output_schema["title"] == "Weather"

        assert (await client.call_tool("point", {"x": 1, "y": 2})).structured_content == {"x": 1, "y": 2}
        assert (await client.call_tool("book", {"title": "Dune"})).structured_content == {
            "title": "Dune",
            "pages": 412,
        }
        summed = await client.call_tool("add", {"a": 40, "b": 2})
        assert summed.structured_content == {"result": 42}
        assert _text(summed) == "42"  # the value itself, as the official SDK shows a wrapped primitive

        picture = await client.call_tool("picture", {})
        assert isinstance(picture.content[0], types.ImageContent)
        assert picture.content[0].mime_type == "image/png"
        assert base64.b64decode(picture.content[0].data).startswith(b"\x89PNG")
        sound = await client.call_tool("sound", {})
        assert isinstance(sound.content[0], types.AudioContent)
        attachment = await client.call_tool("attachment", {})
        assert isinstance(attachment.content[0], types.EmbeddedResource)
        assert isinstance(attachment.content[0].resource, types.TextResourceContents)
        assert attachment.content[0].resource.text == "attached memo"

        reserved = await client.call_tool(
            "reserve_book", {"title": "Dune", "stock": {"title": "Dune", "copies": 999}}
        )
        assert _text(reserved) == "Reserved 'Dune' (6 copies left)."  # the model-sent stock was ignored

        refused = await client.call_tool("fail", {"reason": "no"})
        assert refused.is_error is True
        assert _text(refused) == "Error executing tool fail: refused: no"
        invalid = await client.call_tool("add", {"a": "forty", "b": 2})
        assert invalid.is_error is True
        assert "a" in _text(invalid) and "integer" in _text(invalid)

        # ctx.elicit: answered by the official callback mid-call on the handshake era; on 2026-07-28 there
        # is no mid-call question: -32600 as from the official server, telling the author to declare a resolver
        if version == "2025-11-25":
            accepted = await client.call_tool("ask_name", {})
            declined = await client.call_tool("ask_name", {})
        else:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("ask_name", {})
    if version == "2025-11-25":
        assert (_text(accepted), _text(declined)) == ("Hello, Grace!", "No name (decline).")
        assert len(asked) == 2
        assert isinstance(asked[0], types.ElicitRequestFormParams)
        assert asked[0].message == "What is your name?"
        assert asked[0].requested_schema["properties"]["name"]["type"] == "string"
    else:
        assert asked == []
        assert refused.value.error.code == -32600
        assert "Resolve(" in refused.value.error.message and "Elicit(" in refused.value.error.message


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_official_client_reads_resources_and_gets_prompts(mode: str, version: str) -> None:
    async with official_client(mode) as client:
        assert client.protocol_version == version
        resources = await client.list_resources()
        assert {str(r.uri) for r in resources.resources} == {"memo://static", "data://config"}
        templates = await client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == {
            "users://{user_id}/profile",
            "files://{name}",
        }

        static = await client.read_resource("memo://static")
        assert isinstance(static.contents[0], types.TextResourceContents)
        assert static.contents[0].text == "the static memo"
        assert static.contents[0].mime_type == "text/plain"

        profile = await client.read_resource("users://42/profile")
        assert isinstance(profile.contents[0], types.TextResourceContents)
        assert (
            profile.contents[0].text == '{\n  "user_id": "42",\n  "name": "User 42"\n}'
        )  # indented, as the official
        assert str(profile.contents[0].uri) == "users://42/profile"
        blob = await client.read_resource("files://ab")
        assert isinstance(blob.contents[0], types.BlobResourceContents)
        assert base64.b64decode(blob.contents[0].blob) == b"abab"

        prompts = await client.list_prompts()
        review = next(p for p in prompts.prompts if p.name == "review")
        assert [(a.name, a.required) for a in review.arguments or []] == [("code", True), ("language", False)]
        got = await client.get_prompt("review", {"code": "x = 1", "language": "rust"})
        assert got.description == "Review some code."
        assert isinstance(got.messages[0].content, types.TextContent)
        assert got.messages[0].content.text == "Please review this rust code:\nx = 1"
        conversation = await client.get_prompt("conversation", {"topic": "tea"})
        assert [m.role for m in conversation.messages] == ["user", "assistant"]

        completed = await client.complete(
            types.PromptReference(type="ref/prompt", name="review"), {"name": "language", "value": "p"}
        )
        assert completed.completion.values == ["python", "perl", "php"]


@pytest.mark.parametrize(
    ("mode", "log_level", "expected"),
    [
        ("legacy", None, ["debug", "info", "warning"]),  # handshake era, no logging/setLevel: every level
        ("auto", "info", ["info", "warning"]),  # 2026-07-28 opted in at "info": debug is filtered out
        ("auto", None, []),  # 2026-07-28 without an opt-in: no log messages at all
    ],
)
async def test_logs_and_progress_reach_the_official_callbacks(
    mode: str, log_level: str | None, expected: list[str]
) -> None:
    logs: list[types.LoggingMessageNotificationParams] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with official_client(mode, logging_callback=on_log, log_level=log_level) as client:
        result = await client.call_tool("chatty", {"steps": 3}, progress_callback=on_progress)
        assert _text(result) == "did 3 steps"
        assert [entry.level for entry in logs] == expected
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        # raise the threshold to "warning": per connection on the handshake era, per request on 2026-07-28
        if mode == "legacy":
            await client.set_logging_level("warning")
            await client.call_tool("chatty", {"steps": 1})
        else:
            await client.call_tool(
                "chatty", {"steps": 1}, meta={"io.modelcontextprotocol/logLevel": "warning"}
            )
    assert [entry.level for entry in logs] == [*expected, "warning"]
    assert logs[-1].data == {"done": 1}
