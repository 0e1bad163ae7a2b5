"""An answer lost at a gateway is sent again: the call it unblocks does not hang.

Behind a load balancer, the POST that carries the client's answer to a
mid-call question (handshake era) can meet a worker that just died: nginx
does not retry a POST it already sent, so the client gets 502 and, before
this was fixed, dropped the answer while the call on a live worker waited
for it until the caller gave up (the fleet kill test caught it once in about
ten runs). Here a real reverse proxy on loopback, in front of a real server,
turns the first answer POSTs into gateway failures (502, 503, 504); the
calls still finish.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from http_helpers import http_server
from mcp_resolve import Client, Elicit, MCPServer, Resolve

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Confirm(BaseModel):
    ok: bool


def _ask() -> Elicit[Confirm]:
    return Elicit("Go ahead?", Confirm)


def _server() -> MCPServer:
    server = MCPServer("resend")

    @server.tool()
    def refund(order_id: str, confirmed: Annotated[Confirm, Resolve(_ask)]) -> str:
        return f"{order_id}: {'refunded' if confirmed.ok else 'kept'}"

    return server


class FlakyGateway:
    """A reverse proxy that fails the first `failures` POSTs carrying a JSON-RPC answer.

    `status` is what it answers instead: 502 is what nginx answers when its
    upstream died under the request. Everything else is forwarded to `upstream` and streamed back as it comes.
    """

    def __init__(self, upstream: str, failures: int, status: int = 502) -> None:
        self.upstream, self.failures, self.status = upstream, failures, status
        self.refused = 0
        self.answers_forwarded = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        parsed = json.loads(body) if body else None
        is_answer = isinstance(parsed, dict) and "method" not in parsed and "id" in parsed
        if is_answer and self.refused < self.failures:
            self.refused += 1
            await send({"type": "http.response.start", "status": self.status, "headers": []})
            await send({"type": "http.response.body", "body": b"Bad Gateway"})
            return
        self.answers_forwarded += is_answer
        headers = [
            (k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in HOP_BY_HOP
        ]
        async with httpx.AsyncClient(timeout=httpx.Timeout(10, read=None)) as http:
            request = http.build_request(
                scope["method"], self.upstream + scope["path"], headers=headers, content=body
            )
            response = await http.send(request, stream=True)
            try:
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": [
                            (k.encode(), v.encode())
                            for k, v in response.headers.items()
                            if k.lower() not in HOP_BY_HOP
                        ],
                    }
                )
                async for chunk in response.aiter_raw():
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            finally:
                await response.aclose()


async def _accept(params: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


@pytest.mark.parametrize("status", [502, 503, 504])
async def test_an_answer_refused_by_the_gateway_is_sent_again(status: int) -> None:
    async with http_server(_server().streamable_http_app()) as upstream:
        gateway = FlakyGateway(upstream, failures=2, status=status)
        async with (
            http_server(gateway) as front,
            Client(f"{front}/mcp", mode="legacy", elicitation_handler=_accept) as client,
        ):
            with anyio.fail_after(15):
                result = await client.call_tool("refund", {"order_id": "ORD-1"})
    assert result.content[0].text == "ORD-1: refunded"  # type: ignore[union-attr]
    assert gateway.refused == 2 and gateway.answers_forwarded == 1


async def test_a_gateway_that_never_recovers_is_given_up_on() -> None:
    """Four failures in a row: the client stops resending (and says so) instead of looping."""
    async with http_server(_server().streamable_http_app()) as upstream:
        gateway = FlakyGateway(upstream, failures=10)
        async with (
            http_server(gateway) as front,
            Client(f"{front}/mcp", mode="legacy", elicitation_handler=_accept) as client,
        ):
            with anyio.move_on_after(4) as waited:
                await client.call_tool("refund", {"order_id": "ORD-2"})
    assert waited.cancelled_caught  # the answer never arrived: the call waits, as any unanswered one
    assert gateway.refused == 4 and gateway.answers_forwarded == 0
