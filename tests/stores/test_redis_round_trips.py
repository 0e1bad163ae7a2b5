"""What a single-use round costs Redis, counted by a real redis-server's MONITOR, not timed.

Rounds that ask a question touch Redis not at all (their state is sealed in
the token); the final round claims its state once. An anonymous caller's
claim is the only command of its round (nothing is kept for a retry, so the
claim is written as done); a principal's round adds one command after the
tool ran, keeping its answer for that caller's retry.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
import redis as redis_py
from pydantic import BaseModel

from mcp_resolve import Elicit, MCPServer, RequestStateSecurity, Resolve
from mcp_resolve.protocol.jsonrpc import IncomingRequest
from mcp_resolve.protocol.session import Connection
from mcp_resolve.stores import RedisReplayStore
from redis_helpers import RedisServer
from servers.state_wire import FROZEN, MODERN_META, accept

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KEY = "round-trips-secret-0123456789abcdefghijklmnop"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


class Monitor:
    """The commands clients send a real redis-server, as its MONITOR reports them (scripts' own commands left out)."""

    STOP = "round-trips-monitor-stop"

    def __init__(self, redis: RedisServer) -> None:
        self.redis = redis
        self.seen: list[str] = []
        self._client = redis_py.Redis(port=redis.port, socket_timeout=10)
        self._monitor = self._client.monitor().__enter__()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        for command in self._monitor.listen():
            text = str(command.get("command", ""))
            if self.STOP in text:
                return
            if command.get("client_type") != "lua":
                self.seen.append(text.split(" ", 1)[0].lower())

    def stop(self) -> list[str]:
        with redis_py.Redis(port=self.redis.port, socket_timeout=2) as client:
            client.echo(self.STOP)
        self._thread.join(10)
        assert not self._thread.is_alive()
        self._monitor.__exit__(None, None, None)
        self._client.close()
        return [name for name in self.seen if name not in ("hello", "client")]


class Confirm(BaseModel):
    ok: bool


async def ask_confirm(order: str) -> Confirm | Elicit[Confirm]:
    return Elicit(f"Refund {order}?", Confirm)


class Desk:
    def __init__(self, store: RedisReplayStore) -> None:
        self.runs: list[str] = []
        self.server = MCPServer(
            "Round trips", request_state_security=RequestStateSecurity(keys=[KEY]), replay_store=store
        )

        @self.server.tool(single_use=True)
        async def refund(order: str, confirm: Annotated[Confirm, Resolve(ask_confirm)]) -> dict[str, Any]:
            self.runs.append(order)
            return {"order": order}

    async def send(self, params: dict[str, Any], principal: str | None) -> dict[str, Any]:
        async def sink(message: dict[str, Any]) -> None:
            pass

        request = IncomingRequest(id=1, method="tools/call", params={**params, "_meta": MODERN_META})
        return await Connection(self.server, principal=principal).respond(request, sink)

    async def first_round(self, principal: str | None, order: str) -> dict[str, Any]:
        call = {"name": "refund", "arguments": {"order": order}}
        asked = (await self.send(call, principal))["result"]
        assert asked["resultType"] == "input_required", asked
        return {
            **call,
            "requestState": asked["requestState"],
            "inputResponses": accept(asked["inputRequests"], {"ok": True}),
        }


@pytest.mark.parametrize(("principal", "expected"), [(None, 1), ("alice", 2)])
async def test_a_final_round_costs_one_claim_and_a_kept_answer_one_more(
    redis: RedisServer, principal: str | None, expected: int
) -> None:
    store = RedisReplayStore(redis.url)
    desk = Desk(store)
    try:
        warm = await desk.first_round(principal, "ORD-0")  # the connection's own setup is not counted
        assert "result" in await desk.send(warm, principal)

        watch = Monitor(redis)
        final = await desk.first_round(principal, "ORD-1")
        assert watch.stop() == []  # a round that asks a question never touches Redis

        watch = Monitor(redis)
        answer = await desk.send(final, principal)
        sent = watch.stop()
        assert answer["result"]["structuredContent"] == {"order": "ORD-1"}
        assert sent == ["eval"] * expected, sent  # the claim, then (a principal's) kept answer

        watch = Monitor(redis)
        again = await desk.send(final, principal)  # a replay: refused, or the kept answer, after one claim
        assert watch.stop() == ["eval"]
        if principal is None:
            assert again["error"] == FROZEN
        else:
            assert again["result"] == answer["result"]
        assert desk.runs == ["ORD-0", "ORD-1"]
    finally:
        await store.redis.aclose()
