"""`mcp_resolve.exceptions` against the official `mcp.server.mcpserver.exceptions`: names, hierarchy, wire answers.

One tiny server is written once and built on both SDKs, each raising its own
SDK's exceptions; the official client calls both (ours over real HTTP) and the
answers must agree: the JSON-RPC error of a resource read (code, message,
`data.uri`), the tool error result of a call. Where we differ on purpose
(the handshake-era not-found code, the text of a crashed tool's result) the
test says so explicitly.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import exceptions as theirs
from mcp.shared.exceptions import MCPError as OfficialMCPError

import mcp_resolve
from http_helpers import http_server
from mcp_resolve import MCPServer
from mcp_resolve import exceptions as ours

pytestmark = pytest.mark.anyio

SECRET = "db password hunter2"

NAMES = [
    "MCPServerError",
    "ResourceError",
    "ResourceNotFoundError",
    "UnexpectedResourceError",
    "ToolError",
    "UnexpectedToolError",
    "InvalidSignature",
]


def define(mcp: Any, errors: Any, protocol_error: Any) -> Any:
    """Resources and a tool that fail every way an author can make them fail, with `errors`' classes."""

    @mcp.resource("doc://{name}")
    def doc(name: str) -> str:
        if name == "gone":
            raise errors.ResourceNotFoundError(f"No document {name}")
        if name == "locked":
            raise errors.ResourceError("That document is locked")
        if name == "crash":
            raise RuntimeError(SECRET)
        if name == "protocol":
            raise protocol_error(-32001, "Custom failure", {"why": "because"})
        return f"doc {name}"

    @mcp.resource("static://crash")
    def static_crash() -> str:
        raise KeyError(SECRET)

    @mcp.tool()
    def act(kind: str) -> str:
        if kind == "tool":
            raise errors.ToolError("Cannot do that")
        if kind == "resource":
            raise errors.ResourceError("The resource it needed failed")
        if kind == "not-found":
            raise errors.ResourceNotFoundError("The resource it needed is gone")
        if kind == "crash":
            raise ValueError(SECRET)
        return "done"

    return mcp


async def _observe(client: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for uri in [
        "doc://gone",
        "doc://locked",
        "doc://crash",
        "doc://protocol",
        "static://crash",
        "doc://fine",
    ]:
        try:
            seen[uri] = (await client.read_resource(uri)).contents[0].text
        except OfficialMCPError as exc:
            seen[uri] = {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}
    for kind in ["tool", "resource", "not-found", "crash", "fine"]:
        result = await client.call_tool("act", {"kind": kind})
        seen[kind] = (result.is_error, result.content[0].text)
    return seen


def test_the_exceptions_module_has_every_official_name_with_the_same_hierarchy() -> None:
    for name in NAMES:
        assert hasattr(ours, name), name
        assert name in ours.__all__
    for child in NAMES:
        for parent in NAMES:
            assert issubclass(getattr(ours, child), getattr(ours, parent)) == issubclass(
                getattr(theirs, child), getattr(theirs, parent)
            ), (child, parent)
    assert ours.ToolError is mcp_resolve.ToolError and ours.MCPError is mcp_resolve.MCPError


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_client_gets_the_same_answers_from_both_servers(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    official = define(OfficialServer("errors"), theirs, OfficialMCPError)
    async with OfficialClient(official, mode=mode) as client:
        expected = await _observe(client)
    mine = define(MCPServer("errors"), ours, ours.MCPError)
    with caplog.at_level(logging.INFO, logger="mcp_resolve"):
        async with (
            http_server(mine.streamable_http_app()) as base,
            OfficialClient(f"{base}/mcp", mode=mode) as client,
        ):
            got = await _observe(client)

    # Resources: identical JSON-RPC errors, but for the not-found code before 2026-07-28 (-32002, as
    # 2025-11-25 asks; the official sends -32602 on every revision).
    gone = dict(expected["doc://gone"], code=-32602 if mode == "auto" else -32002)
    assert (
        got["doc://gone"]
        == gone
        == {"code": gone["code"], "message": "No document gone", "data": {"uri": "doc://gone"}}
    )
    for uri in ["doc://locked", "doc://crash", "doc://protocol", "static://crash", "doc://fine"]:
        assert got[uri] == expected[uri], uri
    assert got["doc://locked"] == {
        "code": -32603,
        "message": "That document is locked",
        "data": {"uri": "doc://locked"},
    }
    assert got["doc://crash"]["message"] == "Error creating resource from template doc://crash"
    assert got["static://crash"]["message"] == "Error reading resource static://crash"
    assert got["doc://protocol"] == {"code": -32001, "message": "Custom failure", "data": {"why": "because"}}

    # Tools: anticipated failures read the same, and a crash withholds its text on both in the same words.
    for kind in ["tool", "resource", "not-found", "crash", "fine"]:
        assert got[kind] == expected[kind], kind
    assert got["resource"] == (True, "Error executing tool act: The resource it needed failed")
    assert got["crash"] == (True, "Error executing tool act")

    assert SECRET not in str(got)
    # The server log has the crashes (with their tracebacks) and the anticipated failures at INFO.
    crashes = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert any(SECRET in str(r.exc_info[1]) for r in crashes if r.exc_info)
    assert any(
        r.levelno == logging.INFO and "That document is locked" in r.getMessage() for r in caplog.records
    )


async def test_direct_calls_raise_what_the_official_raises() -> None:
    official = define(OfficialServer("errors"), theirs, OfficialMCPError)
    mine = define(MCPServer("errors"), ours, ours.MCPError)
    for server, errors in ((official, theirs), (mine, ours)):
        with pytest.raises(errors.UnexpectedToolError) as crash:
            await server.call_tool("act", {"kind": "crash"})
        assert isinstance(crash.value.__cause__, ValueError) and SECRET not in str(crash.value)
        for kind in ("tool", "resource", "not-found"):
            with pytest.raises(errors.ToolError) as anticipated:
                await server.call_tool("act", {"kind": kind})
            assert not isinstance(anticipated.value, errors.UnexpectedToolError)
            assert str(anticipated.value).startswith("Error executing tool act: ")
        with pytest.raises(errors.MCPServerError):
            await server.call_tool("act", {"kind": "crash"})


async def test_detailed_tool_errors_names_the_crash_class_and_still_withholds_its_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The opt-in: `MCPServer(detailed_tool_errors=True)` adds the exception's class, never its message."""
    mine = define(MCPServer("errors", detailed_tool_errors=True), ours, ours.MCPError)
    with caplog.at_level(logging.ERROR, logger="mcp_resolve"):
        async with mcp_resolve.Client(mine) as client:
            crash = await client.call_tool("act", {"kind": "crash"})
            tool = await client.call_tool("act", {"kind": "tool"})
    assert crash.is_error is True
    assert crash.content[0].text == (  # type: ignore[union-attr]
        "Error executing tool act: unexpected error (ValueError); the details are in the server log"
    )
    assert tool.content[0].text == "Error executing tool act: Cannot do that"  # type: ignore[union-attr]
    assert any(r.exc_info and SECRET in str(r.exc_info[1]) for r in caplog.records)  # the log line stays
