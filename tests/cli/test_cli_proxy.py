"""`mcp-resolve proxy TARGET`: another server served through ours, and the command line's refusals."""

from __future__ import annotations

import pytest
from mcp_types import TextContent

from conftest import PYTHON, SERVERS
from mcp_resolve import Client
from mcp_resolve.cli import CLIError, main
from mcp_resolve.cli._proxy import proxy_target

TARGET = SERVERS / "proxy_target.py"


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_proxy_command_serves_a_stdio_target_on_stdio(mode: str) -> None:
    command = [PYTHON, "-m", "mcp_resolve", "proxy", "--", PYTHON, str(TARGET)]
    async with Client(command, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"get_orders", "session", "hang"} <= names
        result = await client.call_tool("get_orders", {"customer_id": "c-9"})
    block = result.content[0]
    assert isinstance(block, TextContent) and block.text == "orders of c-9 (open)"


def test_the_target_is_a_url_or_a_command_line() -> None:
    assert proxy_target(["https://api.example.com/mcp"]) == "https://api.example.com/mcp"
    assert proxy_target(["python server.py --flag"]) == ["python", "server.py", "--flag"]
    assert proxy_target(["python", "server.py", "--flag"]) == ["python", "server.py", "--flag"]
    with pytest.raises(CLIError, match="needs a TARGET"):
        proxy_target([])
    with pytest.raises(CLIError, match="one URL"):
        proxy_target(["https://a.example/mcp", "extra"])


def test_bad_options_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    assert main(["proxy", "--auth-env", "NO_SUCH_TOKEN", "https://a.example/mcp"]) == 1
    assert "NO_SUCH_TOKEN: that environment variable is not set" in capsys.readouterr().err
    monkeypatch.setenv("A_TOKEN", "secret-value")
    assert main(["proxy", "--auth-env", "A_TOKEN", "--", "python", "server.py"]) == 1
    error = capsys.readouterr().err
    assert "signs HTTP requests" in error and "secret-value" not in error
    assert main(["proxy", "--header", "nocolon", "https://a.example/mcp"]) == 1
    assert "--header takes NAME:VALUE" in capsys.readouterr().err


def test_help_lists_the_proxy_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "serve another MCP server" in capsys.readouterr().out
