"""`Client(extensions={identifier: settings})`: client extensions (SEP-2133) declared on both eras.

The server in `servers/middleware_server.py` (built on either SDK) refuses
its `shout` tool and its `com.example/echo` method with -32021 unless the
client declared `com.example/echo`: `require_client_extension`. Our Client
must get through to both servers, over stdio and HTTP, on the handshake era
(the declaration rides in `initialize`) and on 2026-07-28 (in every
request's `_meta`), and be refused the same way when it declares nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from conftest import PYTHON
from http_helpers import http_server
from mcp_resolve import Client, Context, MCPError, MCPServer
from mcp_resolve.client.tasks import TASKS_EXTENSION
from servers import middleware_server
from servers.raw_stdio import HERE

pytestmark = pytest.mark.anyio

SCRIPT = HERE / "middleware_server.py"
ECHO = "com.example/echo"
REFUSED = (-32021, {"requiredCapabilities": {"extensions": {ECHO: {}}}})


@asynccontextmanager
async def _served(sdk: str, transport: str) -> AsyncIterator[str | list[str]]:
    if transport == "stdio":
        yield [PYTHON, str(SCRIPT), sdk]
        return
    async with http_server(middleware_server.build(sdk).streamable_http_app()) as base:
        yield f"{base}/mcp"


async def _outcomes(client: Client) -> dict[str, Any]:
    """What the extension's tool and its method answer this client: a value, or (code, data)."""
    out: dict[str, Any] = {"version": client.protocol_version}
    try:
        out["shout"] = (await client.call_tool("shout", {"text": "hi"})).structured_content
    except MCPError as exc:
        out["shout"] = (exc.code, exc.data)
    try:
        out["method"] = (await client.request(ECHO, {"text": "x"})).get("echoed")
    except MCPError as exc:
        out["method"] = (exc.code, exc.data)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("sdk", ["ours", "official"])
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_a_declared_extension_gets_through_and_an_undeclared_one_is_refused(
    sdk: str, transport: str, mode: str, version: str
) -> None:
    async with _served(sdk, transport) as target:
        async with Client(target, mode=mode, extensions={ECHO: {"volume": 11}}) as client:
            declared = await _outcomes(client)
        async with Client(target, mode=mode) as client:
            undeclared = await _outcomes(client)
    assert declared == {"version": version, "shout": {"result": "HI"}, "method": "x"}
    assert undeclared == {"version": version, "shout": REFUSED, "method": REFUSED}


def _server() -> MCPServer:
    mcp = MCPServer("caps")

    @mcp.tool(task_support="optional")
    def declared(ctx: Context) -> dict[str, Any]:
        """The extensions this request's client declared."""
        return dict(ctx.client_capabilities_dict.get("extensions") or {})

    return mcp


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_the_settings_reach_the_server_as_given_and_later_changes_do_not(mode: str) -> None:
    settings: dict[str, Any] = {"volume": 11, "voices": ["a", "b"]}
    client = Client(_server(), mode=mode, extensions={ECHO: settings})
    settings["volume"] = 0  # the client declared what it was built with
    async with client:
        result = await client.call_tool("declared")
    assert result.structured_content == {ECHO: {"volume": 11, "voices": ["a", "b"]}}


async def test_a_task_declares_the_tasks_extension_next_to_the_clients_own() -> None:
    async with Client(_server(), mode="2026-07-28", extensions={ECHO: {}}) as client:
        plain = await client.call_tool("declared")
        handle = await client.call_tool_task("declared")
        assert handle.task_id is not None  # a task indeed, not an answer at once
        as_task = await handle.result()
    assert plain.structured_content == {ECHO: {}}
    assert as_task.structured_content == {ECHO: {}, TASKS_EXTENSION: {}}


@pytest.mark.parametrize(
    "identifier",
    [
        "echo",  # no vendor prefix
        "com.example/",  # no name
        "/echo",
        "com..example/echo",
        "1com.example/echo",  # a label starts with a letter
        "com.example/echo now",
        "com.example/echo\n",
        "com.example/echo/more",
        "",
        5,
        None,
    ],
)
def test_an_invalid_identifier_is_refused_when_the_client_is_built(identifier: Any) -> None:
    with pytest.raises(ValueError, match="is not an extension identifier; use a `vendor-prefix/name`"):
        Client("http://127.0.0.1:9/mcp", extensions={identifier: {}})


@pytest.mark.parametrize("settings", [None, 5, "loud", ["loud"], True])
def test_settings_must_be_an_object(settings: Any) -> None:
    with pytest.raises(TypeError, match=f"the settings of '{ECHO}' must be a mapping"):
        Client("http://127.0.0.1:9/mcp", extensions={ECHO: settings})


def test_settings_must_be_json_and_the_argument_a_mapping() -> None:
    with pytest.raises(TypeError, match=f"the settings of '{ECHO}' are not JSON"):
        Client("http://127.0.0.1:9/mcp", extensions={ECHO: {"when": object()}})
    with pytest.raises(TypeError, match="takes a mapping of extension identifier to settings"):
        Client("http://127.0.0.1:9/mcp", extensions=[ECHO])


def test_the_tasks_extension_is_declared_per_call_not_per_client() -> None:
    with pytest.raises(
        ValueError, match=r"declared per call, not per client: use call_tool\(\.\.\., task=True\)"
    ):
        Client("http://127.0.0.1:9/mcp", extensions={TASKS_EXTENSION: {}})


def test_no_extensions_declare_no_field() -> None:
    assert "extensions" not in Client("http://127.0.0.1:9/mcp").capabilities()
    assert "extensions" not in Client("http://127.0.0.1:9/mcp", extensions={}).capabilities()
