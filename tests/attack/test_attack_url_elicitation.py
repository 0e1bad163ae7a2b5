"""URL-mode elicitation against a server that lies: what it says is bounded before anyone sees it.

A -32042 error is read into `UrlElicitationRequiredError` with at most 16
URL elicitations, each a valid one under the URL bound (the rest dropped,
never fatal); completion notifications for ids nobody waits for are
remembered only up to a bound; a handler answer that is not accept, decline
or cancel fails that question alone.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp_types import ElicitRequestURLParams

from mcp_resolve import Context, MCPError, MCPServer
from mcp_resolve.client import Client
from mcp_resolve.client.url_elicitation import MAX_URL_CHARS, UrlElicitations, url_elicitation_error
from mcp_resolve.exceptions import UrlElicitationRequiredError

pytestmark = pytest.mark.anyio


def good(n: int) -> dict[str, Any]:
    return {"mode": "url", "message": f"m{n}", "url": f"https://pay.example/{n}", "elicitationId": f"e{n}"}


@pytest.mark.parametrize(
    ("data", "kept"),
    [
        ({"elicitations": [good(n) for n in range(1000)]}, [f"e{n}" for n in range(16)]),
        ({"elicitations": [{"url": 5}, "x", None, good(1), {"mode": "form", "message": "m"}]}, ["e1"]),
        ({"elicitations": [{**good(2), "url": "https://x.example/" + "a" * MAX_URL_CHARS}, good(3)]}, ["e3"]),
        ({"elicitations": "not a list"}, []),
        ("not an object", []),
        (None, []),
    ],
    ids=["a-thousand", "garbage-items", "oversized-url", "not-a-list", "not-an-object", "no-data"],
)
def test_a_hostile_32042_is_read_within_bounds(data: Any, kept: list[str]) -> None:
    typed = url_elicitation_error(MCPError(-32042, "x" * 100_000, data))
    assert isinstance(typed, UrlElicitationRequiredError)
    assert [e.elicitation_id for e in typed.elicitations] == kept
    assert len(typed.message) <= 1000


def test_other_errors_are_left_as_they_are() -> None:
    error = MCPError(-32602, "bad params", {"elicitations": [good(1)]})
    assert url_elicitation_error(error) is error


async def test_completion_floods_are_remembered_only_up_to_the_bound() -> None:
    seen = UrlElicitations()
    for n in range(10_000):
        seen.completed(f"flood-{n}")
    seen.completed(None)
    seen.completed("x" * 5000)
    with anyio.fail_after(1):
        await seen.wait("flood-9999")  # recent: remembered
    with pytest.raises(TimeoutError), anyio.fail_after(0.1):
        await seen.wait("flood-0")  # long gone: a wait would need the server to say it again
    assert len(seen._completed) == 256 and not seen._waiting  # bounded, and a given-up wait leaves nothing


def hostile_server() -> MCPServer:
    mcp = MCPServer("hostile-url")

    @mcp.tool()
    async def flood(ctx: Context) -> str:
        for n in range(2000):
            await ctx.session.send_elicit_complete(f"id-{n}")
        return "done"

    return mcp


async def test_a_flood_of_completions_over_the_wire_keeps_the_client_working() -> None:
    async with Client(hostile_server(), mode="legacy", url_elicitation_handler=lambda p: "accept") as client:  # type: ignore[arg-type, return-value]
        assert (await client.call_tool("flood", {})).content[0].text == "done"  # type: ignore[union-attr]
        with anyio.fail_after(1):
            await client.wait_for_elicitation("id-1999")


async def test_a_handler_answer_that_is_not_an_action_fails_that_question_only() -> None:
    mcp = MCPServer("asks")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        return (await ctx.elicit_url("go", "https://pay.example/", "e")).action

    async def confused(params: ElicitRequestURLParams) -> str:
        return "yes please"

    async with Client(mcp, mode="legacy", url_elicitation_handler=confused) as client:
        with pytest.raises(MCPError):
            await client.call_tool("ask", {})
        assert await client.list_tools()  # the connection goes on
