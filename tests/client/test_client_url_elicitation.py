"""URL-mode elicitation in our Client, against our server and the official SDK's, on both eras.

* 2025-11-25: the server asks mid-call (`ctx.elicit_url`), our handler
  answers, the server later says `notifications/elicitation/complete`, which
  `Client.wait_for_elicitation` returns on;
* 2026-07-28: the official server's tool answers `input_required` with a
  URL-mode question; the retried request carries the handler's outcome and
  the server's `requestState` (the spec's multi-round-trip flow);
* a -32042 refusal surfaces as `UrlElicitationRequiredError` with the URLs,
  on either era, and a retry after the visit succeeds.

`BrowserUrlElicitation`, the ready-made handler, asks before it opens
anything and declines URLs it cannot show safely.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import Context as OfficialContext
from mcp_types import ElicitRequestURLParams

from http_helpers import http_server
from mcp_resolve import Client, Context, MCPError, MCPServer
from mcp_resolve.client.url_elicitation import BrowserUrlElicitation
from mcp_resolve.exceptions import UrlElicitationRequiredError

pytestmark = pytest.mark.anyio


class Visits:
    """What a person did: the URLs shown to the handler, and its answer."""

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.seen: list[ElicitRequestURLParams] = []

    async def __call__(self, params: ElicitRequestURLParams) -> str:
        self.seen.append(params)
        return self.action


def our_server() -> MCPServer:
    mcp = MCPServer("url-desk")
    paid: set[str] = set()

    @mcp.tool()
    async def pay(ctx: Context) -> str:
        outcome = await ctx.elicit_url("Pay for the order", "https://pay.example/o-1", "e-pay")
        if outcome.action == "accept":
            paid.add("o-1")  # the payment page would do this; then the server says so
            await ctx.session.send_elicit_complete("e-pay")
        return outcome.action

    @mcp.tool()
    async def ship() -> str:
        if "o-1" not in paid:
            raise UrlElicitationRequiredError(
                [
                    ElicitRequestURLParams(
                        message="Pay first", url="https://pay.example/o-1", elicitation_id="e-ship"
                    )
                ]
            )
        return "shipped"

    @mcp.resource("paid://o-1")
    def paid_order() -> str:
        return str("o-1" in paid)

    return mcp


@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_a_mid_call_url_question_is_answered_and_its_completion_heard(action: str) -> None:
    visits = Visits(action)
    async with Client(our_server(), mode="legacy", url_elicitation_handler=visits) as client:
        assert client.capabilities()["elicitation"] == {"url": {}}
        result = await client.call_tool("pay", {})
        assert result.content[0].text == action  # type: ignore[union-attr]
        assert [(v.url, v.elicitation_id) for v in visits.seen] == [("https://pay.example/o-1", "e-pay")]
        if action == "accept":
            with anyio.fail_after(5):
                await client.wait_for_elicitation("e-pay")  # the notification came during the call
        else:
            with pytest.raises(TimeoutError), anyio.fail_after(0.2):
                await client.wait_for_elicitation("e-pay")


async def test_without_a_url_handler_a_url_question_is_refused_and_none_is_declared() -> None:
    async with Client(our_server(), mode="legacy") as client:
        assert "elicitation" not in client.capabilities()
        with pytest.raises(MCPError, match="does not handle URL-mode elicitation"):
            await client.call_tool("pay", {})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_32042_is_a_typed_error_with_the_urls_and_a_retry_after_the_visit_succeeds(mode: str) -> None:
    mcp = our_server()
    async with Client(mcp, mode=mode, url_elicitation_handler=Visits()) as client:
        with pytest.raises(UrlElicitationRequiredError) as refused:
            await client.call_tool("ship", {})
        assert refused.value.code == -32042
        assert [(e.url, e.elicitation_id) for e in refused.value.elicitations] == [
            ("https://pay.example/o-1", "e-ship")
        ]
    async with Client(mcp, mode="legacy", url_elicitation_handler=Visits()) as client:
        await client.call_tool("pay", {})  # the person pays
    async with Client(mcp, mode=mode) as client:
        assert (await client.call_tool("ship", {})).content[0].text == "shipped"  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_with_our_server(mode: str) -> None:
    visits = Visits()
    async with http_server(our_server().streamable_http_app()) as base:
        async with Client(f"{base}/mcp", mode=mode, url_elicitation_handler=visits) as client:
            with pytest.raises(UrlElicitationRequiredError) as refused:
                await client.call_tool("ship", {})
            assert refused.value.elicitations[0].url == "https://pay.example/o-1"
        async with Client(f"{base}/mcp", mode="legacy", url_elicitation_handler=visits) as client:
            assert (await client.call_tool("pay", {})).content[0].text == "accept"  # type: ignore[union-attr]
            with anyio.fail_after(5):
                await client.wait_for_elicitation("e-pay")
        async with Client(f"{base}/mcp", mode=mode) as client:
            assert (await client.call_tool("ship", {})).content[0].text == "shipped"  # type: ignore[union-attr]


def official_server() -> OfficialServer:
    mcp = OfficialServer("official-url-peer")

    @mcp.tool()
    async def checkout(ctx: OfficialContext) -> types.CallToolResult | types.InputRequiredResult:
        """2026-07-28: one URL-mode round, then the outcome and the state the retry carried."""
        answers = ctx.input_responses
        if not answers:
            question = types.ElicitRequest(
                params=ElicitRequestURLParams(mode="url", message="Pay", url="https://pay.example/cart-9")
            )
            return types.InputRequiredResult(input_requests={"pay": question}, request_state="cart-9")
        outcome = types.ElicitResult.model_validate(answers["pay"])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{outcome.action} {ctx.request_state}")]
        )

    @mcp.tool()
    async def ship() -> str:
        """Either era: the official -32042 refusal."""
        from mcp.shared.exceptions import UrlElicitationRequiredError as OfficialUrlElicitationRequired

        raise OfficialUrlElicitationRequired(
            [
                ElicitRequestURLParams(
                    mode="url", message="Pay", url="https://pay.example/cart-9", elicitation_id="c-9"
                )
            ]
        )

    @mcp.tool()
    async def connect(ctx: OfficialContext) -> str:
        """2025-11-25: the official mid-call URL question, then its completion notification."""
        result = await ctx.elicit_url("Connect GitHub", "https://github.example/connect", "gh-1")
        await ctx.session.send_elicit_complete("gh-1")
        return result.action

    return mcp


@pytest.mark.slow
@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_the_official_server_on_2026_07_28_gets_the_outcome_on_the_retry(action: str) -> None:
    visits = Visits(action)
    async with (
        http_server(official_server().streamable_http_app()) as base,
        Client(f"{base}/mcp", url_elicitation_handler=visits) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("checkout", {})
        assert result.content[0].text == f"{action} cart-9"  # type: ignore[union-attr]
        assert [v.url for v in visits.seen] == ["https://pay.example/cart-9"]
        with pytest.raises(RuntimeError, match="no elicitation/complete"):
            await client.wait_for_elicitation("anything")


@pytest.mark.slow
async def test_the_official_server_on_2025_11_25_asks_mid_call_and_completes() -> None:
    visits = Visits()
    async with (
        http_server(official_server().streamable_http_app()) as base,
        Client(f"{base}/mcp", mode="legacy", url_elicitation_handler=visits) as client,
    ):
        assert (await client.call_tool("connect", {})).content[0].text == "accept"  # type: ignore[union-attr]
        assert visits.seen[0].elicitation_id == "gh-1"
        with anyio.fail_after(5):
            await client.wait_for_elicitation("gh-1")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_official_servers_32042_is_a_typed_error_too(mode: str) -> None:
    async with (
        http_server(official_server().streamable_http_app()) as base,
        Client(f"{base}/mcp", mode=mode, url_elicitation_handler=Visits()) as client,
    ):
        with pytest.raises(UrlElicitationRequiredError) as refused:
            await client.call_tool("ship", {})
    assert [(e.url, e.elicitation_id) for e in refused.value.elicitations] == [
        ("https://pay.example/cart-9", "c-9")
    ]


async def test_the_browser_handler_asks_first_and_opens_only_what_it_showed() -> None:
    opened: list[str] = []
    asked: list[str] = []

    async def opener(url: str) -> None:
        opened.append(url)

    def consent(answer: bool) -> Any:
        def confirm(params: ElicitRequestURLParams, host: str) -> bool:
            asked.append(host)
            return answer

        return confirm

    def url(u: str) -> ElicitRequestURLParams:
        return ElicitRequestURLParams(message="m", url=u, elicitation_id="e")

    yes = BrowserUrlElicitation(confirm=consent(True), open_url=opener)
    no = BrowserUrlElicitation(confirm=consent(False), open_url=opener)
    assert await yes(url("https://pay.example/x?y=1")) == {"action": "accept"}
    assert await no(url("https://pay.example/z")) == {"action": "decline"}
    assert opened == ["https://pay.example/x?y=1"] and asked == ["pay.example", "pay.example"]
    for unsafe in (
        "http://pay.example/",
        "javascript:alert(1)",
        "https://user:pw@pay.example/",
        "https://pay.example/\u202eevil",
        "https://pay.example/" + "a" * 9000,
        "file:///etc/passwd",
    ):
        assert await yes(url(unsafe)) == {"action": "decline"}
    assert opened == ["https://pay.example/x?y=1"] and len(asked) == 2  # never shown, never opened
    assert await yes(url("http://127.0.0.1:8000/pay")) == {"action": "accept"}


async def test_the_default_consent_declines_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    async def opener(u: str) -> None:
        opened.append(u)

    handler = BrowserUrlElicitation(open_url=opener)  # stdin is not a terminal under pytest
    params = ElicitRequestURLParams(message="m", url="https://pay.example/", elicitation_id="e")
    assert await handler(params) == {"action": "decline"}
    assert opened == []
