"""Raw 2026-07-28 rounds of the refund desk's single-use refund, in process: the desk, its rounds, its count.

Shared by tests/protocol/test_state_single_use.py and tests/stores/test_replay_bounds.py.
ORD-7002 has two lines, so a refund takes three rounds (scope, restock, done);
the desk built by tests/servers/state_server.py records each time the refund
body runs, so "refunded once" is counted in the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_resolve import MCPServer
from mcp_resolve.protocol.jsonrpc import IncomingRequest
from mcp_resolve.protocol.session import Connection
from servers.state_wire import MODERN_META, accept

KEY = "single-use-secret-0123456789abcdefghijklmnopq"
REFUND = {"name": "refund_order", "arguments": {"order_id": "ORD-7002", "reason": "too small"}}


def refunds(events: Path) -> int:
    return events.read_text().splitlines().count("refund_order") if events.exists() else 0


class Desk:
    """Raw rounds against an in-process server, through the same dispatch a transport uses."""

    def __init__(self, server: MCPServer) -> None:
        self.connection = Connection(server)

    async def send(self, params: dict[str, Any]) -> dict[str, Any]:
        async def sink(message: dict[str, Any]) -> None:
            pass

        request = IncomingRequest(id=1, method="tools/call", params={**params, "_meta": MODERN_META})
        return await self.connection.respond(request, sink)

    async def result(self, params: dict[str, Any]) -> dict[str, Any]:
        response = await self.send(params)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result


def next_round(result: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    assert result["resultType"] == "input_required", result
    return {
        **REFUND,
        "requestState": result["requestState"],
        "inputResponses": accept(result["inputRequests"], content),
    }


async def rounds_to_final(desk: Desk) -> tuple[dict[str, Any], dict[str, Any]]:
    """Rounds 1 and 2; returns the params of round 2 and of the final round 3 (not yet sent)."""
    round2 = next_round(await desk.result(REFUND), {"full": True})
    round3 = next_round(await desk.result(round2), {"restock": True})
    return round2, round3
