"""What a newcomer meets first (issue 30): the version, a typo's hint, a plain handler, a ported file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

import mcp_resolve
from conftest import REFUND_DESK
from mcp_resolve import Client, Elicit, MCPError, MCPServer, Resolve, ToolError
from servers.raw_stdio import RawStdio

pytestmark = pytest.mark.anyio


@pytest.mark.slow
def test_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    assert mcp_resolve.__version__ == version("mcp-resolve")
    shown = subprocess.run(
        [sys.executable, "-m", "mcp_resolve", "--version"], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == f"mcp-resolve {mcp_resolve.__version__}"


@pytest.mark.slow
def test_an_unknown_tool_over_stdio_suggests_the_close_one() -> None:
    peer = RawStdio(REFUND_DESK)
    try:
        peer.initialize()
        answer = peer.request("tools/call", {"name": "refnud_order", "arguments": {}})
        assert answer["error"]["message"] == "Unknown tool: refnud_order (did you mean 'refund_order'?)"
        far = peer.request("tools/call", {"name": "zzz", "arguments": {}})
        assert far["error"]["message"] == "Unknown tool: zzz"
    finally:
        peer.kill()


class Go(BaseModel):
    ok: bool


def _ask() -> Elicit[Go]:
    return Elicit("Go?", Go)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_plain_function_answers_questions_like_a_coroutine(mode: str) -> None:
    server = MCPServer("plain")

    @server.tool()
    def go(answer: Annotated[Go, Resolve(_ask)]) -> str:
        return f"ok={answer.ok}"

    def person(params: Any) -> dict[str, Any]:  # no `async`: a newcomer's first handler
        return {"action": "accept", "content": {"ok": True}}

    async with Client(server, mode=mode, elicitation_handler=person) as client:
        result = await client.call_tool("go", {})
    assert result.content[0].text == "ok=True"  # type: ignore[union-attr]


async def test_a_direct_call_to_a_misspelt_tool_suggests_too() -> None:
    server = MCPServer("typo")

    @server.tool()
    def refund_order() -> str:
        return "done"

    with pytest.raises(ToolError, match=r"did you mean 'refund_order'\?"):
        await server.call_tool("refund_ordr", {})
    async with Client(server) as client:
        with pytest.raises(MCPError, match=r"did you mean 'refund_order'\?"):
            await client.request("tools/call", {"name": "refund_ordr", "arguments": {}})


@pytest.mark.slow
def test_check_on_a_file_written_for_the_official_sdk_says_what_to_change(tmp_path: Path) -> None:
    ported = tmp_path / "official.py"
    ported.write_text(
        "from mcp.server import MCPServer\n\nserver = MCPServer('demo')\n\n"
        "@server.tool()\ndef hello() -> str:\n    return 'hi'\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcp_resolve", "check", str(ported)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "builds mcp's MCPServer, not mcp-resolve's" in done.stderr
    assert "from mcp_resolve import MCPServer" in done.stderr
