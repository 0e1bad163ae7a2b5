"""A handshake-era call's question to the client has a deadline: past it the call ends with a clear error.

Issue 35: an answer POST lost on the way (a 503 during a Redis pause, in the
fleet) left the call that asked waiting on its open stream for as long as
the client kept it open. Here, on real uvicorn, a client that never answers:
after `question_timeout` the question is withdrawn (`notifications/cancelled`)
and the call ends with an error naming the method and the deadline: a tool
error naming the resolver when a resolver asked, the JSON-RPC error when the
tool body called `ctx.elicit` itself (as for any failed question).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from http_helpers import http_server, initialize_request
from mcp_resolve import Context, Elicit, MCPServer, Resolve

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Name(BaseModel):
    name: str


async def whose_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


def asking_server() -> MCPServer:
    mcp = MCPServer("asks")

    @mcp.tool()
    async def greet(name: Annotated[Name, Resolve(whose_name)]) -> str:
        return f"hello {name.name}"

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        outcome = await ctx.elicit("Your name?", Name)
        return f"answered {outcome.action}"

    return mcp


async def open_session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = initialize_request(capabilities={"elicitation": {}})
    reply = await http.post(url, json=init, headers=BOTH)
    headers = {
        **BOTH,
        "mcp-session-id": reply.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert done.status_code == 202
    return headers


async def unanswered_call(url: str, tool: str) -> list[dict[str, Any]]:
    """Call `tool` and never answer its question: every message of the call's stream."""
    seen: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=30) as http:
        headers = await open_session(http, url)
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": tool, "arguments": {}}}
        with anyio.fail_after(15):
            async with http.stream("POST", url, json=call, headers=headers) as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data: ") and line[6:].strip():
                        seen.append(json.loads(line[6:]))
    return seen


async def test_an_unanswered_question_fails_the_call_at_its_deadline() -> None:
    app = asking_server().streamable_http_app(question_timeout=0.5)
    async with http_server(app) as base:
        by_resolver = await unanswered_call(f"{base}/mcp", "greet")
        by_body = await unanswered_call(f"{base}/mcp", "ask_name")
    expired = "the client did not answer elicitation/create within 0.5 s (question_timeout)"
    for asked, withdrawn, _ in (by_resolver, by_body):
        assert asked["method"] == "elicitation/create"
        assert withdrawn["method"] == "notifications/cancelled"
        assert withdrawn["params"]["requestId"] == asked["id"]
    result = by_resolver[2]["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        f"Error executing tool greet: the client could not answer elicitation/create for resolver test_http_question_deadline:whose_name: "
        f"{expired}"
    )
    assert by_body[2]["error"] == {"code": -32603, "message": expired}


async def test_an_answer_within_the_deadline_is_used() -> None:
    app = asking_server().streamable_http_app(question_timeout=5)
    async with http_server(app) as base, httpx.AsyncClient(timeout=30) as http:
        url = f"{base}/mcp"
        headers = await open_session(http, url)
        call = {
            "jsonrpc": "2.0",
            "id": 6,
            "method": "tools/call",
            "params": {"name": "greet", "arguments": {}},
        }
        with anyio.fail_after(15):
            async with http.stream("POST", url, json=call, headers=headers) as stream:
                lines = stream.aiter_lines()
                async for line in lines:
                    if line.startswith("data: ") and line[6:].strip():
                        asked = json.loads(line[6:])
                        break
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"action": "accept", "content": {"name": "Ada"}},
                }
                assert (await http.post(url, json=answer, headers=headers)).status_code == 202
                async for line in lines:
                    if line.startswith("data: ") and line[6:].strip():
                        result = json.loads(line[6:])
                        break
    assert result["result"]["content"][0]["text"] == "hello Ada"
