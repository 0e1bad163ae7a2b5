"""Multi-round calls at 2026-07-28 behind a middleware chain: the chain changes nothing a round needs.

An echoed `requestState` is unsealed before the chain and an outgoing one
sealed after it, so a middleware reads plaintext both ways, and the handler
under it gets the same verified plaintext state a server without middleware
hands it. These tests hold that for a hand-written round and for the
resolver's own questions (the refund desk's story, run behind a chain).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import pytest
from mcp_types import ElicitRequestFormParams

from mcp_resolve import Client, MCPServer
from mcp_resolve.transports.memory import MemoryPipe, connect_in_memory
from refund_story_helpers import Person, run_story
from servers.raw_stdio import modern_meta
from test_modern_respond import QUESTION, wrapping_server

pytestmark = pytest.mark.anyio

CallNext = Callable[[Any], Awaitable[Any]]


class Watcher:
    """A pass-through middleware that notes the requestState it sees going in and coming out."""

    def __init__(self) -> None:
        self.incoming: list[Any] = []
        self.outgoing: list[Any] = []

    async def __call__(self, ctx: Any, call_next: CallNext) -> Any:
        if ctx.method == "tools/call":
            self.incoming.append((ctx.params or {}).get("requestState"))
        result = await call_next(ctx)
        if ctx.method == "tools/call":
            self.outgoing.append(result.get("requestState"))
        return result


def watched(server: MCPServer) -> Watcher:
    watcher = Watcher()
    server.middleware.append(watcher)
    return watcher


async def call(pipe: MemoryPipe, ids: itertools.count[int], params: dict[str, Any]) -> dict[str, Any]:
    request_id = next(ids)
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {**params, "_meta": modern_meta()},
    }
    await pipe.send(message)
    while True:
        reply = await pipe.receive()
        if reply.get("id") == request_id and "method" not in reply:
            return reply


@pytest.mark.parametrize("chained", [False, True])
async def test_a_hand_written_round_gets_its_plaintext_state_with_or_without_a_chain(chained: bool) -> None:
    server = wrapping_server()
    watcher = watched(server) if chained else None
    ids = itertools.count(1)
    async with connect_in_memory(server) as pipe:
        first = (await call(pipe, ids, {"name": "wrap", "arguments": {"title": "Dune"}}))["result"]
        assert first["resultType"] == "input_required"
        assert first["inputRequests"] == {"wrap": QUESTION}
        sealed = first["requestState"]
        assert "asked:Dune" not in sealed  # the client only ever holds the sealed form
        second = await call(
            pipe,
            ids,
            {
                "name": "wrap",
                "arguments": {"title": "Dune"},
                "requestState": sealed,
                "inputResponses": {"wrap": {"action": "accept", "content": {"wrap": True}}},
            },
        )
    # The handler read back the plaintext it returned, not the sealed token the client echoed.
    assert second["result"]["content"][0]["text"] == "asked:Dune wrap=True on 2026-07-28"
    if watcher is not None:
        assert watcher.incoming == [None, "asked:Dune"]  # unsealed before the chain
        assert watcher.outgoing == ["asked:Dune", None]  # sealed after it


async def test_the_refund_story_runs_the_same_behind_a_chain(refund_desk: ModuleType) -> None:
    watcher = watched(refund_desk.mcp)
    person = Person()

    async def elicit(params: ElicitRequestFormParams) -> dict[str, Any]:
        return await person.ours(params)

    async with Client(refund_desk.mcp, mode="auto", elicitation_handler=elicit) as client:
        assert client.is_modern
        await run_story(client.call_tool, person)
    # Every round after a first one reached the chain with a state it could read, never a sealed one.
    echoed = [state for state in watcher.incoming if state is not None]
    assert echoed  # the story takes several rounds
    assert all(state in watcher.outgoing for state in echoed)
