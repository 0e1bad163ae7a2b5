"""`MCPServer(middleware=[...])`: the official SDK's server middleware chain, on both eras and every transport.

The server in `servers/middleware_server.py` is built on both SDKs from one
definition. The official client drives ours over stdio and over HTTP, and the
official server in process, and what the chain did (its order, the rewritten
arguments, the refusal, the answer a middleware gave itself) must match. The
one deliberate difference: a middleware that crashes answers "Internal error"
here, where the official SDK sends the exception's text on the handshake era.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError as OfficialMCPError

from http_helpers import http_server
from mcp_resolve import MCPError, MCPServer, ServerMiddleware, ServerRequestContext
from mcp_resolve.transports.memory import connect_in_memory
from servers import middleware_server
from servers.middleware_server import SECRET
from servers.raw_stdio import HERE, RawStdio, modern_meta

pytestmark = pytest.mark.anyio

SCRIPT = HERE / "middleware_server.py"
SRC = HERE.parent.parent / "src"
MODES = ["auto", "legacy"]


@asynccontextmanager
async def client_of(where: str, mode: str) -> AsyncIterator[OfficialClient]:
    if where == "official":
        async with OfficialClient(middleware_server.build("official"), mode=mode) as client:
            yield client
    elif where == "stdio":
        # This checkout's package, whatever the environment has installed.
        params = StdioServerParameters(
            command=sys.executable, args=[str(SCRIPT)], env={"PYTHONPATH": str(SRC)}
        )
        async with OfficialClient(params, mode=mode) as client:
            yield client
    else:
        async with (
            http_server(middleware_server.build().streamable_http_app()) as base,
            OfficialClient(f"{base}/mcp", mode=mode) as client,
        ):
            yield client


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _exercise(client: OfficialClient) -> dict[str, Any]:
    """Everything the chain does, as the client sees it."""
    out: dict[str, Any] = {"echo": _text(await client.call_tool("echo", {"text": "hi"}))}
    out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
    with pytest.raises(OfficialMCPError) as refused:
        await client.call_tool("forbidden", {})
    out["refused"] = (refused.value.error.code, refused.value.error.message)
    with pytest.raises(OfficialMCPError) as crashed:
        await client.call_tool("crash", {})
    out["crashed"] = crashed.value.error
    observed = await client.call_tool("observed", {})
    out["observed"] = (observed.structured_content or {}).get("result")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_chain_logs_rewrites_refuses_and_answers_like_the_official_one(
    transport: str, mode: str
) -> None:
    async with client_of("official", mode) as client:
        expected = await _exercise(client)
    async with client_of(transport, mode) as client:
        got = await _exercise(client)

    assert got["echo"] == expected["echo"] == "hi (rewritten)"
    assert got["prompts"] == expected["prompts"] == ["from-middleware"]
    assert got["refused"] == expected["refused"] == (-32600, "forbidden by policy")
    assert got["observed"] == expected["observed"]
    observed = got["observed"]
    # Outermost first, in and out: the echo call passed both links, then came back out through the outer.
    first_call = observed.index("outer> tools/call (request)")
    assert observed[first_call : first_call + 3] == [
        "outer> tools/call (request)",
        "inner> tools/call",
        "outer< tools/call",
    ]
    assert "inner! tools/call MCPError" in observed  # the refusal, seen by the middleware above it
    assert not any(line.startswith("ran ") for line in observed)  # refused tools never ran
    if mode == "legacy":
        assert observed[:3] == ["outer> initialize (request)", "inner> initialize", "outer< initialize"]
        assert "outer> notifications/initialized (notification)" in observed
    else:
        assert observed[0] == "outer> server/discover (request)"
    # The one difference: the crash is an internal error here on both eras, its text only in our log;
    # the official SDK sends the exception's text on the handshake era (code 0).
    assert got["crashed"].code == -32603 and got["crashed"].message == "Internal error"
    assert SECRET not in repr(got["crashed"])
    assert (SECRET in expected["crashed"].message) == (mode == "legacy")


@pytest.mark.slow
def test_a_crashing_middleware_leaks_nothing_on_the_wire_and_the_server_goes_on() -> None:
    peer = RawStdio(SCRIPT)
    try:
        peer.initialize()
        crashed = peer.request("tools/call", {"name": "crash", "arguments": {}})
        assert crashed["error"] == {"code": -32603, "message": "Internal error"}
        modern = peer.request("tools/call", {"name": "crash", "arguments": {}, "_meta": modern_meta()})
        assert modern["error"] == {"code": -32603, "message": "Internal error"}
        echoed = peer.request("tools/call", {"name": "echo", "arguments": {"text": "still here"}})
        assert echoed["result"]["content"][0]["text"] == "still here (rewritten)"
        code, rest = peer.close()
    finally:
        peer.kill()
    wire = repr([crashed, modern, echoed, rest])
    assert SECRET not in wire and "Traceback" not in wire
    assert SECRET in peer.stderr.decode()  # the author reads it in the log
    assert code == 0


# -- semantics checked in process -------------------------------------------------------------
def _server(*middleware: ServerMiddleware[Any]) -> MCPServer:
    mcp = MCPServer("mw", middleware=list(middleware))

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    return mcp


async def _ask(pipe: Any, message: dict[str, Any]) -> dict[str, Any]:
    await pipe.send(message)
    while True:
        answer: dict[str, Any] = await pipe.receive()
        if "id" in answer and "method" not in answer:
            return answer


def _initialize(request_id: int = 1) -> dict[str, Any]:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


async def test_a_veto_after_call_next_leaves_no_session_behind() -> None:
    refuse_once = [True]

    async def veto(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "initialize" and refuse_once:
            refuse_once.clear()
            raise MCPError(-32600, "not today")
        return result

    async with connect_in_memory(_server(veto)) as pipe:
        refused = await _ask(pipe, _initialize(1))
        assert refused["error"] == {"code": -32600, "message": "not today"}
        listed = await _ask(pipe, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        assert listed["error"]["code"] == -32600 and "before initialization" in listed["error"]["message"]
        accepted = await _ask(pipe, _initialize(3))
        assert accepted["result"]["protocolVersion"] == "2025-11-25"
        listed = await _ask(pipe, {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}})
        assert [t["name"] for t in listed["result"]["tools"]] == ["echo"]


async def test_a_middleware_sees_the_context_the_official_one_gives() -> None:
    seen: list[ServerRequestContext[Any, Any]] = []

    async def look(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        seen.append(ctx)
        return await call_next(ctx)

    mcp = _server(look)
    async with connect_in_memory(mcp) as pipe:
        params = {"name": "echo", "arguments": {"text": "x"}, "_meta": modern_meta(progressToken="p")}
        answer = await _ask(pipe, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
        assert answer["result"]["resultType"] == "complete"
        await _ask(pipe, _initialize(8))
    modern, handshake = seen
    assert (modern.method, modern.request_id, modern.era, modern.protocol_version) == (
        "tools/call",
        7,
        "modern",
        "2026-07-28",
    )
    assert modern.params is not None and modern.params["arguments"] == {"text": "x"}
    assert modern.meta is not None and modern.meta["progressToken"] == "p"
    assert modern.session.client_info is not None and modern.session.client_info.name == "raw-test"
    assert modern.session.client_capabilities == types.ClientCapabilities()
    assert (handshake.method, handshake.era, handshake.protocol_version) == ("initialize", "handshake", "")
    assert handshake.session.client_capabilities is None  # nothing declared before initialize
    assert replace(modern, method="x").method == "x"  # a dataclass, as call_next(replace(ctx, ...)) needs


async def test_a_short_circuit_is_finished_for_its_era_and_models_are_dumped() -> None:
    async def answer_listing(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.method == "tools/list":
            return types.ListToolsResult(tools=[])
        if ctx.method == "tools/call":
            return types.ErrorData(code=-32001, message="as an error model")
        return await call_next(ctx)

    async with connect_in_memory(_server(answer_listing)) as pipe:
        modern = await _ask(
            pipe, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}
        )
        assert modern["result"]["tools"] == [] and modern["result"]["resultType"] == "complete"
        assert modern["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mw"
        await _ask(pipe, _initialize(2))
        legacy = await _ask(pipe, {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})
        assert legacy["result"] == {"tools": []}
        failed = await _ask(
            pipe, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "echo"}}
        )
        assert failed["error"] == {"code": -32001, "message": "as an error model"}


async def test_a_failing_notification_middleware_is_logged_and_a_cancellation_still_applies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def crash_on_notifications(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        if ctx.request_id is None:
            raise RuntimeError(SECRET)
        return await call_next(ctx)

    mcp = _server(crash_on_notifications)
    async with connect_in_memory(mcp) as pipe:
        await _ask(pipe, _initialize(1))
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = await _ask(pipe, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        assert [t["name"] for t in listed["result"]["tools"]] == ["echo"]
    assert any("middleware failed on the notification" in r.getMessage() for r in caplog.records)


async def test_no_middleware_means_an_empty_live_list() -> None:
    mcp = MCPServer("plain")
    assert mcp.middleware == []
    seen: list[str] = []

    async def late(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx)

    mcp.middleware.append(late)
    async with connect_in_memory(mcp) as pipe:
        await _ask(pipe, _initialize(1))
    assert seen == ["initialize"]
