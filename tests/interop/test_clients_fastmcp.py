"""FastMCP's Client (a client we did not write) runs the refund desk against our server, on both eras.

FastMCP 4 speaks both eras: `mode="auto"` probes `server/discover` and
settles on 2026-07-28, where its `elicitation_handler` answers our
`input_required` rounds; `mode="legacy"` runs the `initialize` handshake,
where the same handler answers mid-call `elicitation/create` requests. Each
test asserts the era it actually got, so a silent fallback would fail it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from conftest import PYTHON, REFUND_DESK, load_module
from http_helpers import RefundAnswers, http_server, refund_answers, run_refund_trajectory

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def fastmcp_handler(answers: RefundAnswers) -> Any:
    """The person at the desk as a FastMCP elicitation handler, answering from the story's script."""

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        answer = answers.answer(message)
        if answer["action"] != "accept":
            return ElicitResult(action=answer["action"])
        # FastMCP hands us a type built from our requested schema; building the answer from it
        # proves the schema it received is the one the resolver rendered.
        return response_type(**answer["content"])

    return handler


@asynccontextmanager
async def refund_desk(transport: str) -> AsyncIterator[Any]:
    """What to hand `fastmcp.Client`: a stdio transport spawning server.py, or the URL of it served on HTTP."""
    if transport == "stdio":
        yield StdioTransport(PYTHON, [str(REFUND_DESK)])
        return
    server = load_module(REFUND_DESK).mcp
    async with http_server(server.streamable_http_app()) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def fastmcp_client(target: Any, mode: str, handler: Any) -> AsyncIterator[Client[Any]]:
    async with Client(target, mode=mode, elicitation_handler=handler) as client:
        assert client.protocol_version == ERAS[mode]
        # Only the handshake era has an InitializeResult; a modern session negotiated by discover has none.
        assert (client.initialize_result is None) == (mode == "auto")
        yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_refund_desk_trajectory(transport: str, mode: str) -> None:
    answers = refund_answers()
    async with (
        refund_desk(transport) as target,
        fastmcp_client(target, mode, fastmcp_handler(answers)) as client,
    ):
        tool, *_app_only = await client.list_tools()  # the receipt view's receipt_lines, restock
        assert set(tool.input_schema["properties"]) == {"order_id", "reason"}

        async def call(arguments: dict[str, Any]) -> Any:
            return await client.call_tool("refund_order", arguments, raise_on_error=False)

        await run_refund_trajectory(call, answers)


async def test_declined_scope_raises_our_tool_error() -> None:
    answers = RefundAnswers(scope=[None], restock=[])
    async with (
        refund_desk("stdio") as target,
        fastmcp_client(target, "auto", fastmcp_handler(answers)) as client,
    ):
        with pytest.raises(ToolError) as raised:
            await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "too small"})
    assert str(raised.value) == (
        "Error executing tool refund_order: Resolver for parameter 'scope' could not resolve: "
        "elicitation was decline"
    )
    assert answers.asked == {"scope": 1}
