"""pydantic-ai's `MCPToolset` (the way a Python agent consumes a server) against our servers.

The agent is driven by pydantic-ai's own `FunctionModel`, so no LLM is
involved but every step goes through the agent loop: the model sees the tool
list pydantic-ai built from ours, calls `refund_order`, and gets back either
the receipt or, on a tool error, a retry carrying our error text. The
toolset's `elicitation_handler`, `sampling_model` and `roots` answer our
resolvers' questions.

Era: pydantic-ai 2.68 builds a FastMCP 4 `Client` whose default `mode="auto"`
negotiates 2026-07-28 with us, and FastMCP drives our `input_required` rounds
through the toolset's handlers. pydantic-ai itself still warns on entering a
modern session that those handlers "will never be called"; the handlers are
called regardless, and the tests pin both facts. The handshake era is reached
by passing a pre-built `fastmcp.Client(..., mode="legacy")`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from conftest import PYTHON, REFUND_DESK, SERVERS, load_module
from http_helpers import http_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS_SERVER = SERVERS / "clients_server.py"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
DEAD_HANDLER_WARNING = "will never be called"


class Desk:
    """The person at the desk, as a FastMCP-shaped elicitation handler: records each question."""

    def __init__(self, *, scope: Any, restock: Any) -> None:
        self.answers = {"scope": scope, "restock": restock}
        self.asked: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        kind = "scope" if "several items" in message else "restock"
        self.asked.append(kind)
        return self.answers[kind]


class RefundModel:
    """A scripted model: calls `refund_order` once, then reports what the tool call came back as."""

    def __init__(self) -> None:
        self.tool_schemas: dict[str, dict[str, Any]] = {}

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tool_schemas = {tool.name: tool.parameters_json_schema for tool in info.function_tools}
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart):
                # A server tool error reaches the model as this call's return with outcome 'retried'.
                return ModelResponse(parts=[TextPart(f"{part.outcome}: {part.model_response_str()}")])
        return ModelResponse(
            parts=[ToolCallPart("refund_order", {"order_id": "ORD-7002", "reason": "too small"})]
        )


@asynccontextmanager
async def served(script: Path, transport: str) -> AsyncIterator[Any]:
    """What to point the toolset at: a stdio transport spawning `script`, or the URL of it served on HTTP."""
    if transport == "stdio":
        yield StdioTransport(PYTHON, [str(script)])
        return
    async with http_server(load_module(script).mcp.streamable_http_app()) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def entered(owner: Agent[Any, str] | MCPToolset[Any]) -> AsyncIterator[list[str]]:
    """Enter an agent or a toolset (opening the MCP session), collecting the warnings pydantic-ai raises on entry."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with owner:
            yield [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def assert_modern(toolset: MCPToolset[Any], entry_warnings: list[str], handler: str) -> None:
    assert toolset.client.protocol_version == MODERN
    assert toolset.client.initialize_result is None
    assert any(f"`{handler}` {DEAD_HANDLER_WARNING}" in w for w in entry_warnings), entry_warnings


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_agent_refunds_on_2026_07_28(transport: str) -> None:
    desk = Desk(scope={"full": True}, restock={"restock": True})
    model = RefundModel()
    async with served(REFUND_DESK, transport) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, elicitation_handler=desk)
        agent = Agent(FunctionModel(model), toolsets=[toolset])
        async with entered(agent) as entry_warnings:
            assert_modern(toolset, entry_warnings, "elicitation_handler")
            result = await agent.run("Refund ORD-7002, the boots are too small.")
    assert set(model.tool_schemas) == {"refund_order"}
    assert set(model.tool_schemas["refund_order"]["properties"]) == {"order_id", "reason"}
    assert desk.asked == ["scope", "restock"]
    assert result.output == (
        'success: {"order_id":"ORD-7002","reason":"too small","cents":4800,"restocked":true}'
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_agent_refunds_on_the_handshake_era(transport: str) -> None:
    desk = Desk(scope={"full": True}, restock={"restock": False})
    async with served(REFUND_DESK, transport) as target:
        client = FastMCPClient(target, mode="legacy", elicitation_handler=desk)
        toolset: MCPToolset[Any] = MCPToolset(client)
        agent = Agent(FunctionModel(RefundModel()), toolsets=[toolset])
        async with entered(agent) as entry_warnings:
            assert toolset.client.protocol_version == LEGACY
            assert toolset.client.initialize_result is not None
            assert entry_warnings == []
            result = await agent.run("Refund ORD-7002.")
    assert desk.asked == ["scope", "restock"]
    assert re.search(r'"cents":\s*4800\b', result.output), result.output
    assert re.search(r'"restocked":\s*false', result.output), result.output


async def test_declined_scope_reaches_the_model_as_a_retry_with_our_text() -> None:
    desk = Desk(scope=ElicitResult(action="decline"), restock={"restock": True})
    async with served(REFUND_DESK, "stdio") as target:
        toolset: MCPToolset[Any] = MCPToolset(target, elicitation_handler=desk)
        agent = Agent(FunctionModel(RefundModel()), toolsets=[toolset])
        async with entered(agent):
            result = await agent.run("Refund ORD-7002.")
    assert desk.asked == ["scope"]
    assert result.output == (
        'retried: {"error":"Error executing tool refund_order: '
        "Resolver for parameter 'scope' could not resolve: elicitation was decline\"}"
    )


def headline_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The sampling model: checks it got our resolver's prompt, answers with a headline."""
    prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
    assert prompt == "Write a one-line headline about refunds."
    return ModelResponse(parts=[TextPart("Refunds made simple")])


ROOTS = ["file:///srv/repo", "file:///srv/docs"]


def clients_toolset(target: Any, era: str) -> MCPToolset[Any]:
    """The toolset as a user writes it: modern by default; the handshake era needs a pre-built legacy client."""
    sampler = FunctionModel(headline_model, model_name="headline-fn")
    if era == MODERN:
        return MCPToolset(target, sampling_model=sampler, roots=ROOTS)
    toolset: MCPToolset[Any] = MCPToolset(FastMCPClient(target, mode="legacy", roots=ROOTS))
    toolset.set_sampling_model(sampler)
    return toolset


@pytest.mark.parametrize("era", [MODERN, LEGACY])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_sampling_roots_resources_and_prompts(transport: str, era: str) -> None:
    async with served(CLIENTS_SERVER, transport) as target:
        toolset = clients_toolset(target, era)
        async with entered(toolset) as entry_warnings:
            assert toolset.client.protocol_version == era
            if era == MODERN:
                assert_modern(toolset, entry_warnings, "sampling_model")
            assert await toolset.direct_call_tool("summarize", {"topic": "refunds"}) == (
                "headline[headline-fn]: Refunds made simple"
            )
            assert await toolset.direct_call_tool("workspace", {}) == ROOTS

            (resource,) = await toolset.list_resources()
            assert (resource.uri, resource.mime_type) == ("notes://today", "text/plain")
            assert await toolset.read_resource("notes://today") == "ship the client interop docs"
            (template,) = await toolset.list_resource_templates()
            assert template.uri_template == "notes://{day}"
            assert await toolset.read_resource("notes://monday") == "note for monday"

            (prompt,) = await toolset.list_prompts()
            assert prompt.name == "review"
            assert [(a.name, a.required) for a in prompt.arguments or []] == [("code", True)]
            review = await toolset.get_prompt("review", {"code": "x = 1"})
            (message,) = review.messages
            assert message.role == "user"
            assert message.content.content == "Please review this code:\nx = 1"  # type: ignore[union-attr]
