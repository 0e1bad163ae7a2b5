"""Both eras on the wire: `initialize` negotiation, and on 2026-07-28 `server/discover`, `_meta` checked
on every request, caching hints, and no mid-call questions from the Context (the author is pointed at
resolvers instead).

Raw messages go through the in-memory transport (a JSON round trip each way),
so every byte of the envelope is ours to get wrong on purpose.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types
import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    CreateMessageRequestParams,
    CreateMessageResult,
    TextContent,
)

from conftest import load_module
from mcp_resolve import Client, Context, MCPServer
from mcp_resolve.transports.memory import MemoryPipe, connect_in_memory
from servers.raw_stdio import EVERYTHING_CORE, modern_meta

pytestmark = pytest.mark.anyio


class Wire:
    """Raw JSON-RPC over an in-memory pipe."""

    def __init__(self, pipe: MemoryPipe) -> None:
        self.pipe = pipe
        self.ids = itertools.count(1)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self.ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.pipe.send(message)
        while True:
            reply = await self.pipe.receive()
            if reply.get("id") == request_id and "method" not in reply:
                return reply


@asynccontextmanager
async def wire(server: MCPServer | None = None) -> AsyncIterator[Wire]:
    async with connect_in_memory(server or load_module(EVERYTHING_CORE).mcp) as pipe:
        yield Wire(pipe)


MODERN_ONLY_KEYS = {"resultType", "ttlMs", "cacheScope", "_meta"}


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),  # unknown: the latest we speak as a counter-offer
        ("2026-07-28", "2025-11-25"),  # the modern era has no handshake: counter-offer too
    ],
)
async def test_initialize_negotiates_or_counter_offers_the_latest(offered: str, chosen: str) -> None:
    async with wire() as w:
        reply = await w.call(
            "initialize",
            {"protocolVersion": offered, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
        )
        result = reply["result"]
        assert result["protocolVersion"] == chosen
        assert result["serverInfo"] == {"name": "everything-core", "version": "1.2.3"}
        assert result["instructions"] == "A server for testing the core."
        assert set(result["capabilities"]) == {"tools", "resources", "prompts", "logging", "completions"}
        assert result["capabilities"]["resources"]["subscribe"] is True
        await w.pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = (await w.call("tools/list"))["result"]
    # handshake-era results carry nothing of 2026-07-28 (strict older peers reject unknown keys)
    assert not MODERN_ONLY_KEYS & set(result)
    assert not MODERN_ONLY_KEYS & set(listed)
    assert "greet" in {tool["name"] for tool in listed["tools"]}


async def test_initialize_without_a_version_is_invalid_params() -> None:
    async with wire() as w:
        reply = await w.call("initialize", {"capabilities": {}, "clientInfo": {"name": "c", "version": "1"}})
        assert reply["error"]["code"] == -32602
        assert "protocolVersion" in reply["error"]["message"]


async def test_discover_result_shape() -> None:
    async with wire() as w:
        reply = await w.call("server/discover", {"_meta": modern_meta()})
    result = reply["result"]
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 0 and result["cacheScope"] == "public"
    assert result["_meta"][SERVER_INFO_META_KEY] == {"name": "everything-core", "version": "1.2.3"}
    assert result["instructions"] == "A server for testing the core."
    capabilities = result["capabilities"]
    assert set(capabilities) == {"tools", "resources", "prompts", "logging", "completions"}
    # resources/subscribe is gone at 2026-07-28; subscriptions/listen's resourceSubscriptions serve it.
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
    assert capabilities["tools"] == capabilities["prompts"] == {"listChanged": True}
    mcp_types.DiscoverResult.model_validate(result)  # the official wire model accepts it


async def test_caching_hints_on_every_cacheable_result() -> None:
    server = load_module(EVERYTHING_CORE).mcp
    server.cache_ttl_ms = 5000
    async with wire(server) as w:
        listings = {
            method: (await w.call(method, {"_meta": modern_meta()}))["result"]
            for method in (
                "server/discover",
                "tools/list",
                "prompts/list",
                "resources/list",
                "resources/templates/list",
            )
        }
        read = (await w.call("resources/read", {"uri": "memo://static", "_meta": modern_meta()}))["result"]
        called = (
            await w.call("tools/call", {"name": "greet", "arguments": {"name": "x"}, "_meta": modern_meta()})
        )["result"]
    for method, result in listings.items():
        assert (result["ttlMs"], result["cacheScope"], result["resultType"]) == (
            5000,
            "public",
            "complete",
        ), method
    assert (read["ttlMs"], read["cacheScope"]) == (0, "private")  # contents may be per user: never shared
    assert called["resultType"] == "complete"
    assert "ttlMs" not in called and "cacheScope" not in called  # a tool call is not cacheable
    assert mcp_types.ListToolsResult.model_validate(listings["tools/list"]).ttl_ms == 5000


REQUESTS: dict[str, dict[str, Any]] = {
    "server/discover": {},
    "tools/list": {},
    "tools/call": {"name": "greet", "arguments": {"name": "x"}},
    "resources/list": {},
    "resources/templates/list": {},
    "resources/read": {"uri": "memo://static"},
    "prompts/list": {},
    "prompts/get": {"name": "review", "arguments": {"code": "x"}},
    "completion/complete": {
        "ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "language", "value": ""},
    },
}

BAD_ENVELOPES: dict[str, tuple[dict[str, Any], int, str]] = {
    "no client capabilities": (
        {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_INFO_META_KEY: {"name": "c", "version": "1"}},
        -32602,
        "clientCapabilities",
    ),
    "client capabilities not an object": (
        modern_meta(**{CLIENT_CAPABILITIES_META_KEY: []}),
        -32602,
        "clientCapabilities",
    ),
    "client info without a name": (
        modern_meta(**{CLIENT_INFO_META_KEY: {"version": "1"}}),
        -32602,
        "clientInfo",
    ),
    "unknown log level": (modern_meta(**{LOG_LEVEL_META_KEY: "chatty"}), -32602, "chatty"),
    "unsupported version": (modern_meta(**{PROTOCOL_VERSION_META_KEY: "2025-11-25"}), -32022, "version"),
}


@pytest.mark.parametrize("method", list(REQUESTS))
async def test_meta_is_validated_on_every_request(method: str) -> None:
    async with wire() as w:
        good = await w.call(method, {**REQUESTS[method], "_meta": modern_meta()})
        assert good["result"]["resultType"] == "complete", good
        for case, (meta, code, word) in BAD_ENVELOPES.items():
            reply = await w.call(method, {**REQUESTS[method], "_meta": meta})
            assert reply["error"]["code"] == code, (case, reply)
            assert word in reply["error"]["message"], (case, reply)
            if code == -32022:
                assert reply["error"]["data"]["supported"] == ["2026-07-28"]


async def test_handshake_only_methods_do_not_exist_on_the_modern_era() -> None:
    async with wire() as w:
        for method, params in (
            ("logging/setLevel", {"level": "info"}),
            ("ping", {}),
            (
                "initialize",
                {
                    "protocolVersion": "2026-07-28",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            ),
        ):
            reply = await w.call(method, {**params, "_meta": modern_meta()})
            assert reply["error"]["code"] == -32601, (method, reply)


@pytest.mark.parametrize(
    ("tool", "arguments", "marker"),
    [
        ("ask_name", {}, "Elicit("),
        ("ask_model", {"prompt": "hi"}, "Sample("),
        ("client_roots", {}, "ListRoots()"),
    ],
)
async def test_mid_call_questions_on_modern_tell_the_author_to_use_a_resolver(
    tool: str, arguments: dict[str, Any], marker: str
) -> None:
    async with wire() as w:
        capable = modern_meta(
            **{CLIENT_CAPABILITIES_META_KEY: {"elicitation": {}, "sampling": {}, "roots": {}}}
        )
        reply = await w.call("tools/call", {"name": tool, "arguments": arguments, "_meta": capable})
    # The official server's envelope (JSON-RPC -32600: no back-channel), with our advice as its message.
    assert "result" not in reply and reply["error"]["code"] == -32600
    text = reply["error"]["message"]
    assert "2026-07-28" in text and "Resolve(" in text and marker in text


async def test_the_same_context_questions_work_on_the_handshake_era() -> None:
    async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        assert params.max_tokens == 50
        prompt = params.messages[0].content
        assert isinstance(prompt, TextContent)
        return CreateMessageResult.model_validate(
            {
                "role": "assistant",
                "model": "echo-1",
                "content": {"type": "text", "text": f"echo {prompt.text}"},
            }
        )

    async with Client(
        load_module(EVERYTHING_CORE).mcp,
        mode="legacy",
        sampling_handler=sample,
        roots=["file:///work", "file:///tmp"],
    ) as client:
        sampled = await client.call_tool("ask_model", {"prompt": "hello"})
        roots = await client.call_tool("client_roots")
    assert sampled.structured_content == {"result": "echo-1 said: echo hello"}
    assert roots.structured_content == {"result": ["file:///work", "file:///tmp"]}


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_context_describes_the_request(mode: Any, version: str) -> None:
    async def elicit(params: Any) -> dict[str, Any]:
        return {"action": "cancel"}

    async with Client(
        load_module(EVERYTHING_CORE).mcp,
        mode=mode,
        elicitation_handler=elicit,
        client_info={"name": "probe", "version": "2"},
    ) as client:
        seen = await client.call_tool("whoami")
    assert seen.structured_content == {
        "protocol": version,
        "client": "probe",
        "elicitation": True,
        "headers": None,  # not on HTTP
        "has_request_id": True,
    }


async def test_lifespan_value_reaches_the_context_and_the_lifespan_ends_with_the_last_connection() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[dict[str, str]]:
        events.append("enter")
        yield {"db": f"connection for {server.name}"}
        events.append("exit")

    mcp = MCPServer("with-lifespan", lifespan=lifespan)

    @mcp.tool()
    async def db(ctx: Context) -> str:
        assert ctx.request_context.lifespan_context is ctx.lifespan_context  # the official SDK's spelling too
        return str(ctx.lifespan_context["db"])

    async with Client(mcp, mode="legacy") as first, Client(mcp, mode="auto") as second:
        for client in (first, second):
            assert (await client.call_tool("db")).structured_content == {
                "result": "connection for with-lifespan"
            }
        assert events == ["enter"]  # one lifespan however many connections share the server
    assert events == ["enter", "exit"]
