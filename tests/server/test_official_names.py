"""Names and answers the official SDK's own server tests rely on, checked against the official SDK.

Each check builds the same thing on both SDKs (or asks both the same
question) and compares: `Tool.context_kwarg`, a registration error catchable
as the official's `ValueError`, the "Unknown resource:" wording.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import Context as OfficialContext
from mcp.server.mcpserver.tools import Tool as OfficialTool
from mcp.shared.exceptions import MCPError as OfficialMCPError
from mcp_types import InputRequiredResult, SamplingMessage, TextContent
from pydantic import BaseModel

from mcp_resolve import Client, Context, InvalidSignature, MCPError, MCPServer
from mcp_resolve.tools import Tool


def test_tool_context_kwarg_names_the_context_parameter_as_the_official_does() -> None:
    def plain(x: int) -> int:
        return x

    def ours_with(x: int, my_ctx: Context) -> int:
        return x

    def theirs_with(x: int, my_ctx: OfficialContext) -> int:
        return x

    assert Tool.from_function(plain).context_kwarg == OfficialTool.from_function(plain).context_kwarg is None
    assert Tool.from_function(ours_with).context_kwarg == "my_ctx"
    assert OfficialTool.from_function(theirs_with).context_kwarg == "my_ctx"


def test_a_registration_error_is_a_value_error_as_the_official_raises() -> None:
    assert issubclass(InvalidSignature, ValueError)
    for server in (OfficialServer("t"), MCPServer("t")):
        with pytest.raises(ValueError):

            @server.resource("static://x")
            def takes_an_argument(name: str) -> str:
                return name


@pytest.mark.anyio
async def test_an_unknown_resource_is_worded_as_the_official_words_it() -> None:
    messages = []
    async with OfficialClient(OfficialServer("t")) as client:
        with pytest.raises(OfficialMCPError) as theirs:
            await client.read_resource("memo://nowhere")
        messages.append(theirs.value.error.message)
    async with Client(MCPServer("t")) as ours_client:
        with pytest.raises(MCPError) as ours:
            await ours_client.read_resource("memo://nowhere")
        messages.append(ours.value.message)
    assert messages == ["Unknown resource: memo://nowhere"] * 2


QUESTION = {
    "ask": {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}},
    }
}


def _hand_made(server: Any) -> Any:
    @server.tool()
    def hand_made() -> InputRequiredResult:
        return InputRequiredResult.model_validate({"inputRequests": QUESTION, "requestState": "s"})

    return server


@pytest.mark.anyio
async def test_an_input_required_result_never_reaches_a_handshake_era_client() -> None:
    """The official answers -32603 `Handler returned an invalid result`; so do we, saying what to do instead."""
    async with OfficialClient(_hand_made(OfficialServer("t")), mode="legacy") as client:
        with pytest.raises(OfficialMCPError) as theirs:
            await client.call_tool("hand_made", {})
    async with Client(_hand_made(MCPServer("t")), mode="legacy") as our_client:
        with pytest.raises(MCPError) as ours:
            await our_client.call_tool("hand_made", {})
    assert ours.value.code == theirs.value.error.code == -32603
    assert ours.value.message.startswith(theirs.value.error.message)
    assert "Resolve(" in ours.value.message


class _Name(BaseModel):
    name: str


async def _ask(ctx: Any) -> str:
    answer = await ctx.elicit("Your name?", _Name)
    return str(answer.action)


async def _sample(ctx: Any) -> str:
    message = SamplingMessage(role="user", content=TextContent(type="text", text="hi"))
    result = await ctx.session.create_message([message], max_tokens=5)
    return str(result.model)


async def official_ask(ctx: OfficialContext) -> str:
    return await _ask(ctx)


async def official_sample(ctx: OfficialContext) -> str:
    return await _sample(ctx)


async def our_ask(ctx: Context) -> str:
    return await _ask(ctx)


async def our_sample(ctx: Context) -> str:
    return await _sample(ctx)


def _asks_mid_call(server: Any) -> Any:
    official = isinstance(server, OfficialServer)
    server.tool(name="ask")(official_ask if official else our_ask)
    server.tool(name="sample")(official_sample if official else our_sample)
    return server


@pytest.mark.anyio
async def test_mid_call_questions_on_2026_07_28_answer_the_official_envelope() -> None:
    """`ctx.elicit()` and `ctx.session.create_message()` as official examples call them: JSON-RPC -32600 on both."""
    codes: dict[str, list[int]] = {"ask": [], "sample": []}
    async with OfficialClient(_asks_mid_call(OfficialServer("t")), mode="auto") as client:
        for tool in codes:
            with pytest.raises(OfficialMCPError) as theirs:
                await client.call_tool(tool, {})
            codes[tool].append(theirs.value.error.code)
    async with Client(_asks_mid_call(MCPServer("t")), mode="auto") as our_client:
        for tool in codes:
            with pytest.raises(MCPError) as ours:
                await our_client.call_tool(tool, {})
            codes[tool].append(ours.value.code)
            assert "Resolve(" in ours.value.message  # our advice, in the official envelope
    assert codes == {"ask": [-32600, -32600], "sample": [-32600, -32600]}
