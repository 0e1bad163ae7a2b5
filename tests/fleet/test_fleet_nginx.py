"""A real fleet: nginx (docs/deploy/nginx.conf) in front of three refund-desk workers sharing keys and one Redis.

Everything is a separate real process started here: redis-server (with the
persistence docs/deploy.md asks for), three `mcp-resolve run --http`
workers with MCP_RESOLVE_REDIS_URL and shared MCP_RESOLVE_STATE_KEYS, and
nginx. Each refund a worker performs is appended to a ledger file, which is
how doubled and lost refunds are counted. The tests run in order on one
fleet: a worker is killed with SIGKILL under load, then Redis is stopped and
started again.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from conftest import SERVERS
from fleet_helpers import Nginx, Worker
from http_helpers import initialize_request
from mcp_resolve import Client
from redis_helpers import RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

DESK = SERVERS / "fleet_desk.py"
KEYS = "fleet-test-key-" + "f" * 40
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "fleet", "version": "1"},
}
FROZEN = {"code": -32602, "message": "Invalid or expired requestState"}


@dataclass
class Fleet:
    redis: RedisServer
    workers: list[Worker]
    nginx: Nginx
    ledger: Path
    figures: dict[str, Any] = field(default_factory=dict)

    def refunds(self) -> list[str]:
        return (
            [line.split("\t")[0] for line in self.ledger.read_text().splitlines()]
            if self.ledger.exists()
            else []
        )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    directory = tmp_path_factory.mktemp("fleet")
    redis = RedisServer(extra=("--appendonly", "yes", "--appendfsync", "always"))
    redis.start_fresh()
    env = {
        "MCP_RESOLVE_REDIS_URL": redis.url,
        "MCP_RESOLVE_STATE_KEYS": KEYS,
        "FLEET_LEDGER": str(directory / "ledger.txt"),
    }
    workers = [Worker(DESK, env, directory, f"worker{i}") for i in (1, 2, 3)]
    nginx = None
    try:
        for worker in workers:
            worker.wait()
        nginx = Nginx([worker.port for worker in workers])
        yield Fleet(redis, workers, nginx, directory / "ledger.txt")
    finally:
        if nginx is not None:
            nginx.close()
        for worker in workers:
            worker.stop()
        redis.close()


async def person(params: Any) -> dict[str, Any]:
    if "full" in params.requested_schema["properties"]:
        return {"action": "accept", "content": {"full": True}}
    return {"action": "accept", "content": {"restock": False}}


def modern_call(
    request_id: int, arguments: dict[str, Any], state: str | None = None, answers: Any = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "refund_order", "arguments": arguments, "_meta": META}
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = answers
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


HEADERS = {
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "refund_order",
    "Accept": "application/json, text/event-stream",
}


def answer(requests: dict[str, Any]) -> dict[str, Any]:
    answers = {}
    for key, question in requests.items():
        full = "full" in question["params"]["requestedSchema"]["properties"]
        answers[key] = {"action": "accept", "content": {"full": True} if full else {"restock": False}}
    return answers


async def post(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await http.post(url, json=body, headers=HEADERS)
    return reply.json()


async def final_round(http: httpx.AsyncClient, urls: list[str], reason: str) -> dict[str, Any]:
    """Rounds 1 and 2 on two different workers; the body of round 3, still unsent."""
    arguments = {"order_id": "ORD-7002", "reason": reason}
    first = (await post(http, urls[0], modern_call(1, arguments)))["result"]
    second = await post(
        http, urls[1], modern_call(2, arguments, first["requestState"], answer(first["inputRequests"]))
    )
    second = second["result"]
    assert second["resultType"] == "input_required"
    return modern_call(3, arguments, second["requestState"], answer(second["inputRequests"]))


async def test_rounds_on_three_workers_complete_and_clients_through_nginx_refund(fleet: Fleet) -> None:
    urls = [worker.url for worker in fleet.workers]
    async with httpx.AsyncClient(timeout=10) as http:
        third = await final_round(http, urls, "rounds on three workers")
        done = (await post(http, urls[2], third))["result"]
    assert done["structuredContent"]["cents"] == 4800
    async with Client(fleet.nginx.url, mode=MODERN, elicitation_handler=person) as client:
        for index in range(3):
            result = await client.call_tool(
                "refund_order", {"order_id": "ORD-7002", "reason": f"via nginx {index}"}
            )
            assert result.structured_content["cents"] == 4800
    assert sorted(fleet.refunds()) == sorted(
        ["rounds on three workers", *(f"via nginx {i}" for i in range(3))]
    )


async def test_a_final_state_replayed_to_every_worker_at_once_refunds_once(fleet: Fleet) -> None:
    urls = [worker.url for worker in fleet.workers]
    async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_connections=50)) as http:
        third = await final_round(http, urls, "replayed everywhere")
        outcomes: list[dict[str, Any]] = []

        async def replay(url: str) -> None:
            outcomes.append(await post(http, url, third))

        async with anyio.create_task_group() as group:
            for _ in range(5):
                for url in [*urls, fleet.nginx.url]:
                    group.start_soon(replay, url)
    done = [o for o in outcomes if "result" in o]
    assert len(done) == 1 and done[0]["result"]["structuredContent"]["cents"] == 4800
    assert all(o["error"] == FROZEN for o in outcomes if "error" in o) and len(outcomes) == 20
    assert fleet.refunds().count("replayed everywhere") == 1


async def test_a_listener_on_one_worker_hears_a_tool_added_on_another(fleet: Fleet) -> None:
    a, b = fleet.workers[0], fleet.workers[1]
    listen = {
        "jsonrpc": "2.0",
        "id": "listen-a",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
    }
    headers = {**HEADERS, "Mcp-Method": "subscriptions/listen"}
    del headers["Mcp-Name"]
    async with (
        httpx.AsyncClient(timeout=10) as http,
        http.stream("POST", a.url, json=listen, headers=headers) as stream,
    ):
        lines = stream.aiter_lines()
        ack = await _next_data(lines)
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        body = {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "open_counter", "arguments": {"name": "counter_b"}, "_meta": META},
        }
        opened = await http.post(b.url, json=body, headers={**HEADERS, "Mcp-Name": "open_counter"})
        assert opened.json()["result"]["structuredContent"] == {"result": 0}  # nobody on B listens
        changed = await _next_data(lines)
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "listen-a"}


async def _next_data(lines: Any, timeout: float = 10) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        async for line in lines:
            if line.startswith("data: ") and line[6:].strip():
                return json.loads(line[6:])
    raise AssertionError("stream ended")


async def test_a_handshake_session_is_served_by_every_worker_and_resumes_on_another(fleet: Fleet) -> None:
    async with Client(fleet.nginx.url, mode="legacy", elicitation_handler=person) as client:
        pids = set()
        for index in range(
            6
        ):  # round-robin: every worker serves this session, questions and answers included
            result = await client.call_tool(
                "refund_order", {"order_id": "ORD-7002", "reason": f"legacy {index}"}
            )
            assert result.structured_content["cents"] == 4800
            pids.add((await client.call_tool("worker", {})).structured_content["result"])
        assert len(pids) == 3
    a, b = fleet.workers[0], fleet.workers[1]
    accept = "application/json, text/event-stream"
    async with httpx.AsyncClient(timeout=10) as http:
        init = initialize_request()
        reply = await http.post(a.url, json=init, headers={"Accept": accept})
        session = {
            "Mcp-Session-Id": reply.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
            "Accept": accept,
        }
        slow = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": 1}},
        }
        async with http.stream("POST", a.url, json=slow, headers=session) as stream:
            lines = stream.aiter_lines()
            event_id = None
            async for line in lines:
                if line.startswith("id: "):
                    event_id = line[4:]
                if line.startswith("data: {"):
                    break
        assert event_id is not None
        async with http.stream("GET", b.url, headers={**session, "Last-Event-ID": event_id}) as resumed:
            assert resumed.status_code == 200
            final = None
            async for line in resumed.aiter_lines():
                if line.startswith("data: {") and '"result"' in line:
                    final = json.loads(line[6:])
                    break
    assert final is not None and final["id"] == 2
    assert final["result"]["structuredContent"]["result"] == a.process.pid  # the call ran on A, read on B


async def test_one_worker_killed_under_load_loses_and_doubles_nothing(fleet: Fleet) -> None:
    """Twelve clients refund through nginx for eight seconds; a worker gets SIGKILL after three."""
    victim = fleet.workers[2]
    outcomes: list[tuple[str, float, str]] = []  # (reason, when, "ok" or the error)
    stop_at = time.monotonic() + 8.0
    killed_at: list[float] = []

    async def client_loop(index: int, legacy: bool) -> None:
        mode = "legacy" if legacy else MODERN
        call = 0
        while time.monotonic() < stop_at:
            try:
                async with Client(fleet.nginx.url, mode=mode, elicitation_handler=person) as client:
                    while time.monotonic() < stop_at:
                        reason = f"load {index}.{call}"
                        call += 1
                        try:
                            with anyio.fail_after(40):
                                result = await client.call_tool(
                                    "refund_order", {"order_id": "ORD-7002", "reason": reason}
                                )
                        except Exception as exc:
                            outcomes.append(
                                (reason, time.monotonic(), f"{mode} {type(exc).__name__} {exc}"[:200])
                            )
                            break  # a new client, as an application would reconnect
                        ok = not result.is_error and result.structured_content["cents"] == 4800
                        outcomes.append((reason, time.monotonic(), "ok" if ok else str(result.content)))
            except Exception as exc:  # the connection itself failed
                outcomes.append((f"connect {index}.{call}", time.monotonic(), f"{mode} connect {exc}"[:200]))

    async def killer() -> None:
        await anyio.sleep(3.0)
        killed_at.append(time.monotonic())
        victim.kill()

    async with anyio.create_task_group() as group:
        for index in range(12):
            group.start_soon(client_loop, index, index % 4 == 0)
        group.start_soon(killer)
    ledger = fleet.refunds()
    completed = [reason for reason, _, status in outcomes if status == "ok"]
    errors = [(reason, when, status) for reason, when, status in outcomes if status != "ok"]
    doubled = sorted({reason for reason in ledger if ledger.count(reason) > 1})
    lost = [reason for reason in completed if reason not in ledger]
    # Nothing may fail long after the kill: a call hanging until the client's limit (a handshake-era
    # answer refused by nginx with 502 and dropped, before the client sent answers again) would.
    late = [e for e in errors if e[1] > killed_at[0] + 3.0]
    fleet.figures.update(
        refunds=len(completed),
        ledger=len(set(ledger)),
        errors=len(errors),
        doubled=len(doubled),
        lost=len(lost),
    )
    kinds = Counter(status for _, _, status in errors).most_common(5)
    print(f"\nfleet under SIGKILL: {fleet.figures}, errors: {kinds}")
    assert not doubled and not lost, (doubled[:5], lost[:5])
    assert len(completed) > 30, (len(completed), kinds, fleet.workers[0].log()[-2000:])
    assert len(errors) <= 12 and not late, kinds  # at most the calls in flight on the dead worker
    assert all(when >= killed_at[0] for _, when, _ in errors), kinds


async def test_redis_down_fails_closed_and_the_fleet_recovers(fleet: Fleet) -> None:
    live = [worker for worker in fleet.workers if worker.process.poll() is None]
    urls = [worker.url for worker in live]
    async with httpx.AsyncClient(timeout=15) as http:
        claimed_before = await final_round(http, urls, "claimed before the restart")
        assert "result" in await post(http, urls[0], claimed_before)
        pending = await final_round(http, urls, "sent while Redis was down")
        fleet.redis.stop()
        try:
            refused = [await post(http, url, pending) for url in urls]
            assert all(r["error"]["code"] == -32603 for r in refused), refused
            assert all("replay store unavailable" in r["error"]["message"] for r in refused), refused
            health = await http.get(fleet.nginx.url.replace("/mcp", "/health"))
            assert health.status_code == 503
            legacy_init = initialize_request()
            opened = await http.post(
                urls[0], json=legacy_init, headers={"Accept": "application/json, text/event-stream"}
            )
            assert "mcp-session-id" not in opened.headers and opened.json()["error"]["code"] == -32603
        finally:
            fleet.redis.start()
        assert "sent while Redis was down" not in fleet.refunds()  # never accepted as unclaimed
        deadline = time.monotonic() + 10
        for worker in live:  # each worker reconnects on its own (its store client and its subscriber)
            while (await http.get(worker.url.replace("/mcp", "/health"))).status_code != 200:
                assert time.monotonic() < deadline
                await anyio.sleep(0.1)
        done = await post(http, urls[-1], pending)
        assert done["result"]["structuredContent"]["cents"] == 4800
        assert (await post(http, urls[0], pending))["error"] == FROZEN
        assert (await post(http, urls[-1], claimed_before))["error"] == FROZEN  # claims survived the restart
    assert fleet.refunds().count("sent while Redis was down") == 1
    async with Client(fleet.nginx.url, mode="legacy", elicitation_handler=person) as client:
        result = await client.call_tool(
            "refund_order", {"order_id": "ORD-7002", "reason": "after the restart"}
        )
        assert result.structured_content["cents"] == 4800
