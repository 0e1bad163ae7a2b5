"""`MCPServer(extensions=[...])` and `require_client_extension`: the official SDK's extension API.

The server in `servers/middleware_server.py` declares one extension (a tool,
a request method of its own, a `tools/call` interceptor) and is built on both
SDKs. The official client must see the same capabilities and the same
refusals from ours as from the official server; a client that declares the
extension gets through, one that declares it malformed is refused outright.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.client import advertise
from mcp.shared.exceptions import MCPError as OfficialMCPError
from mcp_types import RequestParams

from http_helpers import http_server
from mcp_resolve import (
    Context,
    Extension,
    MCPServer,
    MethodBinding,
    ResourceBinding,
    ServerRequestContext,
    require_client_extension,
)
from mcp_resolve.resources import Resource
from mcp_resolve.transports.memory import connect_in_memory
from servers import middleware_server
from servers.raw_stdio import HERE, RawStdio, modern_meta

pytestmark = pytest.mark.anyio

SCRIPT = HERE / "middleware_server.py"
ECHO = "com.example/echo"


async def _observe(client: OfficialClient) -> dict[str, Any]:
    out: dict[str, Any] = {"extensions": client.server_capabilities.extensions}
    tools = {t.name: t.meta for t in (await client.list_tools()).tools}
    out["shout_meta"] = tools.get("shout")
    try:
        result = await client.call_tool("shout", {"text": "hi"})
        out["shout"] = result.structured_content
    except OfficialMCPError as exc:
        out["shout"] = exc.error.model_dump(by_alias=True, exclude_none=True)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("declares", [False, True])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_sees_the_same_extension_from_both_servers(
    mode: str, declares: bool
) -> None:
    extensions = [advertise(ECHO)] if declares else None
    async with OfficialClient(
        middleware_server.build("official"), mode=mode, extensions=extensions
    ) as client:
        expected = await _observe(client)
    ours = middleware_server.build()
    async with (
        http_server(ours.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode, extensions=extensions) as client,
    ):
        got = await _observe(client)
    assert got == expected
    # On 2026-07-28 the extension is declared with its settings; the handshake era has no such field.
    assert got["extensions"] == ({ECHO: {"loud": True}} if mode == "auto" else None)
    assert got["shout_meta"] == {ECHO: {"kind": "shout"}}
    if declares:
        assert got["shout"] == {"result": "HI"}
    else:
        assert got["shout"] == {
            "code": -32021,
            "message": f"Client did not declare required extension {ECHO!r}",
            "data": {"requiredCapabilities": {"extensions": {ECHO: {}}}},
        }


def _caps_meta(capabilities: dict[str, Any]) -> dict[str, Any]:
    return modern_meta(**{"io.modelcontextprotocol/clientCapabilities": capabilities})


@pytest.mark.slow
def test_the_extension_method_over_stdio_on_both_eras_and_malformed_declarations() -> None:
    peer = RawStdio(SCRIPT)
    try:
        discovered = peer.request("server/discover", {"_meta": modern_meta()})
        assert discovered["result"]["capabilities"]["extensions"] == {ECHO: {"loud": True}}
        declared = {"extensions": {ECHO: {}}}
        answered = peer.request(ECHO, {"text": "x", "_meta": _caps_meta(declared)})
        assert answered["result"]["echoed"] == "x" and answered["result"]["resultType"] == "complete"
        refused = peer.request(ECHO, {"text": "x", "_meta": modern_meta()})
        assert refused["error"]["code"] == -32021
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {ECHO: {}}}}
        bad_params = peer.request(ECHO, {"text": 5, "_meta": _caps_meta(declared)})
        assert bad_params["error"] == {"code": -32602, "message": "Invalid request parameters", "data": ""}
        # Hostile: a declaration of the wrong shape is refused before anything reads it (as the
        # official SDK does); a list must not pass for a declaration of its members.
        for malformed in ("bogus", [ECHO], {ECHO: 5}, {ECHO: [1]}, {ECHO: None}):
            answer = peer.request(ECHO, {"text": "x", "_meta": _caps_meta({"extensions": malformed})})
            assert answer["error"]["code"] == -32602, malformed
            listed = peer.request("tools/list", {"_meta": _caps_meta({"extensions": malformed})})
            assert listed["error"]["code"] == -32602, malformed
        # The handshake era: the same method, the declaration in initialize.
        for malformed in ("bogus", [ECHO], {ECHO: 5}):
            init = peer.request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"extensions": malformed},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            )
            assert init["error"]["code"] == -32602, malformed
        before = peer.request(ECHO, {"text": "x"})
        assert before["error"]["code"] == -32600  # no session was opened by the refused ones
        init = peer.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": declared,
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        assert "extensions" not in init["result"]["capabilities"]
        peer.notify("notifications/initialized")
        legacy = peer.request(ECHO, {"text": "y"})
        assert legacy["result"] == {"echoed": "y"}
        code, _ = peer.close()
    finally:
        peer.kill()
    assert code == 0


@pytest.mark.parametrize("through", ["context", "request_context"])
async def test_require_client_extension_from_a_tool_context(through: str) -> None:
    """With the tool's Context, or `ctx.request_context` as the official SDK's own tests call it."""
    mcp = MCPServer("tools")

    @mcp.tool()
    def needs(ctx: Context) -> str:
        require_client_extension(ctx if through == "context" else ctx.request_context, ECHO)
        return "ok"

    async with connect_in_memory(mcp) as pipe:
        for caps, expected in (({}, -32021), ({"extensions": {ECHO: {}}}, None)):
            params = {"name": "needs", "arguments": {}, "_meta": _caps_meta(caps)}
            await pipe.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
            answer = await pipe.receive()
            if expected is None:
                assert answer["result"]["content"][0]["text"] == "ok"
            else:
                assert answer["error"]["code"] == expected


# -- construction-time rules, as the official SDK enforces them ---------------------------------
class _Params(RequestParams):
    pass


async def _noop(ctx: ServerRequestContext[Any, Any], params: _Params) -> dict[str, Any]:
    return {}


def test_bindings_and_identifiers_are_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="spec method"):
        MethodBinding("tools/list", _Params, _noop)
    with pytest.raises(ValueError, match="empty protocol_versions"):
        MethodBinding("com.example/x", _Params, _noop, protocol_versions=frozenset())
    with pytest.raises(TypeError, match="reverse-DNS"):

        class NoPrefix(Extension):
            identifier = "echo"

    class Twice(Extension):
        identifier = "com.example/twice"

    with pytest.raises(ValueError, match="already registered"):
        MCPServer("x", extensions=[Twice(), Twice()])

    class Clash(Extension):
        identifier = "com.example/clash"

        def methods(self) -> list[MethodBinding]:
            return [MethodBinding("tasks/get", _Params, _noop)]  # served by the server itself

    with pytest.raises(ValueError, match="already"):
        MCPServer("x", extensions=[Clash()])


async def test_a_version_gated_method_and_a_contributed_resource() -> None:
    async def read_note() -> str:
        return "from the extension"

    class Gated(Extension):
        identifier = "com.example/gated"

        def methods(self) -> list[MethodBinding]:
            return [
                MethodBinding("com.example/old", _Params, _noop, protocol_versions=frozenset({"2025-11-25"}))
            ]

        def resources(self) -> list[ResourceBinding]:
            return [ResourceBinding(Resource(read_note, uri="note://ext", mime_type="text/plain"))]

    mcp = MCPServer("gated", extensions=[Gated()])
    async with connect_in_memory(mcp) as pipe:
        await pipe.send(
            {"jsonrpc": "2.0", "id": 1, "method": "com.example/old", "params": {"_meta": modern_meta()}}
        )
        assert (await pipe.receive())["error"] == {
            "code": -32601,
            "message": "Method not found",
            "data": "com.example/old",
        }
        params = {"uri": "note://ext", "_meta": modern_meta()}
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": params})
        assert (await pipe.receive())["result"]["contents"][0]["text"] == "from the extension"
        await pipe.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        await pipe.receive()
        await pipe.send({"jsonrpc": "2.0", "id": 4, "method": "com.example/old", "params": {}})
        assert (await pipe.receive())["result"] == {}
