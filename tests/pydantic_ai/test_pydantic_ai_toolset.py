"""Our pydantic-ai toolset (`mcp_resolve.pydantic_ai`) driven by pydantic-ai Agents against our servers.

The same scripted model, person and expectations as `test_clients_pydantic_ai.py`
(pydantic-ai's own `MCPToolset` on FastMCP), so both paths are held to one
story: the agent sees only `order_id` and `reason`, the person answers, the
receipt reaches the output, and a declined question comes back to the model
as a retry carrying our error text. Here both eras are reached through the
toolset's own handlers (`mode="legacy"` for the handshake era), over stdio
and over HTTP (uvicorn), nothing mocked. Then what the toolset adds to a
plain call: list caching (and what makes it list again), `load_mcp_toolsets`,
tasks, `_meta`, headers, logs, timeouts, and the constructor's refusals.
"""

from __future__ import annotations

import json
import re
import subprocess
import warnings
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import httpx
import mcp_types
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from pydantic import BaseModel, Field, ValidationError
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import PrefixedToolset

from conftest import EXAMPLES, PYTHON, REFUND_DESK, ROOT, SERVERS, load_module
from http_helpers import http_server
from mcp_resolve import Client, Elicit, ListRoots, MCPError, MCPServer, Resolve, ToolError
from mcp_resolve.client.tasks import TASKS_EXTENSION
from mcp_resolve.pydantic_ai import MCPError as ToolsetMCPError
from mcp_resolve.pydantic_ai import MCPToolset, load_mcp_toolsets
from oauth_helpers import deployment, headless
from test_clients_pydantic_ai import CLIENTS_SERVER, ROOTS, Desk, RefundModel, headline_model

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
MODES: dict[str, Any] = {MODERN: None, LEGACY: "legacy"}
"""The `mode=` each era takes: the default negotiates 2026-07-28 with us."""
TOOLSET_SERVER = SERVERS / "toolset_server.py"
SLOW_REFUND = EXAMPLES / "slow_refund" / "server.py"
RECEIPT = 'success: {"order_id":"ORD-7002","reason":"too small","cents":4800,"restocked":true}'
DECLINED = (
    'retried: {"error":"Error executing tool refund_order: '
    "Resolver for parameter 'scope' could not resolve: elicitation was decline\"}"
)


@asynccontextmanager
async def served(script: Path, transport: str, app: Any = None, *args: str) -> AsyncIterator[Any]:
    """The toolset's first argument: a command running `script` (stdio), or the URL of its app on uvicorn."""
    if transport == "stdio":
        yield [PYTHON, str(script), *args]
        return
    async with http_server(app if app is not None else load_module(script).mcp.streamable_http_app()) as base:
        yield f"{base}/mcp"


def cache_server(transport: str, ttl_ms: int) -> Any:
    if transport == "stdio":
        return served(TOOLSET_SERVER, transport, None, "--ttl-ms", str(ttl_ms))
    return served(TOOLSET_SERVER, transport, load_module(TOOLSET_SERVER).build(ttl_ms).streamable_http_app())


class Sent(Counter[str]):
    """The requests a toolset's Client sent: how many of each method, and the params of each."""

    def __init__(self) -> None:
        super().__init__()
        self.params: dict[str, list[dict[str, Any]]] = {}


def count_requests(toolset: MCPToolset[Any]) -> Sent:
    """Count each request the toolset's Client sends (every request goes through `Client.request`)."""
    sent = Sent()
    client, send = toolset.client, toolset.client.request

    async def counted(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        sent[method] += 1
        sent.params.setdefault(method, []).append(dict(params or {}))
        return await send(method, params)

    client.request = counted  # type: ignore[method-assign]
    return sent


def names(tools: list[mcp_types.Tool]) -> set[str]:
    return {tool.name for tool in tools}


# -- the refund desk through an agent ------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_agent_refunds_through_the_toolsets_handler_on_both_eras(transport: str, era: str) -> None:
    desk = Desk(scope={"full": True}, restock={"restock": True})
    model = RefundModel()
    async with served(REFUND_DESK, transport) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, elicitation_handler=desk, mode=MODES[era])
        agent = Agent(FunctionModel(model), toolsets=[toolset])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            async with agent:
                assert toolset.client.protocol_version == era
                result = await agent.run("Refund ORD-7002, the boots are too small.")
    assert not [w for w in caught if issubclass(w.category, UserWarning)]  # no "will never be called"
    assert set(model.tool_schemas) == {"refund_order"}
    assert set(model.tool_schemas["refund_order"]["properties"]) == {"order_id", "reason"}
    assert desk.asked == ["scope", "restock"]
    assert result.output == RECEIPT


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_declined_question_reaches_the_model_as_a_retry_with_our_text(
    transport: str, era: str
) -> None:
    desk = Desk(scope=mcp_types.ElicitResult(action="decline"), restock={"restock": True})
    async with served(REFUND_DESK, transport) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, elicitation_handler=desk, mode=MODES[era])
        agent = Agent(FunctionModel(RefundModel()), toolsets=[toolset])
        async with agent:
            result = await agent.run("Refund ORD-7002.")
    assert desk.asked == ["scope"]
    assert result.output == DECLINED  # word for word what pydantic-ai's own toolset gives the model


@pytest.mark.slow
async def test_a_pre_built_client_brings_its_own_handlers() -> None:
    asked: list[str] = []

    async def person(question: mcp_types.ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(question.message)
        full = "several items" in question.message
        return {"action": "accept", "content": {"full": True} if full else {"restock": False}}

    client = Client([PYTHON, str(REFUND_DESK)], mode="legacy", elicitation_handler=person)
    toolset: MCPToolset[Any] = MCPToolset(client)
    async with Agent(FunctionModel(RefundModel()), toolsets=[toolset]) as agent:
        result = await agent.run("Refund ORD-7002.")
    assert toolset.client is client
    assert len(asked) == 2
    assert re.search(r'"restocked":\s*false', result.output), result.output


@pytest.mark.parametrize("behaviour", ["retry", "error"])
async def test_tool_error_behaviour(behaviour: str) -> None:
    desk = Desk(scope=mcp_types.ElicitResult(action="decline"), restock=None)
    toolset: MCPToolset[Any] = MCPToolset(
        load_module(REFUND_DESK).mcp, elicitation_handler=desk, tool_error_behavior=behaviour
    )
    expected = ModelRetry if behaviour == "retry" else ToolError
    async with toolset:
        with pytest.raises(expected, match="could not resolve: elicitation was decline"):
            await toolset.direct_call_tool("refund_order", {"order_id": "ORD-7002", "reason": "x"})
        # A refused request (not a tool's error) is a retry too, or our MCPError with its code.
        expected_refusal = ModelRetry if behaviour == "retry" else MCPError
        with pytest.raises(expected_refusal, match="Unknown tool: refnud_order"):
            await toolset.direct_call_tool("refnud_order", {})


# -- sampling, roots, resources, prompts --------------------------------------------------


def summarize_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The agent's model (not the sampling one): asks `summarize` for a headline, then repeats it."""
    for part in messages[-1].parts:
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"{part.outcome}: {part.content}")])
    return ModelResponse(parts=[ToolCallPart("summarize", {"topic": "refunds"})])


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_sampling_model_roots_resources_and_prompts(transport: str, era: str) -> None:
    sampler = FunctionModel(headline_model, model_name="headline-fn")
    async with served(CLIENTS_SERVER, transport) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, sampling_model=sampler, roots=ROOTS, mode=MODES[era])
        async with Agent(FunctionModel(summarize_model), toolsets=[toolset]) as agent:
            assert toolset.client.protocol_version == era
            # The agent's call runs our Sample resolver, which the sampling model answers.
            assert (await agent.run("A headline about refunds?")).output == (
                "success: headline[headline-fn]: Refunds made simple"
            )
            assert (toolset.server_info.name, toolset.server_info.version) == ("clients-interop", "1.0.0")
            assert toolset.capabilities.resources and toolset.capabilities.prompts
            assert await toolset.direct_call_tool("workspace", {}) == ROOTS
            (resource,) = await toolset.list_resources()
            assert (resource.uri, resource.mime_type) == ("notes://today", "text/plain")
            assert await toolset.read_resource(resource) == "ship the client interop docs"
            (template,) = await toolset.list_resource_templates()
            assert template.uri_template == "notes://{day}"
            assert await toolset.read_resource("notes://monday") == "note for monday"
            (prompt,) = await toolset.list_prompts()
            assert [(a.name, a.required) for a in prompt.arguments or []] == [("code", True)]
            review = await toolset.get_prompt("review", {"code": "x = 1"})
            (message,) = review.messages
            assert message.role == "user"
            assert message.content.content == "Please review this code:\nx = 1"  # type: ignore[union-attr]


@pytest.mark.slow
async def test_set_sampling_model_on_a_pre_built_legacy_client() -> None:
    toolset: MCPToolset[Any] = MCPToolset(Client([PYTHON, str(CLIENTS_SERVER)], mode="legacy"))
    toolset.set_sampling_model(FunctionModel(headline_model, model_name="late-fn"))
    async with toolset:
        assert await toolset.direct_call_tool("summarize", {"topic": "refunds"}) == (
            "headline[late-fn]: Refunds made simple"
        )


async def test_a_sampling_handler_in_pydantic_ais_shape() -> None:
    seen: list[str] = []

    def handler(messages: list[mcp_types.SamplingMessage], params: Any, context: Any) -> str:
        seen.append(f"{context.method}: {messages[-1].content.text}")  # type: ignore[union-attr]
        return "Plain text is a completion"

    toolset: MCPToolset[Any] = MCPToolset(load_module(CLIENTS_SERVER).mcp, sampling_handler=handler)
    async with toolset:
        assert await toolset.direct_call_tool("summarize", {"topic": "tea"}) == (
            "headline[mcp-resolve-client]: Plain text is a completion"
        )
    assert seen == ["sampling/createMessage: Write a one-line headline about tea."]


class Pick(BaseModel):
    size: Literal["S", "M", "L"] = Field(description="Which size?")
    extras: list[Literal["gift-wrap", "express"]] = Field(default_factory=list)
    count: int = 1


async def pick() -> Elicit[Pick]:
    return Elicit("Pick one", Pick)


async def client_roots() -> ListRoots:
    return ListRoots()


def shapes_server() -> MCPServer:
    """A form with an enum, a multi-select and a default; a roots question; a binary resource."""
    mcp = MCPServer("shapes")

    @mcp.tool()
    async def order(picked: Annotated[Pick, Resolve(pick)]) -> dict[str, Any]:
        return picked.model_dump()

    @mcp.tool()
    async def where(roots: Annotated[mcp_types.ListRootsResult, Resolve(client_roots)]) -> list[str]:
        return [str(root.uri) for root in roots.roots]

    @mcp.resource("blob://logo", mime_type="image/png")
    async def logo() -> bytes:
        return b"\x89PNG-ish"

    return mcp


async def test_the_response_type_roots_function_and_binary_resources() -> None:
    schemas: list[dict[str, Any]] = []

    async def choose(message: str, response_type: Any, params: Any, context: Any) -> Any:
        schemas.append(response_type.model_json_schema())
        return response_type(size="M", extras=["express"])  # count keeps its default

    def roots(context: Any) -> list[str]:
        return [f"file:///{context.method}"]

    async with MCPToolset(shapes_server(), elicitation_handler=choose, roots=roots) as toolset:
        assert await toolset.direct_call_tool("order", {}) == {"size": "M", "extras": ["express"], "count": 1}
        assert await toolset.direct_call_tool("where", {}) == ["file:///roots/list"]
        logo = await toolset.read_resource("blob://logo")
    (schema,) = schemas
    assert schema["properties"]["size"]["enum"] == ["S", "M", "L"]
    assert schema["required"] == ["size"]
    assert isinstance(logo, BinaryContent) and logo.is_image and logo.data == b"\x89PNG-ish"


# -- caching -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_tool_list_is_cached_until_the_server_says_it_changed(transport: str, era: str) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            changed.set()

    async with cache_server(transport, 60_000) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, mode=MODES[era], message_handler=on_message)
        sent = count_requests(toolset)
        async with toolset:
            first = names(await toolset.list_tools())
            assert names(await toolset.list_tools()) == first
            assert sent["tools/list"] == 1  # the second list made no request

            assert await toolset.direct_call_tool("open_counter", {"name": "tally"}) == "opened tally"
            with anyio.fail_after(10):
                await changed.wait()
            assert names(await toolset.list_tools()) == {*first, "tally"}
            assert sent["tools/list"] == 2
            assert await toolset.direct_call_tool("tally", {}) == "tally is open"
        assert not toolset.is_running
        async with toolset:  # the last exit forgot the list
            await toolset.list_tools()
        assert sent["tools/list"] == 3


@pytest.mark.slow
async def test_without_cache_tools_every_call_lists() -> None:
    async with cache_server("stdio", 60_000) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, cache_tools=False)
        sent = count_requests(toolset)
        async with toolset:
            for _ in range(3):
                await toolset.list_tools()
        assert sent["tools/list"] == 3


@pytest.mark.slow
@pytest.mark.parametrize(("ttl_ms", "expected"), [(0, [1, 2, 3]), (600, [1, 1, 2])])
async def test_on_2026_07_28_a_list_is_kept_no_longer_than_its_ttl(ttl_ms: int, expected: list[int]) -> None:
    async with cache_server("http", ttl_ms) as target:
        toolset: MCPToolset[Any] = MCPToolset(target)
        sent = count_requests(toolset)
        counts = []
        async with toolset:
            for pause in (0, 0, 0.8):
                await anyio.sleep(pause)
                await toolset.list_tools()
                counts.append(sent["tools/list"])
    assert counts == expected


@pytest.mark.slow
async def test_prompts_and_resources_are_cached_too() -> None:
    async with cache_server("http", 60_000) as target:
        toolset: MCPToolset[Any] = MCPToolset(target)
        sent = count_requests(toolset)
        async with toolset:
            for _ in range(2):
                assert [p.name for p in await toolset.list_prompts()] == ["summary"]
                assert [r.uri for r in await toolset.list_resources()] == ["notes://today"]
            assert (sent["prompts/list"], sent["resources/list"]) == (1, 1)


# -- load_mcp_toolsets ---------------------------------------------------------------------


def both_tools(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call one tool of each server at once, then report what came back."""
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(json.dumps({r.tool_name: r.content for r in returns}))])
    assert {"local_environment", "remote_echo_context", "local_open_counter"} <= {
        t.name for t in info.function_tools
    }
    return ModelResponse(
        parts=[
            ToolCallPart("local_environment", {"name": "GREETING"}),
            ToolCallPart("remote_echo_context", {}),
        ]
    )


@pytest.mark.slow
async def test_load_mcp_toolsets_with_a_stdio_and_an_http_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {
                        "command": "${DESK_PYTHON}",
                        "args": [str(TOOLSET_SERVER)],
                        "env": {"GREETING": "${GREETING:-hello from the default}"},
                        "cwd": "${DESK_CWD:-" + str(tmp_path) + "}",
                    },
                    "remote": {"url": "${NOTES_URL}/mcp", "headers": {"X-Team": "${TEAM}"}},
                }
            }
        )
    )
    monkeypatch.setenv("DESK_PYTHON", PYTHON)
    monkeypatch.setenv("TEAM", "refunds")
    monkeypatch.delenv("GREETING", raising=False)
    monkeypatch.delenv("DESK_CWD", raising=False)
    async with http_server(load_module(TOOLSET_SERVER).mcp.streamable_http_app()) as base:
        monkeypatch.setenv("NOTES_URL", base)
        toolsets = load_mcp_toolsets(config)
        assert [type(t) for t in toolsets] == [PrefixedToolset, PrefixedToolset]
        assert [t.prefix for t in toolsets] == ["local", "remote"]  # type: ignore[attr-defined]
        assert [t.wrapped.id for t in toolsets] == ["local", "remote"]  # type: ignore[attr-defined]
        async with Agent(FunctionModel(both_tools), toolsets=toolsets) as agent:
            result = await agent.run("Where are you, and who am I?")
    assert json.loads(result.output) == {
        "local_environment": {"cwd": str(tmp_path), "value": "hello from the default"},
        "remote_echo_context": {"trace": None, "team": "refunds"},
    }


def write_config(tmp_path: Path, servers: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_an_unset_variable_without_a_default_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    path = write_config(tmp_path, {"api": {"url": "https://mcp.example.com/mcp?key=${NO_SUCH_TOKEN}"}})
    with pytest.raises(ValueError, match=r"Environment variable \$\{NO_SUCH_TOKEN\} is not defined"):
        load_mcp_toolsets(path)
    monkeypatch.setenv("NO_SUCH_TOKEN", "")  # set, even empty, is set
    (toolset,) = load_mcp_toolsets(path)
    assert toolset.wrapped.client.target == "https://mcp.example.com/mcp?key="  # type: ignore[attr-defined]


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_mcp_toolsets(tmp_path / "missing.json")
    with pytest.raises(ValidationError):
        load_mcp_toolsets(write_config(tmp_path, {"api": {"url": 42}}))
    with pytest.raises(ValueError, match="neither `command` nor `url`"):
        load_mcp_toolsets(write_config(tmp_path, {"api": {"type": "stdio"}}))


# -- tasks ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_use_task_runs_a_task_capable_tool(transport: str) -> None:
    asked: list[str] = []
    progress: list[str | None] = []

    async def confirm(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        return response_type(ok=True)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    app = load_module(SLOW_REFUND).build(poll_interval_ms=50).streamable_http_app()
    async with served(SLOW_REFUND, transport, app) as target:
        toolset: MCPToolset[Any] = MCPToolset(
            target, elicitation_handler=confirm, progress_handler=on_progress
        )
        sent = count_requests(toolset)
        async with toolset:
            receipt = await toolset.direct_call_tool(
                "refund_order", {"order_id": "ORD-7002", "reason": "wrong size"}, use_task=True
            )
    assert receipt == {"order_id": "ORD-7002", "reason": "wrong size", "cents": 4800, "reference": "RF-7002"}
    assert asked == ["Refund 48.00 for ORD-7002?"]  # asked inside the task, answered with tasks/update
    assert sent["tasks/get"] > 0 and sent["tasks/update"] == 1
    assert "payment provider: step 1 of 4" in progress  # the task's status, as progress


@pytest.mark.slow
async def test_use_task_with_metadata_and_on_the_handshake_era() -> None:
    async with cache_server("http", 0) as target:
        toolset: MCPToolset[Any] = MCPToolset(target)
        sent = count_requests(toolset)
        async with toolset:
            echoed = await toolset.direct_call_tool(
                "echo_context", {}, metadata={"trace": "t-1"}, use_task=True
            )
        assert echoed["team"] is None  # the task ran to its result...
        assert sent["tasks/get"] > 0
        (call,) = sent.params["tools/call"]  # ...started by one call carrying our _meta and the extension
        assert call["_meta"]["trace"] == "t-1"
        assert TASKS_EXTENSION in call["_meta"][CLIENT_CAPABILITIES_META_KEY]["extensions"]

        async with toolset:  # a tool that runs only as a task needs no use_task, with _meta or without
            for metadata in ({"trace": "t-2"}, None):
                assert await toolset.direct_call_tool("only_as_a_task", {}, metadata) == "done as a task"
        legacy: MCPToolset[Any] = MCPToolset(target, mode="legacy")
        async with legacy:
            with pytest.raises(UserError, match="use_task=True needs protocol 2026-07-28"):
                await legacy.direct_call_tool("echo_context", {}, use_task=True)


# -- what a call carries -----------------------------------------------------------------


def echo_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    for part in messages[-1].parts:
        if isinstance(part, ToolReturnPart):
            return ModelResponse(parts=[TextPart(json.dumps(part.content))])
    return ModelResponse(parts=[ToolCallPart("echo_context", {})])


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_process_tool_call_adds_meta_and_headers_reach_the_server(era: str) -> None:
    async def traced(ctx: Any, call_tool: Any, name: str, args: dict[str, Any]) -> Any:
        return await call_tool(name, args, metadata={"trace": ctx.deps})

    async with cache_server("http", 0) as target:
        toolset: MCPToolset[Any] = MCPToolset(
            target, mode=MODES[era], process_tool_call=traced, headers={"X-Team": "refunds"}
        )
        async with Agent(FunctionModel(echo_model), deps_type=str, toolsets=[toolset]) as agent:
            result = await agent.run("Who am I?", deps="run-7")
    assert json.loads(result.output) == {"trace": "run-7", "team": "refunds"}


@pytest.mark.slow
async def test_a_borrowed_http_client_is_used_and_left_open() -> None:
    async with cache_server("http", 0) as target, httpx.AsyncClient(headers={"X-Team": "borrowed"}) as http:
        toolset: MCPToolset[Any] = MCPToolset(target, http_client=http)
        async with toolset:
            assert await toolset.direct_call_tool("echo_context", {}) == {"trace": None, "team": "borrowed"}
        assert not http.is_closed
        checked: MCPToolset[Any] = MCPToolset(target, verify=True)  # a client of its own, built with `verify`
        async with checked:
            assert await checked.direct_call_tool("echo_context", {}) == {"trace": None, "team": None}


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_auth_oauth_logs_in_to_a_protected_server(era: str) -> None:
    async with deployment() as (authz, url):
        toolset: MCPToolset[Any] = MCPToolset(url, auth=headless(), mode=MODES[era])
        async with toolset:
            assert toolset.client.protocol_version == era
            assert await toolset.direct_call_tool("whoami", {}) == "alice with mcp:read offline_access"
    assert len(authz.authorization_requests) == 1  # one login, then the token on every request


@pytest.mark.slow
@pytest.mark.parametrize("era", [MODERN, LEGACY])
async def test_log_level_filters_the_servers_log_on_both_eras(era: str) -> None:
    lines: list[Any] = []

    async def log(message: mcp_types.LoggingMessageNotificationParams) -> None:
        lines.append(message.data)

    async with cache_server("stdio", 0) as target:
        toolset: MCPToolset[Any] = MCPToolset(target, mode=MODES[era], log_handler=log, log_level="info")
        async with toolset:
            assert await toolset.direct_call_tool("shout", {}) == "shouted"
            with anyio.fail_after(5):
                while not lines:
                    await anyio.sleep(0.01)
    assert lines == ["an info line"]


async def test_include_instructions() -> None:
    seen: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("ok")])

    mcp = load_module(TOOLSET_SERVER).mcp
    for include in (True, False):
        async with Agent(
            FunctionModel(model), toolsets=[MCPToolset(mcp, include_instructions=include)]
        ) as agent:
            await agent.run("hi")
    assert seen == ["Open counters with open_counter.", None]


@pytest.mark.parametrize("include", [True, None])
async def test_include_return_schema_shows_the_model_the_output_schema(include: bool | None) -> None:
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update({tool.name: tool for tool in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    toolset: MCPToolset[Any] = MCPToolset(load_module(SLOW_REFUND).build(), include_return_schema=include)
    async with Agent(FunctionModel(model), toolsets=[toolset]) as agent:
        await agent.run("hi")
    (tool,) = seen.values()
    assert set(tool.parameters_json_schema["properties"]) == {"order_id", "reason"}
    # A model without native return schemas (FunctionModel) gets the schema in the description.
    assert ('"title": "Receipt"' in tool.description) is bool(include)


@pytest.mark.slow
async def test_init_and_read_timeouts() -> None:
    silent = [PYTHON, "-c", "import sys; sys.stdin.read()"]  # a process that never answers, gone at EOF
    with anyio.fail_after(10), pytest.raises(TimeoutError):
        async with MCPToolset(silent, init_timeout=0.5):
            pass

    async def confirm(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return response_type(ok=True)

    slow = load_module(SLOW_REFUND).build()  # its payment provider takes 1.2 s
    toolset: MCPToolset[Any] = MCPToolset(slow, elicitation_handler=confirm, read_timeout=0.3)
    async with toolset:
        with pytest.raises(TimeoutError):
            await toolset.direct_call_tool("refund_order", {"order_id": "ORD-7001", "reason": "late"})


# -- what the constructor refuses, and what needs a connection -------------------------------


def test_the_constructor_refuses_what_cannot_work() -> None:
    prebuilt = Client("http://127.0.0.1:9/mcp")
    with pytest.raises(
        ValueError, match=r"Cannot pass 'elicitation_handler', 'read_timeout' alongside a pre-built"
    ):
        MCPToolset(prebuilt, elicitation_handler=Desk(scope=None, restock=None), read_timeout=3)
    sampler = FunctionModel(headline_model)
    with pytest.raises(ValueError, match="either `sampling_model` or `sampling_handler`, not both"):
        MCPToolset("http://127.0.0.1:9/mcp", sampling_model=sampler, sampling_handler=lambda *a: "x")
    with pytest.raises(ValueError, match="`headers` and `http_client` are mutually exclusive"):
        MCPToolset("http://127.0.0.1:9/mcp", headers={"a": "b"}, http_client=httpx.AsyncClient())
    with pytest.raises(ValueError, match="only apply to an http"):
        MCPToolset(str(REFUND_DESK), auth="a-token")


async def test_server_facts_need_a_connection() -> None:
    toolset: MCPToolset[Any] = MCPToolset(load_module(REFUND_DESK).mcp)
    for name in ("server_info", "capabilities", "instructions"):
        with pytest.raises(AttributeError, match="only available after initialization"):
            getattr(toolset, name)
    async with toolset:
        assert toolset.is_running
        assert toolset.instructions is not None and toolset.instructions.startswith("Refunds follow")
    assert not toolset.is_running


async def test_errors_from_prompts_and_resources_are_the_toolsets_mcp_error() -> None:
    toolset: MCPToolset[Any] = MCPToolset(load_module(CLIENTS_SERVER).mcp)
    async with toolset:
        with pytest.raises(ToolsetMCPError) as raised:
            await toolset.read_resource("notes://a/b")  # no template matches: `{day}` is one segment
    assert isinstance(raised.value, MCPError)  # ours too, so `except mcp_resolve.MCPError` still works
    assert isinstance(raised.value.code, int) and raised.value.message


@pytest.mark.slow
def test_only_mcp_resolve_pydantic_ai_imports_pydantic_ai() -> None:
    code = (
        "import sys, mcp_resolve, mcp_resolve.client; "
        "assert not [m for m in sys.modules if m.startswith('pydantic_ai')], 'pydantic_ai imported'"
    )
    subprocess.run([PYTHON, "-c", code], check=True, cwd=ROOT)
    without = (
        "import sys; sys.modules['pydantic_ai'] = None\n"  # as if the extra were not installed
        "try:\n    import mcp_resolve.pydantic_ai\n"
        "except ImportError as error:\n    assert \"pip install 'mcp-resolve[pydantic-ai]'\" in str(error), error\n"
        "else:\n    raise SystemExit('imported without pydantic-ai')"
    )
    subprocess.run([PYTHON, "-c", without], check=True, cwd=ROOT)
