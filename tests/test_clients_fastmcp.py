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

from conftest import PYTHON, REFUND_DESK

pytestmark = pytest.mark.anyio

ERAS = {"auto": "2026-07-28", "legacy": "2025-11-25"}


class Desk:
    """The person at the desk, as a FastMCP elicitation handler: records each question, answers from a script."""

    def __init__(self, *, scope: Any, restock: Any) -> None:
        self.answers = {"scope": scope, "restock": restock}
        self.asked: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        kind = "scope" if "several items" in message else "restock"
        self.asked.append(kind)
        answer = self.answers[kind]
        # FastMCP hands us a type built from our requested schema; building the answer from it
        # proves the schema it received is the one the resolver rendered.
        return response_type(**answer) if isinstance(answer, dict) else answer


@asynccontextmanager
async def fastmcp_client(target: Any, mode: str, desk: Desk) -> AsyncIterator[Client[Any]]:
    async with Client(target, mode=mode, elicitation_handler=desk) as client:
        assert client.protocol_version == ERAS[mode]
        # Only the handshake era has an InitializeResult; a modern session negotiated by discover has none.
        assert (client.initialize_result is None) == (mode == "auto")
        yield client


def stdio() -> StdioTransport:
    return StdioTransport(PYTHON, [str(REFUND_DESK)])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_refund_desk_over_stdio(mode: str) -> None:
    desk = Desk(scope={"full": True}, restock={"restock": True})
    async with fastmcp_client(stdio(), mode, desk) as client:
        (tool,) = await client.list_tools()
        assert set(tool.input_schema["properties"]) == {"order_id", "reason"}
        result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "too small"})
        assert result.structured_content == {
            "order_id": "ORD-7002",
            "reason": "too small",
            "cents": 4800,
            "restocked": True,
        }
        assert desk.asked == ["scope", "restock"]

        single = await client.call_tool("refund_order", {"order_id": "ORD-7001", "reason": "typo"})
        assert single.structured_content["cents"] == 999
        assert desk.asked == ["scope", "restock"], "a single-item e-book asks nothing"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_declined_scope_is_our_tool_error(mode: str) -> None:
    desk = Desk(scope=ElicitResult(action="decline"), restock={"restock": True})
    async with fastmcp_client(stdio(), mode, desk) as client:
        with pytest.raises(ToolError) as raised:
            await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "too small"})
    assert str(raised.value) == (
        "Error executing tool refund_order: Resolver for parameter 'scope' could not resolve: "
        "elicitation was decline"
    )
    assert desk.asked == ["scope"]
