"""A 2026-07-28 request answered with no connection, and a Context that builds its scope on first read.

`protocol.modern.respond` answers a self-contained request straight from the
HTTP POST; the request scope (envelope parts, questioner, this round's state
and answers) is made only when the handler reads its Context. These tests
hold what that must keep: a malformed `inputResponses` is the request's error
whoever would read it, a hand-written multi-round tool sees its verified
plaintext state and the client's answers, and the scope is built once, when
first read, never before.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    ElicitResult,
    InputRequiredResult,
)

from http_helpers import serving
from mcp_resolve import Context, MCPServer
from mcp_resolve.context import RequestScope
from mcp_resolve.errors import INVALID_PARAMS

QUESTION = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Gift-wrap it?",
        "requestedSchema": {"type": "object", "properties": {"wrap": {"type": "boolean"}}},
    },
}


def wrapping_server() -> MCPServer:
    mcp = MCPServer("wrapping")

    @mcp.tool()
    async def echo(text: str) -> str:
        return text

    @mcp.tool()
    async def wrap(title: str, ctx: Context) -> str | InputRequiredResult:
        """Asks by hand: the first round returns the question and a state, the second reads both back."""
        if ctx.request_state is None:
            assert ctx.input_responses is None  # a first round has none, as with the official SDK
            return InputRequiredResult.model_validate(
                {"inputRequests": {"wrap": QUESTION}, "requestState": f"asked:{title}"}
            )
        assert ctx.input_responses is not None
        answer = ctx.input_responses["wrap"]
        assert isinstance(answer, ElicitResult) and answer.content is not None  # typed, as the official's
        return f"{ctx.request_state} wrap={answer.content['wrap']} on {ctx.protocol_version}"

    return mcp


def post(
    client: httpx.Client, url: str, method: str, params: dict[str, Any], name: str | None = None
) -> dict[str, Any]:
    meta = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {"elicitation": {}}}
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": meta}}
    reply = client.post(url, json=body, headers=headers)
    answer: dict[str, Any] = reply.json()
    return answer


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "params", "name"),
    [
        ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, "echo"),
        ("tools/list", {}, None),
    ],
)
@pytest.mark.parametrize("responses", [["not", "a", "map"], {"wrap": "not an object"}])
def test_a_malformed_input_responses_is_the_requests_error_even_where_nothing_would_read_it(
    method: str, params: dict[str, Any], name: str | None, responses: Any
) -> None:
    with serving(wrapping_server().streamable_http_app()) as base, httpx.Client() as client:
        url = base + "/mcp"
        answer = post(client, url, method, {**params, "inputResponses": responses}, name)
        assert answer["error"]["code"] == INVALID_PARAMS
        assert "inputResponses must map each question key" in answer["error"]["message"]
        # The same request without the bad map is served (and the server keeps serving).
        assert "result" in post(client, url, method, params, name)


@pytest.mark.slow
def test_a_hand_written_round_sees_its_verified_state_and_the_answers() -> None:
    with serving(wrapping_server().streamable_http_app()) as base, httpx.Client() as client:
        url = base + "/mcp"
        first = post(client, url, "tools/call", {"name": "wrap", "arguments": {"title": "Dune"}}, "wrap")
        result = first["result"]
        assert result["resultType"] == "input_required"
        assert result["inputRequests"] == {"wrap": QUESTION}
        sealed = result["requestState"]
        assert "asked:Dune" not in sealed  # sealed on the way out: the plaintext never reaches the client
        second_params = {
            "name": "wrap",
            "arguments": {"title": "Dune"},
            "requestState": sealed,
            "inputResponses": {"wrap": {"action": "accept", "content": {"wrap": True}}},
        }
        second = post(client, url, "tools/call", second_params, "wrap")
        assert second["result"]["content"][0]["text"] == "asked:Dune wrap=True on 2026-07-28"
        # A state sealed for one title is refused for another: the binding covers the arguments.
        forged = post(client, url, "tools/call", {**second_params, "arguments": {"title": "Emma"}}, "wrap")
        assert forged["error"]["code"] == INVALID_PARAMS


def _scope(request_id: int) -> RequestScope:
    async def send_notification(method: str, params: dict[str, Any]) -> None:
        return None

    return RequestScope(
        request_id=request_id,
        method="tools/call",
        era="modern",
        protocol_version="2026-07-28",
        client_capabilities={},
        client_info=None,
        log_level=None,
        progress_token=None,
        meta={},
        send_notification=send_notification,
        send_request=None,
        questioner=None,
    )


def test_a_context_builds_its_scope_once_and_only_when_read() -> None:
    built: list[int] = []

    def build() -> RequestScope:
        built.append(1)
        return _scope(41)

    context: Context[Any, Any] = Context(build)
    assert built == []  # made, passed around, never read: nothing built
    assert context.request_id == 41
    assert context.protocol_version == "2026-07-28"
    assert context.questioner() is None
    assert built == [1]  # built on the first read, and only then
    assert Context(_scope(42)).request_id == 42  # a ready scope is used as it is
