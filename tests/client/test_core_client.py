"""Our Client against our server (memory and stdio, both eras) and against the official `mcp` server over stdio.

The official server is the proof that the Client speaks the protocol and not
only our own dialect: `auto` must detect whichever era it answers in, and
its resolver question must reach our elicitation handler as a mid-call
request (handshake era) or as an `inputRequests` round (2026-07-28).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mcp_types import (
    ElicitRequestFormParams,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    TextContent,
    TextResourceContents,
)

from conftest import SERVERS, load_module
from mcp_resolve import Client, MCPError, MCPServer
from servers.raw_stdio import EVERYTHING_CORE

pytestmark = pytest.mark.anyio

OFFICIAL_SERVER = SERVERS / "official_server.py"
PAGE = 3
MODES = [("auto", "2026-07-28"), ("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")]
CORE_TOOLS = {
    "greet", "weather", "point", "book", "add", "picture", "sound", "attachment", "reserve_book", "ask_name",
    "ask_model", "client_roots", "whoami", "chatty", "fail", "crash", "noisy", "rendezvous", "block", "wait_cancelled",
}  # fmt: skip


class Recorder:
    """Handlers that record what the server sent them."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.questions: list[ElicitRequestFormParams] = []
        self.logs: list[LoggingMessageNotificationParams] = []
        self.progress: list[ProgressNotificationParams] = []

    async def elicit(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        self.questions.append(params)
        return self.answer

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_progress(self, params: ProgressNotificationParams) -> None:
        self.progress.append(params)

    def options(self) -> dict[str, Any]:
        return {
            "elicitation_handler": self.elicit,
            "log_handler": self.log,
            "progress_handler": self.on_progress,
        }


def _core_target(transport: str) -> tuple[MCPServer | str, dict[str, str] | None]:
    if transport == "memory":
        server = load_module(EVERYTHING_CORE).mcp
        server.page_size = PAGE
        return server, None
    return str(EVERYTHING_CORE), {"CORE_PAGE_SIZE": str(PAGE)}


def _text(blocks: list[Any]) -> str:
    assert isinstance(blocks[0], TextContent)
    return blocks[0].text


@pytest.mark.parametrize("transport", ["memory", pytest.param("stdio", marks=pytest.mark.slow)])
@pytest.mark.parametrize(("mode", "version"), MODES)
async def test_our_client_drives_our_server(transport: str, mode: Any, version: str) -> None:
    target, env = _core_target(transport)
    recorder = Recorder({"action": "accept", "content": {"name": "Lin"}})
    async with Client(target, mode=mode, env=env, **recorder.options()) as client:
        assert client.protocol_version == version
        assert client.server_info == {"name": "everything-core", "version": "1.2.3"}
        assert client.instructions == "A server for testing the core."
        assert "completions" in client.server_capabilities
        modern = version == "2026-07-28"

        # pagination: a first page of PAGE, a cursor that leads on, and every tool exactly once overall
        first = await client.request("tools/list")
        assert len(first["tools"]) == PAGE and first["nextCursor"]
        second = await client.list_tools(cursor=first["nextCursor"])
        assert len(second.tools) == PAGE
        assert not {t.name for t in second.tools} & {t["name"] for t in first["tools"]}
        everything = [tool.name for tool in (await client.list_tools()).tools]
        assert sorted(everything) == sorted(CORE_TOOLS)

        greeting = await client.call_tool("greet", {"name": "Ada"})
        assert _text(greeting.content) == "Hello, Ada!"
        assert (await client.call_tool("weather", {"city": "Rome"})).structured_content == {
            "city": "Rome",
            "celsius": 21.5,
        }
        failed = await client.call_tool("fail", {"reason": "nope"})
        assert failed.is_error is True and _text(failed.content) == "Error executing tool fail: refused: nope"

        if modern:  # no mid-call questions on 2026-07-28: -32600, and the author is told to use a resolver
            with pytest.raises(MCPError) as refused:
                await client.call_tool("ask_name")
            assert refused.value.code == -32600
            assert "Resolve(" in refused.value.message and "Elicit(" in refused.value.message
            assert recorder.questions == []
        else:
            asked = await client.call_tool("ask_name")
            assert _text(asked.content) == "Hello, Lin!"
            assert [q.message for q in recorder.questions] == ["What is your name?"]

        chatty = await client.call_tool("chatty", {"steps": 2})
        assert _text(chatty.content) == "did 2 steps"
        assert [(p.progress, p.total, p.message) for p in recorder.progress] == [
            (1, 2, "step 1"),
            (2, 2, "step 2"),
        ]
        assert [entry.level for entry in recorder.logs] == ["debug", "info", "warning"]

        assert {str(r.uri) for r in (await client.list_resources()).resources} == {
            "memo://static",
            "data://config",
        }
        templates = await client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == {
            "users://{user_id}/profile",
            "files://{name}",
        }
        static = await client.read_resource("memo://static")
        assert (
            isinstance(static.contents[0], TextResourceContents)
            and static.contents[0].text == "the static memo"
        )
        profile = await client.read_resource("users://u%201/profile")
        assert isinstance(profile.contents[0], TextResourceContents)
        assert profile.contents[0].text == '{\n  "user_id": "u 1",\n  "name": "User u 1"\n}'
        blob = await client.read_resource("files://xy")
        assert base64.b64decode(blob.contents[0].blob) == b"xyxy"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("memo://missing")
        assert missing.value.code == (-32602 if modern else -32002)

        assert [p.name for p in (await client.list_prompts()).prompts] == ["review", "conversation"]
        review = await client.get_prompt("review", {"code": "print(1)"})
        assert _text([review.messages[0].content]) == "Please review this python code:\nprint(1)"
        conversation = await client.get_prompt("conversation", {"topic": "jazz"})
        assert [m.role for m in conversation.messages] == ["user", "assistant"]

        by_prompt = await client.complete(
            {"type": "ref/prompt", "name": "review"}, {"name": "language", "value": "r"}
        )
        assert by_prompt.completion.values == ["rust", "ruby"]
        by_template = await client.complete(
            {"type": "ref/resource", "uri": "users://{user_id}/profile"}, {"name": "user_id", "value": "u1"}
        )
        assert by_template.completion.values == ["u1", "u10"]

        if modern:  # ping is gone from 2026-07-28
            with pytest.raises(MCPError) as no_ping:
                await client.ping()
            assert no_ping.value.code == -32601
        else:
            await client.ping()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "legacy_only", "version"),
    [
        ("auto", False, "2026-07-28"),  # auto finds the modern era when the server speaks it
        ("auto", True, "2025-11-25"),  # ... and falls back to initialize when it does not
        ("legacy", False, "2025-11-25"),
    ],
)
async def test_our_client_drives_the_official_server(mode: Any, legacy_only: bool, version: str) -> None:
    recorder = Recorder({"action": "accept", "content": {"colour": "teal"}})
    env = {"OFFICIAL_LEGACY_ONLY": "1"} if legacy_only else None
    async with Client(str(OFFICIAL_SERVER), mode=mode, env=env, **recorder.options()) as client:
        assert client.protocol_version == version
        assert client.server_info is not None and client.server_info["name"] == "official-peer"

        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"add", "shout", "paint"}
        assert tools["add"].output_schema is not None
        assert "colour" not in tools["paint"].input_schema["properties"]

        summed = await client.call_tool("add", {"a": 2, "b": 5})
        assert summed.structured_content == {"total": 7}
        shouted = await client.call_tool("shout", {"text": "hey"})
        assert _text(shouted.content) == "HEY"
        assert [(entry.level, entry.data) for entry in recorder.logs] == [("info", "shouting hey")]

        painted = await client.call_tool("paint", {"wall": "north"})
        assert _text(painted.content) == "north painted teal"
        assert [q.message for q in recorder.questions] == ["Favourite colour?"]

        assert [str(r.uri) for r in (await client.list_resources()).resources] == ["note://hello"]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["item://{item_id}"]
        note = await client.read_resource("note://hello")
        assert isinstance(note.contents[0], TextResourceContents)
        assert note.contents[0].text == "hello from the official server"
        item = await client.read_resource("item://7")
        assert isinstance(item.contents[0], TextResourceContents) and item.contents[0].text == "item 7"

        prompt = await client.get_prompt("summarise", {"topic": "owls"})
        assert _text([prompt.messages[0].content]) == "Summarise owls in one line."
        completed = await client.complete(
            {"type": "ref/prompt", "name": "summarise"}, {"name": "topic", "value": "ca"}
        )
        assert completed.completion.values == ["cats", "cars"]
        if version != "2026-07-28":
            await client.ping()
