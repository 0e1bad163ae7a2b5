"""32 clients at once against one HTTP server, each in the middle of its own multi-round refunds.

Every client answers the desk's questions differently (whole order or which
item, restock or not) and names itself in the refund reason, so a crossed
answer, a lost round or a question delivered to the wrong client shows up as
a wrong receipt or a wrong question count.
"""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest

from http_helpers import http_server
from mcp_resolve import Client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS = 32
SKUS = ("trail-boots", "wool-socks")


def plan(client: int, call: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """This client's answers for one call, and the receipt they must produce."""
    full = (client + call) % 3 == 0
    restock = (client * 7 + call) % 2 == 0
    scope = {"full": True} if full else {"full": False, "sku": SKUS[(client + call) % 2]}
    receipt = {
        "order_id": "ORD-7002",
        "reason": f"client {client} call {call}",
        "cents": 4800 if full else 2400,
        "restocked": restock,
    }
    return {"scope": scope, "restock": {"restock": restock}}, receipt


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_concurrent_clients_each_get_their_own_answers(refund_desk: ModuleType, mode: str) -> None:
    receipts: dict[tuple[int, int], Any] = {}
    asked: dict[int, Counter[str]] = {}

    async def one_client(client: int, base: str) -> None:
        current: dict[str, Any] = {}
        counts: Counter[str] = Counter()
        asked[client] = counts

        async def elicit(params: types.ElicitRequestFormParams) -> dict[str, Any]:
            kind = "restock" if params.message.startswith("Restock") else "scope"
            counts[kind] += 1
            return {"action": "accept", "content": current[kind]}

        async with Client(f"{base}/mcp", mode=mode, elicitation_handler=elicit) as session:  # type: ignore[arg-type]
            for call in range(2):
                answers, expected = plan(client, call)
                current.update(answers)
                result = await session.call_tool(
                    "refund_order", {"order_id": "ORD-7002", "reason": expected["reason"]}
                )
                assert not result.is_error, result.content
                receipts[(client, call)] = result.structured_content

    async with http_server(refund_desk.mcp.streamable_http_app()) as base, anyio.create_task_group() as group:
        for client in range(CLIENTS):
            group.start_soon(one_client, client, base)

    assert len(receipts) == CLIENTS * 2
    for (client, call), receipt in receipts.items():
        assert receipt == plan(client, call)[1]
    for client in range(CLIENTS):  # one scope and one restock question per call, none lost or doubled
        assert asked[client] == {"scope": 2, "restock": 2}
