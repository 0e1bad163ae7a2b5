"""Issue 29 items 6, 7, 8 and 10: the server's edges, checked against the reference (mcp==2.3.0).

Each scenario is built from one definition for both implementations and
driven the same way over a real transport: raw JSON-RPC lines to a stdio
subprocess, real HTTP to uvicorn on 127.0.0.1 with the official client, or
the in-memory `Client`. Outcomes (codes, result shapes, what raises) must
agree; wording only where it is ours to choose. Where the two deliberately
differ, the test says so next to the assertion.

No `from __future__ import annotations`: tools are local functions whose
annotations name local resolvers and the marker classes passed in.
"""

import gc
import json
import types as pytypes
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import httpx
import mcp_types as types
import pytest
from mcp import Client as OfficialClient
from mcp import MCPError as OfficialMCPError
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import Elicit as OfficialElicit
from mcp.server.mcpserver import Resolve as OfficialResolve
from mcp.server.mcpserver.exceptions import ToolError as OfficialToolError
from mcp.server.request_state import RequestStateSecurity as OfficialSecurity
from pydantic import BaseModel, Field

from conftest import initialize_request, load_module
from http_helpers import http_server
from mcp_resolve import (
    AcceptedElicitation,
    Client,
    Elicit,
    MCPError,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    ToolError,
)
from servers.raw_stdio import RawStdio

pytestmark = pytest.mark.anyio

INVALID_REQUEST, INVALID_PARAMS, MISSING_CAPABILITY = -32600, -32602, -32021
FORM_ELICITATION = {"elicitation": {"form": {}}}
MODES = ["2026-07-28", "legacy"]

OURS = pytypes.SimpleNamespace(
    name="ours",
    Server=MCPServer,
    Resolve=Resolve,
    Elicit=Elicit,
    ToolError=ToolError,
    MCPError=MCPError,
    imports="from mcp_resolve import Elicit, MCPServer, Resolve",
)
OFFICIAL = pytypes.SimpleNamespace(
    name="official",
    Server=OfficialServer,
    Resolve=OfficialResolve,
    Elicit=OfficialElicit,
    ToolError=OfficialToolError,
    MCPError=OfficialMCPError,
    imports="from mcp.server.mcpserver import Elicit, MCPServer, Resolve",
)
IMPLS = [pytest.param(OURS, id="ours"), pytest.param(OFFICIAL, id="official")]


class Colour(BaseModel):
    colour: str


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


# -- item 6: notifications/initialized without initialize ---------------------------------------

PAINT_SERVER = """\
import warnings
from typing import Annotated

from pydantic import BaseModel

{imports}

warnings.simplefilter("ignore")  # keep stderr to what matters
mcp = MCPServer("painter")


class Colour(BaseModel):
    colour: str


async def ask_colour() -> Elicit[Colour]:
    return Elicit("Favourite colour?", Colour)


@mcp.tool()
async def paint(wall: str, colour: Annotated[Colour, Resolve(ask_colour)]) -> str:
    return f"{{wall}} painted {{colour.colour}}"


@mcp.tool()
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    mcp.run()
"""


def paint_server(impl: Any, directory: Path) -> Path:
    """The same painter server, written for `impl`, as a script both stdio and HTTP tests can use."""
    path = directory / f"painter_{impl.name}.py"
    path.write_text(PAINT_SERVER.format(imports=impl.imports))
    return path


@contextmanager
def raw_stdio(script: Path) -> Iterator[RawStdio]:
    peer = RawStdio(script)
    try:
        yield peer
    finally:
        peer.kill()


@pytest.mark.slow
@pytest.mark.parametrize("impl", IMPLS)
def test_initialized_without_initialize_answers_the_missing_capability_over_stdio(
    impl: Any, tmp_path: Path
) -> None:
    with raw_stdio(paint_server(impl, tmp_path)) as peer:
        # Before any handshake, both refuse (we say -32600 Invalid Request; the reference
        # pins -32602 for compatibility): the "initialize first" rule stands.
        refused = peer.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert refused["error"]["code"] == (INVALID_REQUEST if impl is OURS else INVALID_PARAMS)
        assert "error" in peer.request("tools/list")
        assert peer.request("ping")["result"] == {}

        # A client that declares the handshake done without one is served as having declared nothing.
        peer.notify("notifications/initialized")
        listed = peer.request("tools/list")["result"]["tools"]
        assert {tool["name"] for tool in listed} == {"paint", "add"}
        added = peer.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert added["result"]["structuredContent"] == {"result": 3}
        asked = peer.request("tools/call", {"name": "paint", "arguments": {"wall": "north"}})
        assert asked["error"]["code"] == MISSING_CAPABILITY
        assert asked["error"]["data"]["requiredCapabilities"] == FORM_ELICITATION

        # A late initialize still settles the session: with the capability declared, the question goes out.
        initialized = peer.request("initialize", initialize_request(FORM_ELICITATION)["params"])
        assert initialized["result"]["protocolVersion"] == "2025-11-25"
        peer.start_request("tools/call", {"name": "paint", "arguments": {"wall": "north"}})
        question = peer.receive()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "Favourite colour?"


def _rpc_reply(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message in a response, whether sent as JSON (ours) or one SSE event (the reference)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        replies = [json.loads(d) for d in data if d]
        return next(r for r in replies if "id" in r and "method" not in r)
    return response.json()  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("impl", IMPLS)
async def test_a_session_that_declared_nothing_gets_the_missing_capability_over_http(
    impl: Any, tmp_path: Path
) -> None:
    """On HTTP a session exists only after `initialize`; with nothing declared, the same -32021 as stdio."""
    server = load_module(paint_server(impl, tmp_path)).mcp
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with http_server(server.streamable_http_app()) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        bare = await http.post(
            url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )
        assert bare.status_code == 400  # no session to have initialized: both refuse at the transport
        opened = await http.post(url, json=initialize_request({}), headers=headers)
        assert "result" in _rpc_reply(opened)
        session = {
            **headers,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        done = await http.post(
            url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
        )
        assert done.status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "paint", "arguments": {"wall": "n"}},
        }
        error = _rpc_reply(await http.post(url, json=call, headers=session))["error"]
        assert error["code"] == MISSING_CAPABILITY
        assert error["data"]["requiredCapabilities"] == FORM_ELICITATION


# -- item 7: await mcp.call_tool(name, arguments), and MCPServer() without a name --------------


def direct_server(impl: Any) -> Any:
    """One server, no name, with each kind of outcome a unit test meets."""
    mcp = impl.Server()

    async def ask_colour() -> impl.Elicit[Colour]:
        return impl.Elicit("Favourite colour?", Colour)

    def five() -> int:
        return 5

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @mcp.tool()
    def plus_five(a: int, b: Annotated[int, impl.Resolve(five)]) -> int:
        return a + b

    @mcp.tool()
    def model() -> Colour:
        return Colour(colour="teal")

    @mcp.tool()
    def refuse() -> str:
        raise impl.ToolError("not today")

    @mcp.tool()
    def crash() -> str:
        raise ValueError("a secret path")

    @mcp.tool()
    def protocol() -> str:
        raise impl.MCPError(-32042, "a protocol error")

    @mcp.tool()
    async def paint(wall: str, colour: Annotated[Colour, impl.Resolve(ask_colour)]) -> str:
        return f"{wall} painted {colour.colour}"

    @mcp.tool()
    def handmade() -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="own")], is_error=True)

    return mcp


@pytest.mark.parametrize("impl", IMPLS)
async def test_direct_call_tool_returns_and_raises_as_the_reference_does(impl: Any) -> None:
    mcp = direct_server(impl)
    assert mcp.name == "mcp-server"

    added = await mcp.call_tool("add", {"a": 1, "b": 2})
    assert isinstance(added, types.CallToolResult)
    assert (added.is_error, added.structured_content, text_of(added)) == (False, {"result": 3}, "3")
    assert (await mcp.call_tool("plus_five", {"a": 1})).structured_content == {"result": 6}
    assert (await mcp.call_tool("model", {})).structured_content == {"colour": "teal"}
    handmade = await mcp.call_tool("handmade", {})  # a result the tool built is returned as it is
    assert (handmade.is_error, text_of(handmade)) == (True, "own")

    with pytest.raises(impl.ToolError, match="nosuch"):
        await mcp.call_tool("nosuch", {})
    with pytest.raises(impl.ToolError, match="add"):
        await mcp.call_tool("add", {"a": "one"})
    with pytest.raises(impl.ToolError, match="not today"):
        await mcp.call_tool("refuse", {})
    with pytest.raises(impl.ToolError) as crashed:
        await mcp.call_tool("crash", {})
    assert "secret" not in str(crashed.value)  # withheld, as on the wire
    assert isinstance(crashed.value.__cause__, ValueError)  # but there for the test to read
    with pytest.raises(impl.ToolError):  # no client to ask: a tool error, not a hang or a protocol error
        await mcp.call_tool("paint", {"wall": "north"})
    with pytest.raises(impl.MCPError) as protocol:
        await mcp.call_tool("protocol", {})
    assert protocol.value.code == -32042


@pytest.mark.slow
async def test_a_direct_call_is_what_a_client_receives_over_http() -> None:
    """The direct call's result is the wire's: compared with our Client over real HTTP, both eras."""
    mcp = direct_server(OURS)
    mcp.dependency_overrides[_ask_colour_of(mcp)] = _teal
    direct = {name: await mcp.call_tool(name, args) for name, args in _CALLS.items()}
    async with http_server(mcp.streamable_http_app()) as base:
        for mode in MODES:
            async with Client(f"{base}/mcp", mode=mode) as client:
                for name, args in _CALLS.items():
                    over_http = await client.call_tool(name, args)
                    assert _shape(over_http) == _shape(direct[name]), (mode, name)


_CALLS: dict[str, dict[str, Any]] = {
    "add": {"a": 1, "b": 2},
    "plus_five": {"a": 1},
    "model": {},
    "handmade": {},
    "paint": {"wall": "north"},
}


def _shape(result: types.CallToolResult) -> dict[str, Any]:
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.pop("_meta", None)  # the 2026-07-28 serverInfo stamp rides only the wire
    return dumped


def _ask_colour_of(mcp: MCPServer) -> Any:
    (marker, _wants_union) = mcp.registry.tools["paint"].signature.resolved_params["colour"]
    return marker.fn


async def _teal() -> AcceptedElicitation[Colour]:
    return AcceptedElicitation(data=Colour(colour="teal"))


async def test_direct_call_with_an_override_answers_the_question_for_the_test() -> None:
    """Our addition: `dependency_overrides` stands in for the person, so resolver tools are testable directly."""
    mcp = direct_server(OURS)
    mcp.dependency_overrides[_ask_colour_of(mcp)] = _teal
    assert text_of(await mcp.call_tool("paint", {"wall": "north"})) == "north painted teal"


@pytest.mark.slow
@pytest.mark.parametrize("impl", IMPLS)
async def test_an_unnamed_server_reports_the_default_name_on_the_wire(impl: Any) -> None:
    mcp = direct_server(impl)
    async with (
        http_server(mcp.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode="legacy") as client,
    ):
        assert client.server_info is not None
        assert client.server_info.name == "mcp-server"


@pytest.mark.parametrize("impl", IMPLS)
def test_an_unnamed_server_with_shared_keys_needs_an_audience(impl: Any) -> None:
    """Sealed state names the server as its audience; unnamed servers sharing keys would all name the default."""
    security, with_audience = (
        (RequestStateSecurity, RequestStateSecurity) if impl is OURS else (OfficialSecurity, OfficialSecurity)
    )
    key = "k" * 32
    with pytest.raises(ValueError, match="audience"):
        impl.Server(request_state_security=security(keys=[key]))
    assert impl.Server(request_state_security=with_audience(keys=[key], audience="svc")).name == "mcp-server"
    assert impl.Server("named", request_state_security=security(keys=[key])).name == "named"


def test_an_unnamed_server_with_keys_from_the_environment_needs_an_audience(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ours also reads shared keys from the environment; the same rule holds for them."""
    monkeypatch.setenv("MCP_RESOLVE_STATE_KEYS", "k" * 32)
    with pytest.raises(ValueError, match="audience"):
        MCPServer()
    assert MCPServer("named").name == "named"
    monkeypatch.delenv("MCP_RESOLVE_STATE_KEYS")
    assert MCPServer().name == "mcp-server"  # ephemeral keys are this process's alone


# -- item 8: the in-memory transport closes what it opens ----------------------------------------


@contextmanager
def no_resource_warnings() -> Iterator[None]:
    """Fail if anything opened inside the block is collected unclosed (`-W error::ResourceWarning`'s catch)."""
    gc.collect()  # what earlier tests left behind is theirs, not this block's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == []


def adder(impl: Any) -> Any:
    mcp = impl.Server("adder")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return mcp


async def add_once(client: Any) -> None:
    """Connect, call, disconnect; returning drops the last reference, so a leak is collectable after."""
    async with client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


@pytest.mark.filterwarnings("error::ResourceWarning")
@pytest.mark.parametrize("impl", IMPLS)
async def test_in_memory_connections_leave_no_stream_open(impl: Any) -> None:
    mcp = adder(impl)
    client_class = Client if impl is OURS else OfficialClient
    with no_resource_warnings():
        for _ in range(3):
            await add_once(client_class(mcp))


@pytest.mark.slow
@pytest.mark.filterwarnings("error::ResourceWarning")
@pytest.mark.parametrize("mode", MODES)
async def test_http_connections_leave_no_stream_open(mode: str) -> None:
    """The HTTP client pipe had the same leak (its inbox's reading end); checked on both eras."""
    async with http_server(adder(OURS).streamable_http_app()) as base:
        with no_resource_warnings():
            await add_once(Client(f"{base}/mcp", mode=mode))


# -- item 10: arguments named like BaseModel attributes ------------------------------------------


def shadowing_server(impl: Any) -> Any:
    """Argument names that shadow BaseModel attributes: each must be an ordinary argument."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mcp = impl.Server("shadows")

        @mcp.tool()
        def describe(schema: str, json: int, copy: bool = False, validate: str = "v") -> str:
            return f"{schema}|{json}|{copy}|{validate}"

    assert [str(w.message) for w in caught] == []
    return mcp


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("impl", IMPLS)
async def test_arguments_named_like_basemodel_attributes_work_without_warnings(impl: Any, mode: str) -> None:
    mcp = shadowing_server(impl)
    async with (
        http_server(mcp.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode) as client,
    ):
        (tool,) = (await client.list_tools()).tools
        assert set(tool.input_schema["properties"]) == {"schema", "json", "copy", "validate"}
        assert sorted(tool.input_schema["required"]) == ["json", "schema"]
        called = await client.call_tool("describe", {"schema": "s", "json": 2, "copy": True, "validate": "w"})
        assert (called.is_error, text_of(called)) == (False, "s|2|True|w")
        defaulted = await client.call_tool("describe", {"schema": "s", "json": 2})
        assert text_of(defaulted) == "s|2|False|v"
        invalid = await client.call_tool("describe", {"schema": 1, "json": "two"})
        assert invalid.is_error
        assert "schema" in text_of(invalid)
        assert "json" in text_of(invalid)


async def test_names_the_reference_refuses_or_warns_on_are_ordinary_arguments_here() -> None:
    """`model_config` fails and `model_fields` warns on the reference; here they are names like any other.

    Also: a resolver takes such an argument by name, a prompt argument may be called
    `schema`, and an alias the author gave stays the wire name.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mcp = MCPServer("more-shadows")

        def shout(schema: str) -> str:
            return schema.upper()

        @mcp.tool()
        def odd(
            model_config: int,
            model_fields: str,
            model_dump: bool,
            schema: str,
            loud: Annotated[str, Resolve(shout)],
            construct: Annotated[str, Field(alias="build", description="how to build")] = "b",
            arg_schema: int = 0,
        ) -> str:
            return f"{model_config}|{model_fields}|{model_dump}|{schema}|{loud}|{construct}|{arg_schema}"

        @mcp.prompt()
        def explain(schema: str, json: str = "{}") -> str:
            return f"explain {schema} with {json}"

    assert [str(w.message) for w in caught] == []
    async with Client(mcp) as client:
        (tool,) = (await client.list_tools()).tools
        properties = tool.input_schema["properties"]
        assert set(properties) == {
            "model_config",
            "model_fields",
            "model_dump",
            "schema",
            "build",
            "arg_schema",
        }
        assert properties["build"]["description"] == "how to build"
        arguments = {"model_config": 1, "model_fields": "f", "model_dump": True, "schema": "s", "build": "x"}
        called = await client.call_tool("odd", {**arguments, "arg_schema": 7})
        assert text_of(called) == "1|f|True|s|S|x|7"
        (prompt,) = (await client.list_prompts()).prompts
        assert [(a.name, a.required) for a in prompt.arguments or []] == [("schema", True), ("json", False)]
        rendered = await client.get_prompt("explain", {"schema": "s"})
        content = rendered.messages[0].content
        assert isinstance(content, types.TextContent)
        assert content.text == "explain s with {}"
