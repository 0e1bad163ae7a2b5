"""Single-use rounds exactly once from the caller's side (issue 35, item 3), in one process.

A `single_use` tool still never runs twice for one state. What changed: a
principal that sends its round again after losing the answer gets that
answer back (its receipt), not the frozen refusal; a copy that arrives while
the first still runs waits for it; a client that leaves mid-run does not
cut the run, so the receipt exists for its retry. Anonymous callers and
other principals are refused as before. The kept answers are bounded.
Every run is counted by the tool itself, not inferred from answers.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from http_helpers import http_server
from mcp_resolve import Elicit, MCPServer, MemoryReplayStore, RequestStateSecurity, Resolve
from mcp_resolve.protocol.jsonrpc import IncomingRequest
from mcp_resolve.protocol.session import Connection
from mcp_resolve.protocol.single_use import KEPT_ANSWER_MISSING, STILL_RUNNING
from mcp_resolve.replay import RoundStore
from servers.state_wire import FROZEN, MODERN_META, accept

pytestmark = pytest.mark.anyio

KEY = "receipts-secret-0123456789abcdefghijklmnopqrs"
NOW = 1_000_000.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Confirm(BaseModel):
    ok: bool


async def ask_confirm(order: str) -> Confirm | Elicit[Confirm]:
    return Elicit(f"Refund {order}?", Confirm)


class Desk:
    """A server with one single-use `refund` tool that records each run (and can be made slow or big)."""

    def __init__(self, store: MemoryReplayStore | None = None, *, bind_principal: bool = True) -> None:
        self.runs: list[str] = []
        self.delay = 0.0
        self.padding = 0
        self.store = MemoryReplayStore() if store is None else store
        self.server = MCPServer(
            "Receipts",
            request_state_security=RequestStateSecurity(keys=[KEY], bind_principal=bind_principal),
            replay_store=self.store,
        )

        @self.server.tool(single_use=True)
        async def refund(order: str, confirm: Annotated[Confirm, Resolve(ask_confirm)]) -> dict[str, Any]:
            await anyio.sleep(self.delay)
            self.runs.append(order)
            return {"order": order, "run": len(self.runs), "note": "x" * self.padding}

    async def send(
        self, params: dict[str, Any], principal: str | None, request_id: int = 1
    ) -> dict[str, Any]:
        async def sink(message: dict[str, Any]) -> None:
            pass

        request = IncomingRequest(id=request_id, method="tools/call", params={**params, "_meta": MODERN_META})
        return await Connection(self.server, principal=principal).respond(request, sink)

    async def final_round(self, principal: str | None, order: str = "ORD-1") -> dict[str, Any]:
        call = {"name": "refund", "arguments": {"order": order}}
        asked = (await self.send(call, principal))["result"]
        assert asked["resultType"] == "input_required", asked
        return {
            **call,
            "requestState": asked["requestState"],
            "inputResponses": accept(asked["inputRequests"], {"ok": True}),
        }


async def test_a_retry_after_a_lost_answer_gets_the_receipt_and_nothing_runs_twice() -> None:
    desk = Desk()
    final = await desk.final_round("alice")
    first = await desk.send(final, "alice", request_id=7)
    assert first["result"]["structuredContent"] == {"order": "ORD-1", "run": 1, "note": ""}

    again = await desk.send(final, "alice", request_id=8)
    assert again["id"] == 8 and again["result"] == first["result"]
    assert desk.runs == ["ORD-1"]
    assert desk.store.kept == (1, len(json.dumps({"result": first["result"]}, separators=(",", ":"))))

    # The same state with other answers is not the same round: refused, as is another principal's copy
    # (here refused by the state's principal binding before the store is even asked).
    other_answers = {**final, "inputResponses": accept(final["inputResponses"], {"ok": False})}
    assert (await desk.send(other_answers, "alice"))["error"] == FROZEN
    assert (await desk.send(final, "mallory"))["error"] == FROZEN
    assert (await desk.send(final, None))["error"] == FROZEN
    assert desk.runs == ["ORD-1"]


async def test_without_principal_binding_another_principal_is_refused_by_the_store() -> None:
    desk = Desk(bind_principal=False)
    final = await desk.final_round("alice")
    receipt = (await desk.send(final, "alice"))["result"]
    assert (await desk.send(final, "bob"))["error"] == FROZEN  # bob holds the token, not the receipt
    assert (await desk.send(final, None))["error"] == FROZEN
    assert (await desk.send(final, "alice"))["result"] == receipt
    assert desk.runs == ["ORD-1"]


async def test_an_anonymous_replay_is_still_refused() -> None:
    """Without a principal a retry cannot be told from someone else's replay: the frozen error, as before."""
    desk = Desk()
    final = await desk.final_round(None)
    assert (await desk.send(final, None))["result"]["structuredContent"]["run"] == 1
    assert (await desk.send(final, None))["error"] == FROZEN
    assert desk.runs == ["ORD-1"] and desk.store.kept == (0, 0)


async def test_copies_sent_while_the_first_runs_wait_for_it_and_get_its_receipt() -> None:
    desk = Desk()
    desk.delay = 0.3
    final = await desk.final_round("alice")
    answers: list[dict[str, Any]] = []

    async def send(index: int) -> None:
        answers.append(await desk.send(final, "alice", request_id=index))

    async with anyio.create_task_group() as group:
        for index in range(8):
            group.start_soon(send, index)
    assert desk.runs == ["ORD-1"]
    assert sorted(a["id"] for a in answers) == list(range(8))
    assert all(a["result"]["structuredContent"] == {"order": "ORD-1", "run": 1, "note": ""} for a in answers)


async def test_a_copy_that_outwaits_retry_wait_is_told_to_retry_then_gets_the_receipt() -> None:
    desk = Desk(MemoryReplayStore(retry_wait=0.1))
    desk.delay = 0.6
    final = await desk.final_round("alice")
    answers: dict[str, dict[str, Any]] = {}

    async def first() -> None:
        answers["first"] = await desk.send(final, "alice")

    async with anyio.create_task_group() as group:
        group.start_soon(first)
        await anyio.sleep(0.1)
        answers["early"] = await desk.send(final, "alice")
    assert answers["early"]["error"] == {"code": -32603, "message": STILL_RUNNING}
    assert (await desk.send(final, "alice"))["result"] == answers["first"]["result"]
    assert desk.runs == ["ORD-1"]


async def test_an_answer_too_large_to_keep_is_not_kept_and_the_retry_is_told_so() -> None:
    desk = Desk(MemoryReplayStore(max_outcome_bytes=1000))
    desk.padding = 2000
    final = await desk.final_round("alice")
    assert (await desk.send(final, "alice"))["result"]["structuredContent"]["run"] == 1
    assert (await desk.send(final, "alice"))["error"] == {"code": -32603, "message": KEPT_ANSWER_MISSING}
    assert desk.runs == ["ORD-1"] and desk.store.kept == (0, 0)


async def test_kept_answers_are_bounded_in_count_and_bytes_oldest_dropped_first() -> None:
    store = MemoryReplayStore(clock=lambda: NOW, max_outcomes=3, max_kept_bytes=250)
    assert isinstance(store, RoundStore)
    tickets = {}
    for index in range(5):
        claim = await store.claim_round(f"s{index}", NOW + 60, "caller")
        assert claim.status == "won" and claim.ticket
        tickets[index] = claim.ticket
        await store.keep_outcome(f"s{index}", NOW + 60, claim.ticket, b"o" * 60)
    assert store.kept == (3, 180)  # the count bound
    assert (await store.claim_round("s0", NOW + 60, "caller")).outcome is None
    assert (await store.claim_round("s4", NOW + 60, "caller")).outcome == b"o" * 60
    claim = await store.claim_round("big", NOW + 60, "caller")
    await store.keep_outcome("big", NOW + 60, claim.ticket, b"b" * 200)
    assert store.kept == (1, 200)  # the bytes bound: every older answer went
    assert (await store.claim_round("s4", NOW + 60, "caller")).status == "done"  # still claimed
    assert (await store.claim_round("s4", NOW + 60, "other")).status == "replayed"
    # Only the ticket that won may finish a round, and only once.
    await store.keep_outcome("big", NOW + 60, "not-the-ticket", b"x")
    await store.keep_outcome("big", NOW + 60, claim.ticket, b"x")
    assert (await store.claim_round("big", NOW + 60, "caller")).outcome == b"b" * 200


async def test_kept_answers_leave_with_their_claims() -> None:
    clock = [NOW]
    store = MemoryReplayStore(clock=lambda: clock[0])
    claim = await store.claim_round("s", NOW + 10, "caller")
    await store.keep_outcome("s", NOW + 10, claim.ticket, b"answer")
    assert store.kept == (1, 6)
    clock[0] = NOW + 10 + 61
    assert await store.claim("other", NOW + 100)
    assert store.kept == (0, 0) and len(store) == 1


@pytest.mark.slow
async def test_a_client_that_leaves_mid_run_does_not_cut_it_and_its_retry_gets_the_receipt() -> None:
    """Over real HTTP: the client gives up while the refund runs; the run finishes, and the retry,
    on a new connection, gets the receipt. Without the shield the run would be cancelled halfway."""
    desk = Desk()
    app = desk.server.streamable_http_app(principal=lambda request: request.headers.get("x-caller"))
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "refund",
        "Accept": "application/json, text/event-stream",
        "X-Caller": "alice",
    }

    def body(params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": MODERN_META}}

    call = {"name": "refund", "arguments": {"order": "ORD-9"}}
    async with http_server(app) as base:
        async with httpx.AsyncClient(timeout=10) as http:
            asked = (await http.post(f"{base}/mcp", json=body(call), headers=headers)).json()["result"]
        final = {
            **call,
            "requestState": asked["requestState"],
            "inputResponses": accept(asked["inputRequests"], {"ok": True}),
        }
        desk.delay = 1.0
        async with httpx.AsyncClient(timeout=0.3) as impatient:
            with pytest.raises(httpx.ReadTimeout):
                await impatient.post(f"{base}/mcp", json=body(final), headers=headers)
        async with httpx.AsyncClient(timeout=10) as http:
            retry = (await http.post(f"{base}/mcp", json=body(final), headers=headers)).json()
    assert retry["result"]["structuredContent"] == {"order": "ORD-9", "run": 1, "note": ""}
    assert desk.runs == ["ORD-9"]
