"""Single-use state: replaying a refund's final round must not refund twice.

The refund desk's `refund_order` is `@mcp.tool(single_use=True)`. ORD-7002
has two lines, so a refund takes three rounds (scope, restock, done). The
desk runs wrapped by tests/servers/state_server.py, which records each time
the refund body runs, so "refunded once" is counted in the server, not
inferred from what the client saw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel

from mcp_resolve import (
    Elicit,
    MCPServer,
    MemoryReplayStore,
    RequestStateSecurity,
    Resolve,
    SqliteReplayStore,
)
from servers.state_server import build_refund_desk
from servers.state_wire import FROZEN, StatePeer, accept
from single_use_helpers import KEY, REFUND, Desk, next_round, refunds, rounds_to_final


@pytest.mark.anyio
async def test_replaying_the_final_round_does_not_refund_twice(tmp_path: Path) -> None:
    events = tmp_path / "events"
    server = build_refund_desk({"STATE_SERVER_EVENTS": str(events)})
    assert isinstance(server.replay_store, MemoryReplayStore)
    desk = Desk(server)
    round2, round3 = await rounds_to_final(desk)
    receipt = (await desk.result(round3))["structuredContent"]
    assert receipt == {"order_id": "ORD-7002", "reason": "too small", "cents": 4800, "restocked": True}
    assert refunds(events) == 1

    for replay in (round3, round3, round2):
        response = await desk.send(replay)
        assert response["error"] == FROZEN and "result" not in response
    assert refunds(events) == 1

    # A fresh refund still works: only the spent state is refused.
    _, again = await rounds_to_final(desk)
    assert (await desk.result(again))["structuredContent"]["cents"] == 4800
    assert refunds(events) == 2


@pytest.mark.anyio
async def test_concurrent_copies_of_the_final_round_refund_once(tmp_path: Path) -> None:
    events = tmp_path / "events"
    desk = Desk(build_refund_desk({"STATE_SERVER_EVENTS": str(events)}))
    _, round3 = await rounds_to_final(desk)
    responses: list[dict[str, Any]] = []

    async def send() -> None:
        responses.append(await desk.send(round3))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(send)
    assert sorted("result" in r for r in responses) == [False] * 4 + [True]
    assert all(r["error"] == FROZEN for r in responses if "error" in r)
    assert refunds(events) == 1


class Confirm(BaseModel):
    ok: bool


async def ask_confirm(code: str) -> Confirm | Elicit[Confirm]:
    return Elicit(f"Redeem {code}?", Confirm)


def voucher_server(db: Path, redeemed: list[str]) -> MCPServer:
    """A single-use tool on a server given a SQLite store through the constructor."""
    mcp = MCPServer(
        "Vouchers",
        request_state_security=RequestStateSecurity(keys=[KEY]),
        replay_store=SqliteReplayStore(db),
    )

    @mcp.tool(single_use=True)
    async def redeem(code: str, confirm: Annotated[Confirm, Resolve(ask_confirm)]) -> str:
        redeemed.append(code)
        return f"redeemed {code}"

    return mcp


@pytest.mark.anyio
async def test_sqlite_store_given_to_the_constructor_outlives_the_server(tmp_path: Path) -> None:
    db, redeemed = tmp_path / "replay.db", list[str]()
    call = {"name": "redeem", "arguments": {"code": "GIFT-1"}}
    first = Desk(voucher_server(db, redeemed))
    asked = await first.result(call)
    final = {
        **call,
        "requestState": asked["requestState"],
        "inputResponses": accept(asked["inputRequests"], {"ok": True}),
    }
    assert (await first.result(final))["content"][0]["text"] == "redeemed GIFT-1"

    second = Desk(voucher_server(db, redeemed))  # a new server on the same file: a restart
    assert (await second.send(final))["error"] == FROZEN
    assert redeemed == ["GIFT-1"]

    with_memory = Desk(MCPServer("Vouchers", request_state_security=RequestStateSecurity(keys=[KEY])))
    assert isinstance(with_memory.connection.server.replay_store, MemoryReplayStore)


@pytest.mark.slow
def test_sqlite_replay_store_survives_a_restart_of_the_refund_desk(tmp_path: Path) -> None:
    """Two processes on one SQLite file, the second started after the first exited. A refund finished
    by the first cannot be replayed on the second; one the first left half-done still completes there."""
    events = tmp_path / "refunds.events"
    env = {
        "STATE_SERVER_APP": "refund",
        "MCP_RESOLVE_STATE_KEYS": KEY,
        "STATE_SERVER_REPLAY_DB": str(tmp_path / "replay.db"),
        "STATE_SERVER_EVENTS": str(events),
    }

    def to_final(peer: StatePeer) -> dict[str, Any]:
        round2 = next_round(peer.result("tools/call", REFUND), {"full": True})
        return next_round(peer.result("tools/call", round2), {"restock": False})

    with StatePeer(tmp_path, "before", env) as before:
        finished, half_done = to_final(before), to_final(before)
        assert before.result("tools/call", finished)["structuredContent"]["cents"] == 4800
    assert before.process.returncode == 0
    assert refunds(events) == 1

    with StatePeer(tmp_path, "after", env) as after:
        assert after.request("tools/call", finished).get("error") == FROZEN
        assert refunds(events) == 1
        assert "rejected replayed requestState" in after.stderr()
        assert after.result("tools/call", half_done)["structuredContent"]["restocked"] is False
        assert refunds(events) == 2
        assert after.request("tools/call", half_done).get("error") == FROZEN
    assert refunds(events) == 2
