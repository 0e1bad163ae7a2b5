"""URL-mode elicitation (2025-11-25): `UrlElicitationRequiredError` on either era, `ctx.elicit_url` mid-call.

The mid-call question itself, answered by the official client, is compared
with the official server in test_official_snippets.py (the `elicitation`
snippet); here, what the error carries and where `ctx.elicit_url` refuses.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import Context as OfficialContext
from mcp.shared.exceptions import MCPError as OfficialMCPError
from mcp_types import URL_ELICITATION_REQUIRED, ElicitRequestURLParams, ElicitResult

from http_helpers import http_server
from mcp_resolve import Client, Context, MCPError, MCPServer
from mcp_resolve.exceptions import UrlElicitationRequiredError

pytestmark = pytest.mark.anyio


def _server() -> MCPServer:
    mcp = MCPServer("url")

    @mcp.tool()
    async def connect(service: str) -> str:
        raise UrlElicitationRequiredError(
            [
                ElicitRequestURLParams(
                    message=f"Authorise {service}",
                    url=f"https://{service}.example/auth",
                    elicitation_id="e-1",
                ),
                ElicitRequestURLParams(message="And pay", url="https://pay.example/", elicitation_id="e-2"),
            ]
        )

    @mcp.tool()
    async def pay(ctx: Context) -> str:
        outcome = await ctx.elicit_url("Pay here", "https://pay.example/", "e-3")
        return outcome.action

    return mcp


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_error_answers_32042_with_every_elicitation_on_either_era(mode: str) -> None:
    async with Client(_server(), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("connect", {"service": "github"})
    assert raised.value.code == URL_ELICITATION_REQUIRED == -32042
    assert raised.value.message == "URL elicitations required"
    assert raised.value.data == {
        "elicitations": [
            {
                "mode": "url",
                "message": "Authorise github",
                "url": "https://github.example/auth",
                "elicitationId": "e-1",
            },
            {"mode": "url", "message": "And pay", "url": "https://pay.example/", "elicitationId": "e-2"},
        ]
    }


def test_the_error_keeps_its_elicitations_and_takes_a_message() -> None:
    one = ElicitRequestURLParams(message="m", url="https://x.example/", elicitation_id="e")
    error = UrlElicitationRequiredError([one], message="Sign in first")
    assert (error.code, error.message, error.elicitations) == (-32042, "Sign in first", [one])
    assert UrlElicitationRequiredError([one]).message == "URL elicitation required"
    assert isinstance(error, MCPError)


async def test_elicit_url_mid_call_is_refused_on_2026_07_28_pointing_at_the_error() -> None:
    async with Client(_server(), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        with pytest.raises(MCPError) as refused:
            await client.call_tool("pay", {})
    assert refused.value.code == -32600
    text = refused.value.message
    assert "ctx.elicit_url() cannot ask the client mid-call on protocol 2026-07-28" in text
    assert "UrlElicitationRequiredError" in text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_session_elicit_url_answers_as_the_official_session_does(mode: str) -> None:
    """`ctx.session.elicit_url(...)`, as official code calls it: the ElicitResult mid-call, -32600 on 2026-07-28."""
    official, ours = OfficialServer("url"), MCPServer("url")

    @official.tool()
    async def visit(ctx: OfficialContext) -> str:
        result = await ctx.session.elicit_url("Pay here", "https://pay.example/", "e-9")
        return f"{type(result).__name__} {result.action}"

    @ours.tool()
    async def visit_ours(ctx: Context) -> str:
        result = await ctx.session.elicit_url("Pay here", "https://pay.example/", "e-9")
        return f"{type(result).__name__} {result.action}"

    asked: list[Any] = []

    async def official_answer(context: Any, params: Any) -> ElicitResult:
        asked.append(params.url)
        return ElicitResult(action="accept")

    async with OfficialClient(official, mode=mode, elicitation_callback=official_answer) as client:
        try:
            theirs: Any = (await client.call_tool("visit", {})).content[0].text  # type: ignore[union-attr]
        except OfficialMCPError as exc:
            theirs = exc.error.code
    async with (  # the official client, which answers URL-mode questions, over HTTP
        http_server(ours.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode, elicitation_callback=official_answer) as client,
    ):
        try:
            got: Any = (await client.call_tool("visit_ours", {})).content[0].text  # type: ignore[union-attr]
        except OfficialMCPError as exc:
            got = exc.error.code
    assert got == theirs == ("ElicitResult accept" if mode == "legacy" else -32600)
    assert asked == (["https://pay.example/"] * 2 if mode == "legacy" else [])
