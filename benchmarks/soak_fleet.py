"""The soak's fleet leg: nginx in front of three workers on one Redis, with workers killed and Redis stopped and paused.

    python benchmarks/soak.py --fleet [--seconds 90] [--clients 16] [--fault-every 8] [--seed N]

The deployment docs/deploy.md describes, every part a real process started
here on loopback: redis-server (AOF with fsync always, as docs/deploy.md
asks), three `mcp-resolve run benchmarks/soak_server.py --http` workers with
every store on it (MCP_RESOLVE_REDIS_URL) and shared MCP_RESOLVE_STATE_KEYS,
and nginx serving docs/deploy/nginx.conf with its addresses swapped for
ours. Every client goes through nginx, so the rounds of a flow land on any worker.

The flows are the two-worker leg's, with what a client of a fleet does on
top: a round that fails for a passing reason (nginx's 502 for a killed
worker, "... unavailable: ... try again shortly" while Redis is away, a reset,
a timeout) is sent again, the same round, with a backoff, for up to
RETRY_BUDGET seconds. What each retried round got is counted: its receipt,
the next question, or a refusal as a replay (its claim was taken but the
answer lost, so the refund cannot be had by retrying).

Faults, one every `--fault-every` seconds, in turn: a worker (never worker
0, whose RSS then spans the run) SIGKILLed with requests in flight and
started again on its port; Redis stopped (SIGTERM) and started again on its
port; Redis paused (SIGSTOP, then SIGCONT); Redis stalled inside a command
(`DEBUG SLEEP`).

The verdict is the ledger's, as in the two-worker leg, with one allowance
that killing workers mid-request forces: a refund in the ledger whose client
got no answer (its worker died, or the answer was cut, after the refund ran)
is an "answer lost", reported but not LOST. LOST is a receipt the ledger
lacks, or a ledger row for a flow whose client was answered otherwise;
DOUBLED a flow with more than one row. Either makes the exit status 1.
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx

from benchmarks.soak import (
    FROZEN,
    HERE,
    KIND_NAMES,
    NO_ANSWER_TWICE,
    REQUEST_TIMEOUT,
    Fleet,
    Flow,
    FlowError,
    Soak,
    Worker,
    _mb,
    free_port,
    ledger_rows,
    passing_failure,
    rss_mb,
)

ROOT = HERE.parent
NGINX_CONF = ROOT / "docs" / "deploy" / "nginx.conf"
WORKERS = 3  # the upstreams docs/deploy/nginx.conf names
RETRY_BUDGET = 20.0
"""How long a client keeps re-sending one round: longer than any fault here, plus nginx's fail_timeout."""
FAULTS = ("worker SIGKILL", "Redis stop", "Redis pause (SIGSTOP)", "Redis stall (DEBUG SLEEP)")
EXPECTED_LOG_LINES = (
    "--- starting worker",
    "MCP endpoint: ",
    "WARNING mcp_resolve.server.Refund Desk: rejected replayed",
)
"""Log lines not shown: each start, and the replayer's refused replays."""


def _binary(name: str) -> str:
    found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if found is None:
        raise SystemExit(
            f"the fleet leg needs {name}: `make soak` installs it (Debian's redis-server and nginx-light), "
            "or run the two-worker leg alone with --legs pair"
        )
    return found


# -- the parts ---------------------------------------------------------------------------------
class Redis:
    """redis-server on a loopback port, files in a directory of its own: stopped, paused and restarted in place."""

    def __init__(self, directory: Path) -> None:
        self.binary = _binary("redis-server")
        self.port = free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None
        self.pids: list[int] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            self.binary,
            *("--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)),
            *("--save", "", "--appendonly", "yes", "--appendfsync", "always"),
            *("--maxmemory-policy", "noeviction", "--enable-debug-command", "local"),
            *("--logfile", str(self.directory / "redis.log")),
        ]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.pids.append(self.process.pid)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited; see {self.directory / 'redis.log'}")
            try:
                if self.command("PING", timeout=0.5).startswith(b"+PONG"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING")

    def command(self, *words: str, timeout: float = 10.0) -> bytes:
        """One command in RESP; the first line of the reply."""
        request = f"*{len(words)}\r\n" + "".join(f"${len(w.encode())}\r\n{w}\r\n" for w in words)
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as conn:
            conn.sendall(request.encode())
            return conn.recv(4096).split(b"\r\n", 1)[0]

    def stall(self, seconds: float) -> None:
        """Busy inside one command for `seconds`: every other client waits, as behind a slow disk or a fork."""
        self.command("DEBUG", "SLEEP", f"{seconds:.1f}", timeout=seconds + 10)

    def signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(number)

    def stop(self) -> None:
        if self.process is None:
            return
        self.signal(signal.SIGCONT)  # a paused server cannot stop
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


@dataclass(eq=False)
class Front(Worker):
    """nginx as the clients see it: one address in front of every worker, which worker answers unknown."""

    @property
    def pid(self) -> int:
        return 0


class Nginx:
    """nginx serving docs/deploy/nginx.conf as it is, but for the worker addresses and its listen port."""

    def __init__(self, ports: list[int], directory: Path) -> None:
        binary = _binary("nginx")
        self.port = free_port()
        self.prefix = directory / "nginx"
        self.prefix.mkdir()
        site = NGINX_CONF.read_text()
        for index, port in enumerate(ports, start=1):
            site = site.replace(f"worker{index}:8000", f"127.0.0.1:{port}")
        site, listens = re.subn(r"listen 8080;", f"listen 127.0.0.1:{self.port};", site)
        if listens != 1 or re.search(r"worker\d+:8000", site):
            raise RuntimeError(f"{NGINX_CONF} no longer has the upstreams and listen line this leg swaps")
        (self.prefix / "site.conf").write_text(site)
        (self.prefix / "nginx.conf").write_text(
            f"""daemon off;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {self.prefix}/body;
    proxy_temp_path {self.prefix}/proxy;
    fastcgi_temp_path {self.prefix}/fastcgi;
    uwsgi_temp_path {self.prefix}/uwsgi;
    scgi_temp_path {self.prefix}/scgi;
    include {self.prefix}/site.conf;
}}
"""
        )
        self.process = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.prefix / "stderr.log").open("wb"),
        )

    async def wait(self) -> None:
        async with httpx.AsyncClient(timeout=2) as http:
            with anyio.fail_after(30):
                while True:
                    if self.process.poll() is not None:
                        raise RuntimeError(f"nginx exited; see {self.prefix}")
                    try:
                        if (await http.get(f"http://127.0.0.1:{self.port}/health")).status_code == 200:
                            return
                    except httpx.HTTPError:
                        pass
                    await anyio.sleep(0.05)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class NginxFleet(Fleet):
    """Three workers of `mcp-resolve run soak_server.py --http`, every store on Redis, every request via nginx."""

    def __init__(self, directory: Path, rng: random.Random, redis: Redis) -> None:
        super().__init__(WORKERS, directory, rng)
        del self.env["SOAK_REPLAY_DB"]
        self.env["MCP_RESOLVE_REDIS_URL"] = redis.url
        self.front: Front | None = None

    def command(self, worker: Worker) -> list[str]:
        return [
            *(sys.executable, "-m", "mcp_resolve", "run", str(HERE / "soak_server.py")),
            *("--http", "--port", str(worker.port), "--log-level", "WARNING"),
        ]

    @asynccontextmanager
    async def serve(self, other_than: Worker | None = None) -> AsyncIterator[Worker]:
        """nginx, for every request: it picks the worker."""
        assert self.front is not None
        self.front.in_flight += 1
        try:
            yield self.front
        finally:
            self.front.in_flight -= 1


# -- the load and the faults ---------------------------------------------------------------------
class FleetSoak(Soak):
    """The two-worker leg's clients through nginx, retrying rounds that meet a fault, under rotating faults."""

    fleet: NginxFleet

    def __init__(self, args: argparse.Namespace, fleet: NginxFleet, rng: random.Random, redis: Redis) -> None:
        super().__init__(args, fleet, rng)
        self.redis = redis
        self.passing: Counter[str] = Counter()
        """Failures a retry went on from, by kind."""
        self.retried: Counter[str] = Counter()
        """What each round sent again got, once per round."""
        self.replays: Counter[str] = Counter()
        self.faults: list[dict[str, Any]] = []
        self.failed_as: dict[str, str] = {}
        self.first_refused = 0
        """Rounds refused as a replay the first time the client sent them."""
        self.log_sizes: dict[int, int] = {}
        """Each worker's log size when the load ended: what follows is its shutdown."""

    async def race(
        self, flow: Flow, http: httpx.AsyncClient, params: dict[str, Any]
    ) -> tuple[dict[str, Any], int]:
        """The two-worker race through nginx; when neither copy got an answer, the round is retried."""
        try:
            return await super().race(flow, http, params)
        except FlowError as exc:
            if exc.kind.startswith("round sent twice: 0 answered"):  # both refused, or one and no answer
                self.first_refused += 1
            if exc.kind != NO_ANSWER_TWICE:
                raise
        async with self.fleet.serve() as front:
            return await self.round(http, front, params, again=True), front.pid

    def fail(self, flow: Flow, kind: str, detail: str = "") -> None:
        self.failed_as.setdefault(flow.id, kind)
        super().fail(flow, kind, detail)

    async def round(
        self, http: httpx.AsyncClient, worker: Worker, params: dict[str, Any], *, again: bool = False
    ) -> dict[str, Any]:
        """One round, sent again while it meets a passing failure; what the retry got is counted."""
        give_up = time.monotonic() + RETRY_BUDGET
        delay, retried = 0.2, again
        while True:
            try:
                reply = await self.post(http, worker, params)
                failure = passing_failure(reply)
            except httpx.TimeoutException as exc:
                failure = f"timeout ({type(exc).__name__})"
            except httpx.TransportError as exc:
                failure = f"connection: {type(exc).__name__}"
            except FlowError as exc:
                if not exc.kind.startswith("HTTP 5"):
                    raise
                failure = exc.kind
            if failure is None:
                if retried:
                    self._count_retry(reply)
                elif reply.get("error") == FROZEN:
                    self.first_refused += 1
                    raise FlowError(
                        "refused as a replay on its first sending (its worker's own claim, given up on in a"
                        " stall, landed late?)",
                        str(reply)[:300],
                    )
                return reply
            self.passing[failure] += 1
            if time.monotonic() + delay > give_up:
                self.retried["gave up"] += 1
                raise FlowError(f"gave up after {RETRY_BUDGET:.0f} s of retries: {failure}")
            retried = True
            await anyio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _count_retry(self, reply: dict[str, Any]) -> None:
        result = reply.get("result") or {}
        if reply.get("error") == FROZEN:
            self.retried["refused as a replay (retries refused)"] += 1
            raise FlowError(
                "retry refused as a replay: the claim was taken, its answer lost", str(reply)[:300]
            )
        if "error" in reply:
            self.retried[f"JSON-RPC {reply['error'].get('code')}"] += 1
        elif result.get("resultType") == "input_required":
            self.retried["got the next question"] += 1
        elif result.get("isError"):
            self.retried["got a tool error"] += 1
        else:
            self.retried["got their receipt"] += 1

    async def replayer(self) -> None:
        """Completed final rounds sent again: refused, or answered with their own receipt; never refunded again."""
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT) as http:
            while time.monotonic() < self.deadline:
                await anyio.sleep(0.25)
                if not self.spent:
                    continue
                spent = self.rng.choice(self.spent)
                async with self.fleet.serve() as front:
                    try:
                        reply = await self.post(http, front, spent.params)
                    except (httpx.HTTPError, FlowError) as exc:
                        kind = exc.kind if isinstance(exc, FlowError) else type(exc).__name__
                        self.replays[f"met a fault: {kind}"] += 1
                        continue
                self.replays["sent"] += 1
                if reply.get("error") == FROZEN:
                    self.replays["refused"] += 1
                elif self.same_outcome(self.by_id[spent.flow_id], reply):
                    self.replays["answered with the original receipt"] += 1
                elif kind := passing_failure(reply):
                    self.replays[f"met a fault: {kind}"] += 1
                else:
                    key = "replay: not refused"
                    self.errors[key] += 1
                    self.examples.setdefault(key, f"{spent.flow_id}: {str(reply)[:300]}")

    async def chaos(self) -> None:
        kinds = itertools.cycle(FAULTS)
        victims = itertools.cycle(self.fleet.workers[1:])
        while time.monotonic() + self.args.fault_every < self.deadline:
            await anyio.sleep(self.args.fault_every)
            self.sample_rss()
            kind, began = next(kinds), self.now()
            if kind == "worker SIGKILL":
                victim = next(victims)
                pid = victim.pid
                await self.fleet.kill(victim, drain=False)
                await anyio.sleep(self.rng.uniform(0.5, 2.0))
                await self.fleet.start(victim)
                detail = f"worker {victim.slot}: pid {pid} killed, pid {victim.pid} serving again"
            elif kind == "Redis stop":
                await anyio.to_thread.run_sync(self.redis.stop)
                down = self.rng.uniform(1.0, 3.0)
                await anyio.sleep(down)
                await anyio.to_thread.run_sync(self.redis.start)
                detail = f"down {down:.1f} s, then started on its port (claims from its append-only file)"
            elif kind == "Redis pause (SIGSTOP)":
                pause = self.rng.uniform(2.0, 5.0)
                self.redis.signal(signal.SIGSTOP)
                try:
                    await anyio.sleep(pause)
                finally:
                    self.redis.signal(signal.SIGCONT)
                detail = f"stopped {pause:.1f} s"
            else:
                stall = self.rng.uniform(2.0, 5.0)
                await anyio.to_thread.run_sync(self.redis.stall, stall)
                detail = f"DEBUG SLEEP {stall:.1f}"
            self.faults.append({"at": began, "kind": kind, "detail": detail, "lasted": self.now() - began})

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(self.args.clients):
                group.start_soon(self.client)
            group.start_soon(self.chaos)
            group.start_soon(self.replayer)
        for worker in self.fleet.workers:
            worker.rss_end, worker.peak_end = rss_mb(worker.pid), rss_mb(worker.pid, "VmHWM")
            self.log_sizes[worker.slot] = worker.log.stat().st_size


# -- the verdict -----------------------------------------------------------------------------
def report(soak: FleetSoak, ledger: Counter[str], directory: Path) -> int:
    flows = soak.flows
    outcomes = Counter(flow.outcome for flow in flows)
    kinds = Counter(flow.kind for flow in flows)
    seen_not_recorded = [f for f in flows if f.outcome == "refunded" and not ledger[f.id]]
    recorded_not_seen = [f for f in flows if f.outcome != "refunded" and ledger[f.id]]
    answer_lost = [f for f in recorded_not_seen if f.outcome == "failed" and f.unanswered]
    told_otherwise = [f for f in recorded_not_seen if f not in answer_lost]
    doubled = [flow_id for flow_id, rows in ledger.items() if rows > 1]
    lost = len(seen_not_recorded) + len(told_otherwise)
    refused_then = Counter(
        "its round refused as a replay"
        if "refused as a replay" in soak.failed_as.get(f.id, "")
        else "no answer at all"
        for f in answer_lost
    )
    elapsed = soak.now()

    out: list[str] = []
    say = out.append
    say(
        f"\nFleet soak: {elapsed:.0f} s, {soak.args.clients} clients, nginx + {len(soak.fleet.workers)} workers"
        f" + Redis, a fault every {soak.args.fault_every:.0f} s, seed {soak.args.seed}"
    )
    say(f"flows        {len(flows):7d}  ({len(flows) / elapsed:.1f}/s)")
    for kind, name in KIND_NAMES.items():
        say(f"  {kinds[kind]:7d}  {name}")
    say(
        f"refunds      {outcomes['refunded']:7d}  (the client saw a receipt); ledger rows {sum(ledger.values())}"
    )
    say(f"declined     {outcomes['declined']:7d}  (the person declined the scope: no refund, as expected)")
    say(f"dropped      {outcomes['dropped']:7d}  (abandoned mid-question on purpose)")
    say(f"DOUBLED      {len(doubled):7d}" + (f"  {doubled[:10]}" if doubled else ""))
    say(
        f"LOST         {lost:7d}  (a receipt the ledger lacks: {len(seen_not_recorded)}; in the ledger, the"
        f" client answered otherwise: {len(told_otherwise)})"
    )
    for flow in (seen_not_recorded + told_otherwise)[:10]:
        say(f"           {flow.id} {flow.kind} {flow.outcome}, ledger rows {ledger[flow.id]}")
    say(f"answer lost  {len(answer_lost):7d}  (in the ledger, the client never told: {dict(refused_then)})")
    refusals = soak.retried["refused as a replay (retries refused)"] + soak.first_refused
    say(
        f"refused      {refusals:7d}  rounds refused as a replay though no answer to them ever came back"
        f" (a claim that landed after its worker gave up on it): retries refused"
        f" {soak.retried['refused as a replay (retries refused)']}, on the first sending {soak.first_refused}"
    )
    say(f"retried      {sum(soak.retried.values()):7d}  rounds sent again after a passing failure; they:")
    for name, count in soak.retried.most_common():
        say(f"  {count:7d}  {name}")
    say(f"  passing failures retried past, by kind: {dict(soak.passing.most_common())}")
    say(f"errors       {sum(soak.errors.values()):7d}  ({outcomes['failed']} flows failed), by kind:")
    for kind, count in soak.errors.most_common():
        say(f"  {count:7d}  {kind}")
        if kind in soak.examples:
            say(f"           e.g. {soak.examples[kind]}")
    say(
        f"replays      {soak.replays['sent']:7d}  final rounds sent again: {dict(soak.replays.most_common())}"
    )
    for name, count in sorted(soak.stats.items()):
        say(f"  {count:7d}  {name}")
    say(f"faults       {len(soak.faults):7d}")
    for fault in soak.faults:
        say(
            f"           at {fault['at']:5.0f} s  {fault['kind']}: {fault['detail']} ({fault['lasted']:.1f} s)"
        )
    say("RSS MB (VmRSS after start-up, at each fault, at the end; peak is the last process's VmHWM)")
    for worker in soak.fleet.workers:
        samples = " ".join(f"{_mb(rss)}@{at:.0f}s" for at, rss in worker.rss_samples)
        since = f" (its process since {worker.started_at:.0f} s)" if worker.started_at else ""
        say(
            f"  worker {worker.slot}: start {_mb(worker.rss_start)}, end {_mb(worker.rss_end)}{since},"
            f" peak {_mb(worker.peak_end)}; sampled {samples or '-'}; pids {','.join(map(str, worker.pids))}"
        )
    during, after = [], []
    for worker in soak.fleet.workers:
        text = worker.log.read_bytes()
        during += text[: soak.log_sizes.get(worker.slot, len(text))].decode(errors="replace").splitlines()
        after += text[soak.log_sizes.get(worker.slot, len(text)) :].decode(errors="replace").splitlines()
    lines = [re.sub(r"^[\d-]+ [\d:,]+ ", "", line) for line in during]  # the time stamps
    lines = [line for line in lines if not line.startswith(EXPECTED_LOG_LINES)]
    say(
        f"server logs: {sum('Traceback' in line for line in lines)} tracebacks during the load,"
        f" {sum('Traceback' in line for line in after)} while stopping (SIGTERM); {len(lines)} lines"
        f" besides start-up and refused replays ({directory})"
    )
    for line, count in Counter(lines).most_common(6):
        say(f"  {count:7d}  {line[:160]}")
    print("\n".join(out), flush=True)
    return 1 if lost or doubled else 0


async def run_leg(args: argparse.Namespace, directory: Path) -> int:
    """Start Redis, the workers and nginx; the load and the faults; stop everything; the verdict."""
    from benchmarks.soak_server import create_ledger

    rng = random.Random(args.seed)
    directory.mkdir(parents=True)
    create_ledger(str(directory / "ledger.sqlite3"))
    (directory / "redis").mkdir()
    redis = Redis(directory / "redis")
    redis.start()
    fleet = NginxFleet(directory, rng, redis)
    nginx: Nginx | None = None
    try:
        for worker in fleet.workers:
            await fleet.start(worker)
        nginx = Nginx([worker.port for worker in fleet.workers], directory)
        await nginx.wait()
        fleet.front = Front(-1, nginx.port, nginx.prefix / "error.log")
        print(
            f"fleet: nginx at {fleet.front.url} in front of {', '.join(w.url for w in fleet.workers)},"
            f" Redis at {redis.url}; {args.seconds:.0f} s of load, {args.clients} clients",
            flush=True,
        )
        soak = FleetSoak(args, fleet, rng, redis)
        await soak.run()
    finally:
        if nginx is not None:
            nginx.close()
        await fleet.stop()
        redis.stop()
    return report(soak, ledger_rows(directory / "ledger.sqlite3"), directory)
