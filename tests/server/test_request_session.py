"""`ctx.session`: the official `ServerSession` methods a tool body calls, on both eras.

Notifications are read off a real stdio subprocess a line at a time (they go
out on the request's channel, before its response); sampling and roots go
through our Client in memory. The `notifications` and `sampling` official
snippets are compared with the official server in test_official_snippets.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_types import CreateMessageResult, CreateMessageResultWithTools, SamplingMessage, TextContent, Tool

from mcp_resolve import Client, Context, MCPError, MCPServer
from servers.raw_stdio import RawStdio, modern_meta

SERVER = """
from mcp_resolve import Context, MCPServer

mcp = MCPServer("session")


@mcp.tool()
async def changed(ctx: Context) -> str:
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_resource_list_changed()
    await ctx.session.send_prompt_list_changed()
    await ctx.session.send_elicit_complete("e-1")
    return "told"


if __name__ == "__main__":
    mcp.run()
"""

TOLD = [
    ("notifications/tools/list_changed", {}),
    ("notifications/resources/list_changed", {}),
    ("notifications/prompts/list_changed", {}),
    ("notifications/elicitation/complete", {"elicitationId": "e-1"}),
]


@pytest.mark.slow
def test_list_changed_and_elicit_complete_reach_a_handshake_client_before_the_answer_and_none_on_2026(
    tmp_path: Path,
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    peer = RawStdio(script)
    try:
        peer.initialize("2025-11-25")
        answer = peer.request("tools/call", {"name": "changed", "arguments": {}})
        assert answer["result"]["content"] == [{"type": "text", "text": "told"}]
        assert [(n["method"], n.get("params", {})) for n in peer.notifications] == TOLD
        peer.notifications.clear()
        modern = peer.request("tools/call", {"name": "changed", "arguments": {}, "_meta": modern_meta()})
        assert modern["result"]["content"] == [{"type": "text", "text": "told"}]
        assert peer.notifications == []  # no session to tell on 2026-07-28, as with the official server
    finally:
        peer.kill()


def _sampling_server() -> MCPServer:
    mcp = MCPServer("sampling")

    @mcp.tool()
    async def poem(ctx: Context) -> str:
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="owls"))],
            max_tokens=50,
            system_prompt="Be brief.",
        )
        assert isinstance(result, CreateMessageResult)
        return f"{type(result).__name__}: {result.content.text}"  # type: ignore[union-attr]

    @mcp.tool()
    async def with_tools(ctx: Context) -> str:
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="weather?"))],
            max_tokens=50,
            tools=[Tool(name="forecast", input_schema={"type": "object"})],
        )
        return type(result).__name__

    return mcp


async def _sample(params: Any) -> dict[str, Any]:
    ASKED.append(params)
    return {"role": "assistant", "content": {"type": "text", "text": "soft wings"}, "model": "m"}


ASKED: list[Any] = []


@pytest.mark.anyio
async def test_create_message_samples_mid_call_on_the_handshake_era() -> None:
    ASKED.clear()
    async with Client(
        _sampling_server(), mode="legacy", sampling_handler=_sample, sampling_tools=True
    ) as client:
        plain = await client.call_tool("poem", {})
        tooled = await client.call_tool("with_tools", {})
    assert plain.content[0].text == "CreateMessageResult: soft wings"  # type: ignore[union-attr]
    assert tooled.content[0].text == CreateMessageResultWithTools.__name__  # type: ignore[union-attr]
    first, second = ASKED
    assert (first.max_tokens, first.system_prompt, first.messages[0].content.text) == (
        50,
        "Be brief.",
        "owls",
    )
    assert [tool.name for tool in second.tools] == ["forecast"]


@pytest.mark.anyio
async def test_create_message_is_refused_on_2026_07_28_and_names_the_resolver_to_use() -> None:
    ASKED.clear()
    async with Client(_sampling_server(), mode="auto", sampling_handler=_sample) as client:
        assert client.protocol_version == "2026-07-28"
        with pytest.raises(MCPError) as refused:
            await client.call_tool("poem", {})
    assert refused.value.code == -32600 and ASKED == []  # the official's envelope, our advice
    text = refused.value.message
    assert "ctx.session.create_message() cannot ask the client mid-call on protocol 2026-07-28" in text
    assert "Sample(...)" in text
