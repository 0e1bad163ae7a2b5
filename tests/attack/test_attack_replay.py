"""Attack suite (issue 22): a single-use round replayed by many clients at once, across two worker processes.

Two uvicorn processes serve the refund desk (`single_use=True`) with one key
ring and one SQLite replay store, as two workers of one deployment would.
A refund is taken to a round, then forty clients, each on its own warmed-up
connection, send that same round at the same moment, half to each worker.
Exactly one may go on; the other 39 get the frozen error, whichever worker
they reached. The refunds are counted in the servers' shared events file,
not inferred from what the clients saw.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from conftest import PYTHON, SERVERS
from servers.attack_http import BOTH, with_meta
from servers.attack_stdio import screen
from servers.state_wire import FROZEN

KEY = "attack-replay-secret-0123456789abcdefghijklmnop"
REFUND = {"name": "refund_order", "arguments": {"order_id": "ORD-7002", "reason": "too small"}}
CLIENTS = 40
REPLAYED = "rejected replayed requestState on"
ELICITING = {"elicitation": {"form": {}}}

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@dataclass
class Worker:
    """One uvicorn process on a socket bound before it started (a request waits in the backlog, not on a poll)."""

    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def start_worker(directory: Path, label: str, env: dict[str, str]) -> Worker:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(CLIENTS * 2)
    stderr_path = directory / f"{label}.stderr"
    command = [PYTHON, "-m", "uvicorn", "--app-dir", str(SERVERS), "attack_refund_app:app"]
    command += ["--fd", str(sock.fileno()), "--log-level", "warning"]
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(command, env=env, stderr=stderr, pass_fds=(sock.fileno(),))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    sock.close()  # the worker holds its own copy
    return Worker(process, url, stderr_path)


def stop_worker(worker: Worker) -> None:
    worker.process.send_signal(signal.SIGINT)
    try:
        worker.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait()


@dataclass
class Fleet:
    workers: list[Worker]
    events: Path

    def refunds(self) -> int:
        return self.events.read_text().splitlines().count("refund_order") if self.events.exists() else 0


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    directory = tmp_path_factory.mktemp("attack-fleet")
    events = directory / "refunds.events"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("MCP_RESOLVE_", "STATE_SERVER_"))},
        "STATE_SERVER_APP": "refund",
        "MCP_RESOLVE_STATE_KEYS": KEY,
        "STATE_SERVER_REPLAY_DB": str(directory / "replay.sqlite3"),
        "STATE_SERVER_EVENTS": str(events),
    }
    workers = [start_worker(directory, label, env) for label in ("worker-a", "worker-b")]
    try:
        yield Fleet(workers, events)
    finally:
        for worker in workers:
            stop_worker(worker)
    for worker in workers:
        screen(worker.stderr(), f"{worker.stderr_path.name}")


async def call(http: httpx.AsyncClient, worker: Worker, params: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 tools/call; the response message, after checking the status is no 5xx."""
    headers = {
        **BOTH,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "refund_order",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": with_meta(params, ELICITING)}
    response = await http.post(worker.url, json=body, headers=headers)
    assert response.status_code < 500, response.text
    screen(response.text, "an HTTP answer")
    message: dict[str, Any] = response.json()
    return message


def next_round(response: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    result = response["result"]
    assert result["resultType"] == "input_required", result
    answers = {key: {"action": "accept", "content": content} for key in result["inputRequests"]}
    return {**REFUND, "requestState": result["requestState"], "inputResponses": answers}


async def rounds(http: httpx.AsyncClient, fleet: Fleet) -> tuple[dict[str, Any], dict[str, Any]]:
    """Round one on one worker, round two on the other (they share keys); the params of rounds two and three."""
    first, second = fleet.workers
    round2 = next_round(await call(http, first, REFUND), {"full": True})
    round3 = next_round(await call(http, second, round2), {"restock": True})
    return round2, round3


async def all_at_once(
    fleet: Fleet, send: Callable[[httpx.AsyncClient, Worker], Awaitable[dict[str, Any]]]
) -> list[tuple[Worker, dict[str, Any]]]:
    """CLIENTS clients, alternating between the workers, each on its own connection opened beforehand,
    released together; what each was answered, by which worker."""
    outcomes: list[tuple[Worker, dict[str, Any]]] = []
    ready, go = 0, anyio.Event()

    async def client(index: int) -> None:
        nonlocal ready
        worker = fleet.workers[index % len(fleet.workers)]
        async with httpx.AsyncClient(timeout=30) as http:
            await http.get(worker.url.removesuffix("/mcp") + "/")  # the connection is open before the race
            ready += 1
            if ready == CLIENTS:
                go.set()
            await go.wait()
            outcomes.append((worker, await send(http, worker)))

    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(client, index)
    return outcomes


def replay_rejections(fleet: Fleet) -> list[int]:
    return [worker.stderr().count(REPLAYED) for worker in fleet.workers]


async def test_a_final_round_sent_by_forty_clients_at_once_refunds_once(fleet: Fleet) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        _round2, round3 = await rounds(http, fleet)
    before, rejected_before = fleet.refunds(), replay_rejections(fleet)

    outcomes = await all_at_once(fleet, lambda http, worker: call(http, worker, round3))

    completed = [message for _worker, message in outcomes if "result" in message]
    assert len(completed) == 1, completed
    assert completed[0]["result"]["structuredContent"] == {
        **REFUND["arguments"],
        "cents": 4800,
        "restocked": True,
    }
    assert all(message.get("error") == FROZEN for _worker, message in outcomes if "result" not in message)
    assert fleet.refunds() == before + 1
    rejected = [
        after - earlier for after, earlier in zip(replay_rejections(fleet), rejected_before, strict=True)
    ]
    assert sum(rejected) == CLIENTS - 1 and min(rejected) > 0, rejected  # both workers took part in the race


async def test_an_earlier_round_sent_by_forty_clients_at_once_goes_on_once(fleet: Fleet) -> None:
    """Claims are made on every round: a race on round two also lets exactly one through, and refunds nothing."""
    async with httpx.AsyncClient(timeout=30) as http:
        round2 = next_round(await call(http, fleet.workers[0], REFUND), {"full": True})
    before = fleet.refunds()

    outcomes = await all_at_once(fleet, lambda http, worker: call(http, worker, round2))

    went_on = [message for _worker, message in outcomes if "result" in message]
    assert len(went_on) == 1 and went_on[0]["result"]["resultType"] == "input_required", went_on
    assert all(message.get("error") == FROZEN for _worker, message in outcomes if "result" not in message)
    assert fleet.refunds() == before


async def test_prefilled_answers_without_a_state_refund_nothing(fleet: Fleet) -> None:
    """Issue 22, item 3: answers under the real question keys on a first round, no requestState, forty at
    once. A single_use tool counts only answers to questions it asked in a state it sealed: every call is
    asked its first question, and nothing is refunded."""
    async with httpx.AsyncClient(timeout=30) as http:
        first = (await call(http, fleet.workers[0], REFUND))["result"]
        second = (await call(http, fleet.workers[1], next_round({"result": first}, {"full": True})))["result"]
    keys = [*first["inputRequests"], *second["inputRequests"]]
    contents = ({"full": True}, {"restock": True})
    prefilled = {
        **REFUND,
        "inputResponses": {
            key: {"action": "accept", "content": c} for key, c in zip(keys, contents, strict=True)
        },
    }
    before = fleet.refunds()

    outcomes = await all_at_once(fleet, lambda http, worker: call(http, worker, prefilled))

    assert fleet.refunds() == before
    for _worker, message in outcomes:
        result = message.get("result")
        assert result is not None and result["resultType"] == "input_required", message
        assert list(result["inputRequests"]) == list(first["inputRequests"]), message


async def test_the_fleet_still_refunds_across_workers_afterwards(fleet: Fleet) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        _round2, round3 = await rounds(http, fleet)
        before = fleet.refunds()
        done = await call(http, fleet.workers[0], round3)
    assert done["result"]["structuredContent"]["cents"] == 4800
    assert fleet.refunds() == before + 1
