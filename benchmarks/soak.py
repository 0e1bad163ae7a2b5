"""Soak: minutes of mixed refund-desk load on a fleet, with faults, checked against the server's ledger.

    python benchmarks/soak.py [--legs pair fleet] [--fleet] [--seconds 90] [--clients 16]
                              [--kill-every 30] [--fault-every 8] [--seed N]

Two legs, one after the other (both by default), each `--seconds` long. This
module is the first, `pair`; `fleet` (nginx, three workers and Redis, with
workers killed and Redis stopped and paused) is in `soak_fleet.py` and runs
the same flows. The exit status is 1 if either leg lost or doubled a refund.

The pair leg: two uvicorn processes of `benchmarks/soak_server.py` (the refund desk with a
shared SQLite replay store and a SQLite ledger of refunds) on loopback ports,
sharing their requestState keys. Concurrent clients run refund flows:

* 2026-07-28 with raw httpx, each round sent to a random worker (rounds cross processes),
  the person taking anything from a moment to seconds to answer; some later rounds go to
  both workers at once (a client retrying elsewhere): single-use state must let exactly one
  through and refuse the other;
* 2026-07-28 and 2025-11-25 with our `Client`, a flow pinned to one worker
  (a handshake session lives in one process);
* dropped clients: 2026-07-28 flows abandoned after an input_required (or cut mid-request),
  and 2025-11-25 calls whose connection is closed while a question is open on the SSE stream.

Faults besides the drops: every `--kill-every` seconds worker 1 stops taking new requests,
finishes what it has in flight, is SIGKILLed and restarted on the same port, while
2026-07-28 flows wait between rounds holding state it sealed. Worker 0 is never
killed, so its RSS at start and end shows growth over the whole run. A replayer
re-sends completed final rounds (including ones claimed by a process since
killed): each must get the frozen "Invalid or expired requestState", or its own
receipt again (a store that answers a retry with the original outcome), the
ledger showing whether the tool ran twice.

At the end every flow's outcome as the client saw it is compared with the
ledger: LOST is a refund one side has and the other lacks, DOUBLED a flow with
more than one ledger row. The exit status is 1 if there is either.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import httpx

from benchmarks.soak_server import create_ledger
from mcp_resolve import Client

HERE = Path(__file__).resolve().parent
MODERN: Literal["2026-07-28"] = "2026-07-28"
LEGACY = "2025-11-25"
TOOL = "refund_order"
CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
    "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "0"},
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
FROZEN = {"code": -32602, "message": "Invalid or expired requestState"}
DECLINED_SCOPE = "Resolver for parameter 'scope' could not resolve: elicitation was decline"
SCOPES = ({"full": True}, {"full": False, "sku": "trail-boots"}, {"full": False, "sku": "wool-socks"})
MIX = {"modern": 40, "modern_client": 10, "legacy": 25, "modern_drop": 10, "legacy_drop": 15}
KIND_NAMES = {
    "modern": "2026-07-28, raw rounds on random workers",
    "modern_client": "2026-07-28, our Client",
    "legacy": "2025-11-25, our Client",
    "modern_drop": "2026-07-28, dropped mid-question",
    "legacy_drop": "2025-11-25, dropped mid-question",
}
RACE_SHARE = 0.1  # of the later 2026-07-28 rounds, those sent to both workers at once
REQUEST_TIMEOUT = httpx.Timeout(30.0)
FLOW_TIMEOUT = 90.0
DRAIN_TIMEOUT = 20.0
MAX_ROUNDS = 6
EXPECTED_LOG_LINES = ("--- starting worker", "rejected replayed requestState on tools/call")
UNAVAILABLE = "unavailable: the shared store did not answer"
NO_ANSWER_TWICE = "round sent twice: no answer from either"


# -- the fleet -------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_mb(pid: int, field_name: str = "VmRSS") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


@dataclass(eq=False)
class Worker:
    """One fleet slot: a uvicorn process on a fixed port, restarted in place after a kill."""

    slot: int
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    accepting: bool = False
    in_flight: int = 0
    requests: int = 0
    pids: list[int] = field(default_factory=list)
    rss_start: float | None = None
    rss_samples: list[tuple[float, float | None]] = field(default_factory=list)
    rss_end: float | None = None
    peak_end: float | None = None
    started_at: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


class Fleet:
    """The worker processes, sharing keys, replay store and ledger; routes each request to one of them."""

    def __init__(self, size: int, directory: Path, rng: random.Random) -> None:
        self.rng = rng
        self.workers = [Worker(slot, free_port(), directory / f"worker-{slot}.log") for slot in range(size)]
        self.dead_pids: set[int] = set()
        self.began = time.monotonic()
        self.env = {
            **os.environ,
            "MCP_RESOLVE_STATE_KEYS": secrets.token_urlsafe(48),
            "SOAK_REPLAY_DB": str(directory / "replay.sqlite3"),
            "SOAK_LEDGER_DB": str(directory / "ledger.sqlite3"),
        }

    def command(self, worker: Worker) -> list[str]:
        return [
            *(sys.executable, "-m", "uvicorn", "soak_server:app", "--app-dir", str(HERE)),
            *("--host", "127.0.0.1", "--port", str(worker.port), "--log-level", "warning"),
        ]

    async def start(self, worker: Worker) -> None:
        command = self.command(worker)
        with worker.log.open("ab") as log:
            log.write(f"--- starting worker {worker.slot} at {time.strftime('%X')}\n".encode())
            log.flush()
            worker.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env
            )
        worker.pids.append(worker.pid)
        with anyio.fail_after(60):
            while True:
                if worker.process.poll() is not None:
                    raise RuntimeError(f"worker {worker.slot} exited at start; see {worker.log}")
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", worker.port)
                except OSError:
                    await anyio.sleep(0.05)
                    continue
                await stream.aclose()
                break
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:  # one request: imports done
            response = await http.post(
                worker.url,
                json=rpc("tools/list", {"_meta": MODERN_META}),
                headers=modern_headers("tools/list", {}),
            )
            response.raise_for_status()
        if worker.rss_start is None:
            worker.rss_start = rss_mb(worker.pid)
        else:
            worker.started_at = time.monotonic() - self.began
        worker.accepting = True

    async def kill(self, worker: Worker, *, drain: bool = True) -> int:
        """Stop routing to the worker, wait for its requests in flight (unless not `drain`), SIGKILL it;
        returns those left in flight."""
        worker.accepting = False
        with anyio.move_on_after(DRAIN_TIMEOUT if drain else 0):
            while worker.in_flight:
                await anyio.sleep(0.01)
        left = worker.in_flight
        assert worker.process is not None
        worker.process.send_signal(signal.SIGKILL)
        await anyio.to_thread.run_sync(worker.process.wait)
        self.dead_pids.add(worker.pid)
        return left

    async def stop(self) -> None:
        for worker in self.workers:
            worker.accepting = False
            if worker.process is not None and worker.process.poll() is None:
                worker.process.terminate()
                try:
                    await anyio.to_thread.run_sync(worker.process.wait, 15)
                except subprocess.TimeoutExpired:
                    worker.process.kill()
                    await anyio.to_thread.run_sync(worker.process.wait)

    @asynccontextmanager
    async def serve(self, other_than: Worker | None = None) -> AsyncIterator[Worker]:
        """A random worker taking requests (another than `other_than` if one is), in flight for the block."""
        while not (choices := [w for w in self.workers if w.accepting]):
            await anyio.sleep(0.02)
        choices = [w for w in choices if w is not other_than] or choices
        worker = self.rng.choice(choices)
        worker.in_flight += 1
        try:
            yield worker
        finally:
            worker.in_flight -= 1


# -- the wire --------------------------------------------------------------------------------
_ids = itertools.count(1)


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}


def modern_headers(method: str, params: dict[str, Any]) -> dict[str, str]:
    headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    return headers


async def messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a response, whether a JSON body or an SSE stream (else `FlowError`)."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("text/event-stream"):
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip():  # not a priming event (no data)
                yield json.loads(line[5:])
    elif kind.startswith("application/json"):
        yield json.loads(await response.aread())
    else:  # a proxy's error page
        body = (await response.aread())[:200].decode(errors="replace")
        raise FlowError(f"HTTP {response.status_code} without a reply", body)


def passing_failure(reply: dict[str, Any]) -> str | None:
    """The kind of a reply that says "try again shortly" (a shared store away), else None."""
    error = reply.get("error") or {}
    if error.get("code") == -32603 and UNAVAILABLE in str(error.get("message", "")):
        return f"JSON-RPC -32603 {str(error['message']).split(':')[0]}"
    return None


class FlowError(Exception):
    """A flow ended unexpectedly; `kind` is what the report groups by."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(kind)
        self.kind, self.detail = kind, detail


# -- flows -----------------------------------------------------------------------------------
@dataclass(eq=False)
class Flow:
    id: str
    kind: str
    order_id: str
    scope: dict[str, Any] | None  # None: the person declines
    restock: dict[str, Any] | None
    outcome: str = "running"  # refunded | declined | dropped | failed
    spanned_kill: bool = False
    unanswered: bool = False  # failed without an answer (a transport error, a timeout), not on one
    receipt: Any = None  # what the client got when it refunded

    @property
    def arguments(self) -> dict[str, Any]:
        return {"order_id": self.order_id, "reason": f"soak {self.kind}", "flow_id": self.id}

    def answer(self, message: str) -> dict[str, Any]:
        content = self.restock if message.startswith("Restock") else self.scope
        return {"action": "decline"} if content is None else {"action": "accept", "content": content}

    def expected_receipt(self) -> dict[str, Any] | None:
        if self.order_id == "ORD-7001":
            return {"order_id": self.order_id, "cents": 999, "restocked": False}
        if self.scope is None:
            return None
        restocked = self.restock is not None and self.restock["restock"]
        return {
            "order_id": self.order_id,
            "cents": 4800 if self.scope["full"] else 2400,
            "restocked": restocked,
        }


@dataclass
class Spent:
    """A final round that refunded: replaying it must be refused."""

    params: dict[str, Any]
    flow_id: str
    pid: int


class Soak:
    """The clients, the faults, and what each flow's client saw."""

    def __init__(self, args: argparse.Namespace, fleet: Fleet, rng: random.Random) -> None:
        self.args, self.fleet, self.rng = args, fleet, rng
        self.flows: list[Flow] = []
        self.by_id: dict[str, Flow] = {}
        self.errors: Counter[str] = Counter()
        self.examples: dict[str, str] = {}
        self.stats: Counter[str] = Counter()
        self.spent: list[Spent] = []
        self.waiting: dict[Flow, int] = {}  # modern flows between rounds -> pid that sealed their state
        self.kills: list[dict[str, Any]] = []
        self.started = fleet.began = time.monotonic()  # restarts are timed from the start of the load
        self.deadline = self.started + args.seconds

    def now(self) -> float:
        return time.monotonic() - self.started

    # -- bookkeeping -------------------------------------------------------------------------
    def new_flow(self) -> Flow:
        rng = self.rng
        kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
        dropping = kind.endswith("_drop")
        order_id = "ORD-7001" if not dropping and rng.random() < 0.1 else "ORD-7002"
        scope = None if not dropping and rng.random() < 0.05 else dict(rng.choice(SCOPES))
        restock = None if rng.random() < 0.15 else {"restock": rng.random() < 0.5}
        flow = Flow(f"flow-{len(self.flows) + 1}", kind, order_id, scope, restock)
        self.flows.append(flow)
        self.by_id[flow.id] = flow
        return flow

    def same_outcome(self, flow: Flow, reply: dict[str, Any]) -> bool:
        """Whether `reply` is the receipt the flow already got: the final round answered again with its
        original outcome (the ledger shows whether the tool ran again), which is not a second refund."""
        result = reply.get("result") or {}
        return (
            flow.receipt is not None
            and not result.get("isError")
            and result.get("structuredContent") == flow.receipt
        )

    def fail(self, flow: Flow, kind: str, detail: str = "") -> None:
        if flow.outcome == "running":
            flow.outcome = "failed"
        key = f"{flow.kind}: {kind}"
        self.errors[key] += 1
        self.examples.setdefault(key, f"{flow.id} at {self.now():.0f} s: {detail}"[:400])

    def conclude(self, flow: Flow, is_error: bool, receipt: Any, text: str) -> None:
        expected = flow.expected_receipt()
        if is_error:
            if expected is None and DECLINED_SCOPE in text:
                flow.outcome = "declined"
            else:
                self.fail(flow, "tool error", text)
            return
        flow.outcome = "refunded"
        flow.receipt = receipt
        got = {key: (receipt or {}).get(key) for key in ("order_id", "cents", "restocked")}
        if got != expected:
            self.fail(flow, "wrong receipt", f"expected {expected}, got {receipt}")

    async def think(self, *, most: float = 6.0) -> None:
        """The person answering: mostly quick, sometimes slow enough to straddle a worker's kill."""
        draw = self.rng.random()
        pause = (
            self.rng.uniform(0, 0.2)
            if draw < 0.6
            else self.rng.uniform(0.2, 1.5)
            if draw < 0.85
            else self.rng.uniform(1.5, 6)
        )
        await anyio.sleep(min(pause, most))

    async def post(self, http: httpx.AsyncClient, worker: Worker, params: dict[str, Any]) -> dict[str, Any]:
        """One 2026-07-28 tools/call round; the JSON-RPC reply."""
        message = rpc("tools/call", params)
        worker.requests += 1
        async with http.stream(
            "POST", worker.url, json=message, headers=modern_headers("tools/call", params)
        ) as response:
            async for reply in messages(response):
                if reply.get("id") == message["id"]:
                    return reply
        raise FlowError(f"HTTP {response.status_code} without a reply")

    async def round(
        self, http: httpx.AsyncClient, worker: Worker, params: dict[str, Any], *, again: bool = False
    ) -> dict[str, Any]:
        """One round of a flow as the client sends it (`again`: it was sent before, without an answer).

        Here one attempt; the fleet leg retries."""
        return await self.post(http, worker, params)

    # -- the clients -------------------------------------------------------------------------
    async def client(self) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            while time.monotonic() < self.deadline:
                flow = self.new_flow()
                try:
                    with anyio.fail_after(FLOW_TIMEOUT):
                        await getattr(self, flow.kind)(flow, http)
                except FlowError as exc:
                    flow.unanswered = True
                    self.fail(flow, exc.kind, exc.detail)
                except TimeoutError:
                    flow.unanswered = True
                    self.fail(flow, "flow timed out", f"after {FLOW_TIMEOUT} s")
                except Exception as exc:
                    flow.unanswered = True
                    self.fail(flow, type(exc).__name__, str(exc))
                finally:
                    self.waiting.pop(flow, None)

    async def modern(self, flow: Flow, http: httpx.AsyncClient, drop: tuple[str, int] | None = None) -> None:
        """Rounds on random workers; `drop` = ("abandon", N): walk away after round N's input_required,
        ("cut", N): hang up while the server works on round N."""
        params: dict[str, Any] = {"name": TOOL, "arguments": flow.arguments, "_meta": MODERN_META}
        sealed_by: int | None = None
        for round_no in range(1, MAX_ROUNDS + 1):
            self.waiting.pop(flow, None)
            orphaned = sealed_by in self.fleet.dead_pids  # the process that sealed our state is gone
            if drop == ("cut", round_no):
                async with self.fleet.serve() as worker:
                    if sealed_by is not None:
                        self.note_crossing(flow, sealed_by != worker.pid, orphaned)
                    with anyio.move_on_after(self.rng.uniform(0, 0.004)):
                        await self.post(http, worker, params)
                self.stats["2026-07-28 rounds cut mid-request"] += 1
                flow.outcome = "dropped"
                return
            if sealed_by is not None and flow.kind == "modern" and self.rng.random() < RACE_SHARE:
                reply, pid = await self.race(flow, http, params)
            else:
                async with self.fleet.serve() as worker:
                    pid = worker.pid
                    reply = await self.round(http, worker, params)
            if sealed_by is not None:
                self.note_crossing(flow, sealed_by != pid, orphaned)
            if "error" in reply:
                error = reply["error"]
                raise FlowError(
                    f"JSON-RPC {error.get('code')} {error.get('message')}", json.dumps(reply)[:300]
                )
            result = reply["result"]
            if result.get("resultType") != "input_required":
                text = str((result.get("content") or [{}])[0].get("text", ""))
                self.conclude(flow, bool(result.get("isError")), result.get("structuredContent"), text)
                if flow.outcome == "refunded" and "requestState" in params:
                    self.spent.append(Spent(params, flow.id, pid))
                return
            if drop == ("abandon", round_no):
                self.stats["2026-07-28 flows abandoned after an input_required"] += 1
                flow.outcome = "dropped"
                return
            self.waiting[flow] = sealed_by = pid
            requests = result["inputRequests"]
            answers = {key: flow.answer(request["params"]["message"]) for key, request in requests.items()}
            await self.think()
            params = {**params, "requestState": result["requestState"], "inputResponses": answers}
        raise FlowError("too many rounds")

    async def race(
        self, flow: Flow, http: httpx.AsyncClient, params: dict[str, Any]
    ) -> tuple[dict[str, Any], int]:
        """Send a round to both workers at once: exactly one may answer, the other gets the frozen error.

        The flow goes on with the answer (the first, if both answered: the ledger
        then shows what that cost)."""
        replies: list[tuple[dict[str, Any], int]] = []

        async def send(worker: Worker) -> None:
            try:
                reply = await self.post(http, worker, params)
            except (httpx.HTTPError, FlowError) as exc:  # no answer: neither answered nor refused
                reply = {"no answer": exc.kind if isinstance(exc, FlowError) else type(exc).__name__}
            if passing_failure(reply):
                reply = {"no answer": passing_failure(reply), **reply}
            replies.append((reply, worker.pid))

        async with (
            self.fleet.serve() as first,
            self.fleet.serve(other_than=first) as second,
            anyio.create_task_group() as group,
        ):
            group.start_soon(send, first)
            group.start_soon(send, second)
        self.stats["2026-07-28 rounds sent to two workers at once"] += 1
        refused = [reply for reply, _ in replies if reply.get("error") == FROZEN]
        answered = [(r, pid) for r, pid in replies if r.get("error") != FROZEN and "no answer" not in r]
        results = [reply.get("result") for reply, _ in answered]
        if len(results) == 2 and results[0] is not None and results[0] == results[1]:
            self.stats["rounds sent twice: both answered with one outcome"] += 1
            return answered[0]  # the same outcome twice (a retry answered with it): the ledger counts
        if len(answered) != 1 or len(refused) != 1:
            kind = f"round sent twice: {len(answered)} answered, {len(refused)} refused"
            if not answered and not refused:
                kind = NO_ANSWER_TWICE
            detail = json.dumps([reply for reply, _ in replies])[:300]
            if not answered:
                raise FlowError(kind, detail)
            self.fail(flow, kind, detail)
        return answered[0]

    def note_crossing(self, flow: Flow, moved: bool, orphaned: bool) -> None:
        if moved:
            self.stats["rounds served by another process than the last"] += 1
        if orphaned:
            self.stats["rounds carrying state sealed by a killed process"] += 1
            flow.spanned_kill = True

    async def modern_drop(self, flow: Flow, http: httpx.AsyncClient) -> None:
        await self.modern(flow, http, self.rng.choice((("abandon", 1), ("abandon", 2), ("cut", 2))))

    async def modern_client(self, flow: Flow, http: httpx.AsyncClient) -> None:
        await self.with_client(flow, MODERN)

    async def legacy(self, flow: Flow, http: httpx.AsyncClient) -> None:
        await self.with_client(flow, "legacy")

    async def with_client(self, flow: Flow, mode: Literal["legacy", "2026-07-28"]) -> None:
        async def person(params: Any) -> dict[str, Any]:
            await self.think(most=0.5)
            return flow.answer(params.message)

        async with (
            self.fleet.serve() as worker,
            Client(worker.url, mode=mode, elicitation_handler=person) as client,
        ):
            result = await client.call_tool(TOOL, flow.arguments)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        self.conclude(flow, result.is_error, result.structured_content, text)

    async def legacy_drop(self, flow: Flow, _http: httpx.AsyncClient) -> None:
        """A handshake-era call whose client hangs up while a question is open on the call's SSE stream."""
        answer_first = self.rng.random() < 0.5  # answer the scope question, hang up at the restock one
        async with self.fleet.serve() as worker, httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            worker.requests += 3  # initialize, initialized, the call
            initialize = rpc(
                "initialize",
                {
                    "protocolVersion": LEGACY,
                    "capabilities": CAPABILITIES,
                    "clientInfo": {"name": "soak", "version": "0"},
                },
            )
            response = await http.post(worker.url, json=initialize, headers=ACCEPT)
            session = response.headers.get("mcp-session-id")
            if response.status_code != 200 or session is None:
                raise FlowError(f"initialize: HTTP {response.status_code}", response.text[:300])
            headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
            await http.post(
                worker.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            call = rpc("tools/call", {"name": TOOL, "arguments": flow.arguments})
            async with http.stream("POST", worker.url, json=call, headers=headers) as stream:
                async for message in messages(stream):
                    if message.get("method") == "elicitation/create":
                        if answer_first and not message["params"]["message"].startswith("Restock"):
                            reply = {
                                "jsonrpc": "2.0",
                                "id": message["id"],
                                "result": flow.answer(message["params"]["message"]),
                            }
                            await http.post(worker.url, json=reply, headers=headers)
                            worker.requests += 1
                            continue
                        break  # leaving the block closes the connection with the question open
                    if message.get("id") == call["id"]:
                        raise FlowError(
                            "the call ended before the client could drop it", json.dumps(message)[:300]
                        )
                else:
                    raise FlowError(f"HTTP {stream.status_code}: no question before the stream ended")
            self.stats["2025-11-25 calls dropped with a question open"] += 1
            if self.rng.random() < 0.5:  # half hang up for good, half also end the session politely
                await http.delete(worker.url, headers=headers)
                worker.requests += 1
        flow.outcome = "dropped"

    # -- faults ------------------------------------------------------------------------------
    async def killer(self) -> None:
        victim = self.fleet.workers[-1]
        while time.monotonic() + self.args.kill_every < self.deadline:
            await anyio.sleep(self.args.kill_every)
            self.sample_rss()
            pid = victim.pid
            holding = sum(sealed_by == pid for sealed_by in self.waiting.values())
            left = await self.fleet.kill(victim)
            waiting = sum(sealed_by == pid for sealed_by in self.waiting.values())
            self.kills.append(
                {"at": self.now(), "pid": pid, "in_flight": left, "holding": holding, "waiting": waiting}
            )
            # Down for a moment: meanwhile every round goes to the other worker.
            await anyio.sleep(self.rng.uniform(0.5, 2.0))
            await self.fleet.start(victim)

    async def replayer(self) -> None:
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            while time.monotonic() < self.deadline:
                await anyio.sleep(0.25)
                if not self.spent:
                    continue
                spent = self.rng.choice(self.spent)
                async with self.fleet.serve() as worker:
                    try:
                        reply = await self.post(http, worker, spent.params)
                    except (httpx.HTTPError, FlowError) as exc:
                        self.errors[f"replay: {type(exc).__name__}"] += 1
                        continue
                self.stats["final rounds replayed"] += 1
                if spent.pid in self.fleet.dead_pids:
                    self.stats["replays of a claim made by a since-killed process"] += 1
                if reply.get("error") == FROZEN:
                    self.stats["replays refused"] += 1
                elif self.same_outcome(self.by_id[spent.flow_id], reply):
                    self.stats["replays answered with the original outcome"] += 1
                else:
                    key = "replay: not refused"
                    self.errors[key] += 1
                    self.examples.setdefault(key, f"{spent.flow_id}: {json.dumps(reply)[:300]}")

    def sample_rss(self) -> None:
        for worker in self.fleet.workers:
            worker.rss_samples.append((self.now(), rss_mb(worker.pid)))

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(self.args.clients):
                group.start_soon(self.client)
            group.start_soon(self.killer)
            group.start_soon(self.replayer)
        for worker in self.fleet.workers:
            worker.rss_end, worker.peak_end = rss_mb(worker.pid), rss_mb(worker.pid, "VmHWM")


# -- the verdict -----------------------------------------------------------------------------
def ledger_rows(path: Path) -> Counter[str]:
    with sqlite3.connect(path) as conn:
        return Counter(flow_id for (flow_id,) in conn.execute("SELECT flow_id FROM refunds"))


def report(soak: Soak, ledger: Counter[str], directory: Path) -> int:
    flows = soak.flows
    by_id = {flow.id: flow for flow in flows}
    outcomes = Counter(flow.outcome for flow in flows)
    kinds = Counter(flow.kind for flow in flows)
    seen_not_recorded = [f.id for f in flows if f.outcome == "refunded" and not ledger[f.id]]
    recorded_not_seen = [f.id for f in flows if f.outcome != "refunded" and ledger[f.id]]
    doubled = [flow_id for flow_id, rows in ledger.items() if rows > 1]
    strays = [flow_id for flow_id in ledger if flow_id not in by_id]
    lost = len(seen_not_recorded) + len(recorded_not_seen)
    elapsed = soak.now()

    out: list[str] = []
    say = out.append
    say(
        f"\nSoak: {elapsed:.0f} s, {soak.args.clients} clients, {len(soak.fleet.workers)} workers, seed {soak.args.seed}"
    )
    say(f"flows        {len(flows):7d}  ({len(flows) / elapsed:.1f}/s)")
    for kind, name in KIND_NAMES.items():
        say(f"  {kinds[kind]:7d}  {name}")
    say(f"completed    {outcomes['refunded']:7d}  (the client saw a receipt)")
    say(f"declined     {outcomes['declined']:7d}  (the person declined the scope: no refund, as expected)")
    say(f"dropped      {outcomes['dropped']:7d}  (abandoned mid-question on purpose)")
    say(f"errors       {sum(soak.errors.values()):7d}  ({outcomes['failed']} flows failed)")
    for kind, count in soak.errors.most_common():
        say(f"  {count:7d}  {kind}")
        if kind in soak.examples:
            say(f"           e.g. {soak.examples[kind]}")
    requests = ", ".join(f"worker {w.slot} {w.requests}" for w in soak.fleet.workers)
    say(
        f"raw requests {sum(w.requests for w in soak.fleet.workers):7d}  ({requests}; our Client's not counted)"
    )
    for name, count in sorted(soak.stats.items()):
        say(f"  {count:7d}  {name}")
    spanned = [f for f in flows if f.spanned_kill]
    say(
        f"kills        {len(soak.kills):7d}  (worker {soak.fleet.workers[-1].slot}, SIGKILL, restarted on its port)"
    )
    for kill in soak.kills:
        say(
            f"           at {kill['at']:5.0f} s pid {kill['pid']}: {kill['in_flight']} requests in flight;"
            f" 2026-07-28 flows between rounds on state it sealed: {kill['holding']} when it stopped"
            f" taking requests, {kill['waiting']} still waiting when killed"
        )
    spanned_outcomes = Counter(f.outcome for f in spanned)
    say(
        f"  {len(spanned):7d}  flows continued with state sealed by a killed process: {dict(spanned_outcomes)}"
    )
    say(f"ledger rows  {sum(ledger.values()):7d}")
    say(
        f"LOST         {lost:7d}  (seen by the client, not in the ledger: {len(seen_not_recorded)}; in the ledger, not seen: {len(recorded_not_seen)})"
    )
    for flow_id in (seen_not_recorded + recorded_not_seen)[:10]:
        flow = by_id[flow_id]
        say(f"           {flow_id} {flow.kind} {flow.outcome}, ledger rows {ledger[flow_id]}")
    say(f"DOUBLED      {len(doubled):7d}" + (f"  {doubled[:10]}" if doubled else ""))
    if strays:
        say(f"ledger rows for no flow of this run: {strays[:10]}")
    say("RSS MB (VmRSS at start, at each kill, at the end; peak is the last process's VmHWM)")
    for worker in soak.fleet.workers:
        samples = " ".join(f"{_mb(rss)}@{at:.0f}s" for at, rss in worker.rss_samples)
        since = f" (its process since {worker.started_at:.0f} s)" if worker.started_at else ""
        say(
            f"  worker {worker.slot}: start {_mb(worker.rss_start)}, end {_mb(worker.rss_end)}{since},"
            f" peak {_mb(worker.peak_end)}; sampled {samples or '-'}; pids {','.join(map(str, worker.pids))}"
        )
    logs = [w.log.read_text(errors="replace").splitlines() for w in soak.fleet.workers]
    lines = [line for log in logs for line in log if not line.startswith(EXPECTED_LOG_LINES)]
    tracebacks = sum(line.startswith("Traceback") for line in lines)
    say(f"server logs: {tracebacks} tracebacks, {len(lines)} unexpected lines ({directory})")
    for line, count in Counter(lines).most_common(5):
        say(f"  {count:7d}  {line[:160]}")
    print("\n".join(out), flush=True)
    return 1 if lost or doubled else 0


def _mb(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f}"


async def pair_leg(args: argparse.Namespace, directory: Path) -> int:
    """The two-worker leg: two uvicorn workers on a shared SQLite replay store, worker 1 drained and killed."""
    rng = random.Random(args.seed)
    directory.mkdir(parents=True)
    create_ledger(str(directory / "ledger.sqlite3"))
    fleet = Fleet(2, directory, rng)
    try:
        for worker in fleet.workers:
            await fleet.start(worker)
        print(
            f"fleet: {', '.join(w.url for w in fleet.workers)}; {args.seconds:.0f} s of load, {args.clients} clients",
            flush=True,
        )
        soak = Soak(args, fleet, rng)
        await soak.run()
    finally:
        await fleet.stop()
    return report(soak, ledger_rows(directory / "ledger.sqlite3"), directory)


LEGS = ("pair", "fleet")


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=90, help="how long each leg starts new flows (default 90)"
    )
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument(
        "--legs",
        nargs="+",
        choices=LEGS,
        default=list(LEGS),
        help="pair: two workers, a shared SQLite replay store, worker 1 drained and killed; fleet: nginx,"
        " three workers and Redis, workers killed and Redis stopped and paused (default: both, in turn)",
    )
    parser.add_argument("--fleet", dest="legs", action="store_const", const=["fleet"], help="--legs fleet")
    parser.add_argument(
        "--kill-every",
        type=float,
        default=30,
        help="pair leg: seconds between kills of worker 1 (default 30)",
    )
    parser.add_argument(
        "--fault-every", type=float, default=8, help="fleet leg: seconds between faults (default 8)"
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the mix (default: random, printed)")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.randrange(1 << 31)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    statuses = []
    if "pair" in args.legs:
        statuses.append(await pair_leg(args, HERE / "results" / f"soak-{stamp}"))
    if "fleet" in args.legs:
        from benchmarks.soak_fleet import run_leg

        statuses.append(await run_leg(args, HERE / "results" / f"soak-fleet-{stamp}"))
    return max(statuses)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
