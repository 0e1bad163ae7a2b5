"""The production legs of `make bench` (`make bench-production`): what a deployment adds, measured beside the peers.

`run.py` measures the frameworks bare. These legs measure them as they run
in production: a JWT on every request, single-use claims and sessions in
Redis, tracing on, and each event loop and resolver style a user may launch
with. Each leg starts every server it compares under uvicorn (httptools) on
loopback, drives each with the official `mcp` Client, and lets them take
turns block by block (as `run.py` does), so each ratio is taken within the
run: per block pair that ran back to back, with its 95 % interval
(`report.median_interval`). The primary figure is the server's CPU per call;
calls/s, p50/p99 latency and peak RSS come with it. On HTTP 2026-07-28 the
bare ASGI app (`servers/floor.py`) runs beside them on the same loop, and W1
is also given as a multiple of it.

    python benchmarks/production.py                    # every leg, about ten minutes
    python benchmarks/production.py --legs jwt redis   # some legs
    python benchmarks/production.py --quick            # a few calls of everything: proves it runs

Results go to `benchmarks/results/production-<time>.json` (git-ignored). See
README.md, "Production legs".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from benchmarks import harness, report
from benchmarks.workloads import WORKLOADS

RESULTS = Path(__file__).resolve().parent / "results"
STATE_KEYS = "bench-production-state-key-0123456789abcdefghij"


@dataclass(frozen=True)
class Entry:
    """One server in a leg: a bench server module, the settings it runs with, and how it is driven."""

    label: str
    module: str
    env: tuple[tuple[str, str], ...] = ()
    mode: str = "auto"  # the official client's mode: "auto" (2026-07-28) or "legacy" (the handshake era)
    jwt: bool = False  # every request carries a bearer JWT
    workloads: tuple[str, ...] | None = None  # None: every workload of the leg
    reference: str | None = None  # the label its ratio is taken against, when not the leg's


@dataclass(frozen=True)
class Leg:
    name: str
    title: str
    workloads: tuple[str, ...]
    entries: tuple[Entry, ...]
    reference: str  # the label every ratio is taken against
    floor: str | None = None  # the label of the bare app on the same loop, for W1's "x floor"
    redis: bool = False
    jwks: bool = False


def _loop(loop: str) -> tuple[tuple[str, str], ...]:
    return (("BENCH_LOOP", loop),)


def _loop_leg(loop: str) -> Leg:
    env = _loop(loop)
    return Leg(
        f"loop-{loop}",
        f"{loop} loop: both resolver styles, HTTP 2026-07-28",
        ("W1", "W4"),
        (
            Entry("official", "official", env),
            Entry("ours async def", "ours", env),
            Entry("ours def", "ours_sync", env),
            Entry("floor", "floor", env, workloads=("W1",)),
        ),
        reference="official",
        floor="floor",
    )


JWT = (("BENCH_JWT", "1"),)
LEGS = {
    "loop-asyncio": _loop_leg("asyncio"),
    "loop-uvloop": _loop_leg("uvloop"),
    "jwt": Leg(
        "jwt",
        "a JWT (RS256, JWKS cached) on every request, HTTP 2026-07-28, uvloop",
        ("W1", "W4"),
        (
            Entry("official + JWT", "official", jwt=True),
            Entry("ours + JWT", "ours", jwt=True),
            Entry("ours, no auth", "ours"),
            Entry("floor", "floor", workloads=("W1",)),
        ),
        reference="official + JWT",
        floor="floor",
        jwks=True,
    ),
    "redis": Leg(
        "redis",
        "W4 with every store in Redis (single-use claims; handshake-era sessions and events), uvloop",
        ("W4",),
        (
            Entry("official", "official"),
            Entry("ours, memory", "ours"),
            Entry("ours, Redis", "ours", (("BENCH_REDIS", "1"),)),
            Entry("official handshake", "official", mode="legacy"),
            Entry("ours handshake, memory", "ours", mode="legacy", reference="official handshake"),
            Entry(
                "ours handshake, Redis",
                "ours",
                (("BENCH_REDIS", "1"),),
                mode="legacy",
                reference="official handshake",
            ),
        ),
        reference="official",
        redis=True,
    ),
    "tracing": Leg(
        "tracing",
        "W1 with tracing on (instrument()), HTTP 2026-07-28, uvloop",
        ("W1",),
        (
            Entry("official", "official"),
            Entry("ours", "ours"),
            Entry("ours traced, no SDK", "ours", (("BENCH_TRACING", "api"),)),
            Entry("ours traced, SDK", "ours", (("BENCH_TRACING", "sdk"),)),
            Entry("floor", "floor"),
        ),
        reference="official",
        floor="floor",
    ),
}


@dataclass(frozen=True)
class Sizes:
    calls: dict[str, int]
    warmup: int
    reps: int
    blocks: int
    streams: int = 5000  # the idle-streams leg: streams of each kind held open at once
    idle_seconds: float = 15.0  # how long the server's CPU is read while they idle: one keep-alive period
    fleet_seconds: int = 5  # the fleet leg: one block of wrk load (after a 1 s warm-up of its own)
    fleet_reps: int = 3  # the fleet leg: rounds of blocks, every fleet size in each round


FULL = Sizes({"W1": 600, "W4": 60}, warmup=30, reps=2, blocks=4)
QUICK = Sizes(
    {"W1": 10, "W4": 3},
    warmup=2,
    reps=1,
    blocks=2,
    streams=40,
    idle_seconds=1.0,
    fleet_seconds=1,
    fleet_reps=1,
)
IDLE_LEG = "idle-streams"
FLEET_LEG = "fleet"
FLEET_SIZES = (1, 2, 3)
FLEET_CLIENTS = (16, 64)
FLEET_SCRIPT = Path(__file__).resolve().parent / "fleet_w1.lua"
FLEET_WRK_THREADS = 1  # one event-loop thread drives 64 connections: the load stays a small part of a call


# -- what the legs stand on: an issuer's JWKS, a Redis, the servers ---------------------------------
class Issuer:
    """An RS256 key, its JWKS served over loopback HTTP (stdlib, in a thread), and the tokens it signs."""

    def __init__(self) -> None:
        from joserfc.jwk import RSAKey

        self.key = RSAKey.generate_key(2048, parameters={"kid": "bench-1"})
        public = json.dumps({"keys": [self.key.as_dict(private=False)]}).encode()
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(public)))
                self.end_headers()
                self.wfile.write(public)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def token(self, resource: str) -> str:
        from joserfc import jwt

        now = int(time.time())
        claims = {"iss": self.base, "aud": resource, "sub": "bench", "client_id": "bench", "scope": "mcp"}
        return jwt.encode(
            {"alg": "RS256", "kid": "bench-1"}, {**claims, "iat": now, "exp": now + 3600}, self.key
        )

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    with _redis_process() as (_, url):
        yield url


@contextlib.contextmanager
def _redis_process() -> Iterator[tuple[int, str]]:
    """A throwaway redis-server on a free loopback port: its pid and URL."""
    directory = tempfile.mkdtemp(prefix="bench-redis-")
    port = harness.free_port()
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            directory,
            "--maxmemory-policy",
            "noeviction",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process)
        yield process.pid, f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


def _wait_listening(port: int, process: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"process on port {port} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on {port}") from None
            time.sleep(0.05)


@contextlib.contextmanager
def serve(entry: Entry, log: Any, issuer: Issuer | None, redis_url: str | None) -> Iterator[tuple[int, str]]:
    port = harness.free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "MCP_RESOLVE_STATE_KEYS": STATE_KEYS, **dict(entry.env)}
    env.pop("BENCH_JWT", None)
    if entry.jwt and issuer is not None:
        env.update(BENCH_JWKS=f"{issuer.base}/jwks", BENCH_ISSUER=issuer.base, BENCH_RESOURCE=url)
    if env.get("BENCH_REDIS") and redis_url:
        env["BENCH_REDIS"] = redis_url
    process = subprocess.Popen(
        [sys.executable, "-m", f"benchmarks.servers.{entry.module}", "http", str(port)],
        cwd=harness.ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    try:
        _wait_listening(port, process)
        yield process.pid, url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- measuring ----------------------------------------------------------------------------------
@dataclass
class Figures:
    calls: int = 0
    cpu: float = 0.0
    wall: float = 0.0
    latencies: list[float] = field(default_factory=list)
    block_cpu_ms: list[float] = field(default_factory=list)


async def measure_leg(leg: Leg, sizes: Sizes, log: Any) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with contextlib.ExitStack() as stack:
        issuer = Issuer() if leg.jwks else None
        if issuer is not None:
            stack.callback(issuer.close)
        redis_url = stack.enter_context(redis_server()) if leg.redis else None
        servers = {e.label: stack.enter_context(serve(e, log, issuer, redis_url)) for e in leg.entries}
        results: dict[str, Any] = {}
        async with contextlib.AsyncExitStack() as clients_stack:
            clients: dict[str, Any] = {}
            for entry in leg.entries:
                pid, url = servers[entry.label]
                http = None
                if entry.jwt and issuer is not None:
                    import httpx2

                    headers = {"Authorization": f"Bearer {issuer.token(url)}"}
                    http = await clients_stack.enter_async_context(
                        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
                    )
                transport = streamable_http_client(url, http_client=http)
                clients[entry.label] = await clients_stack.enter_async_context(
                    Client(transport, mode=entry.mode, elicitation_callback=harness.Answerer())  # type: ignore[arg-type]
                )
            for key in leg.workloads:
                workload = WORKLOADS[key]
                here = [e for e in leg.entries if e.workloads is None or key in e.workloads]
                figures = {e.label: Figures() for e in here}
                for entry in here:
                    for _ in range(sizes.warmup):
                        await workload.call(clients[entry.label])
                per_block = max(1, sizes.calls[key] // sizes.blocks)
                for _ in range(sizes.reps * sizes.blocks):
                    for entry in here:
                        pid = servers[entry.label][0]
                        cpu0, wall0 = harness.process_cpu(pid), time.perf_counter()
                        latencies = await harness.timed_calls(
                            [clients[entry.label]], workload.call, per_block
                        )
                        wall = time.perf_counter() - wall0
                        cpu = harness.process_cpu(pid) - cpu0
                        f = figures[entry.label]
                        f.calls += per_block
                        f.cpu += cpu
                        f.wall += wall
                        f.latencies += latencies
                        f.block_cpu_ms.append(cpu / per_block * 1000)
                references = {e.label: e.reference or leg.reference for e in here}
                results[key] = _summarise(leg, figures, servers, references)
        fetches = None if issuer is None else issuer.fetches  # each verifier fetched the JWKS once, or more
        return {"title": leg.title, "workloads": results, "jwks_fetches": fetches}


# -- the idle-streams leg ---------------------------------------------------------------------------
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def _raw_request(port: int, method: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items())]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _open_stream(port: int, request: bytes, until: bytes) -> Any:
    """A raw connection that sent `request` and read its 200 up to `until`; kept open (it idles)."""
    import asyncio

    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    data = b""
    while until not in data:
        chunk = await asyncio.wait_for(reader.read(65536), 30)
        if not chunk:
            raise RuntimeError(f"stream closed: {data[:200]!r}")
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"stream refused: {data[:200]!r}")
    return writer


async def _listen_request(port: int, index: int) -> tuple[bytes, bytes]:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": index,
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META},
        }
    ).encode()
    headers = {
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "subscriptions/listen",
        "Accept": "application/json, text/event-stream",
    }
    return _raw_request(port, "POST", headers, body), b"notifications/subscriptions/acknowledged"


async def _get_request(port: int, http: Any) -> tuple[bytes, bytes]:
    """A handshake-era session (initialize, initialized) and the GET that opens its stream."""
    url = f"http://127.0.0.1:{port}/mcp"
    accept = {"Accept": "application/json, text/event-stream"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    answer = await http.post(url, json=init, headers=accept)
    session = answer.headers["mcp-session-id"]
    headers = {**accept, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    get = {"Accept": "text/event-stream", "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    return _raw_request(port, "GET", get), b"\r\n\r\n"


async def measure_idle_streams(sizes: Sizes, log: Any) -> dict[str, Any]:
    """`sizes.streams` idle listen streams, then as many handshake-era GET streams, on one worker of ours.

    For each kind: the RSS each stream adds, the server's CPU per second while
    they idle (what per-stream timers would show), and W1's latency with them open
    against the same worker's before they were opened.
    """
    import asyncio

    import httpx
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    entry = Entry("ours", "ours", (("BENCH_STREAMS", str(sizes.streams + 50)),))
    calls = max(20, sizes.calls["W1"] // 3)
    results: dict[str, Any] = {"streams": sizes.streams, "idle_seconds": sizes.idle_seconds}
    with serve(entry, log, None, None) as (pid, url):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        async with Client(streamable_http_client(url), mode="auto") as client:
            for _ in range(sizes.warmup):
                await WORKLOADS["W1"].call(client)
            base = sorted(await harness.timed_calls([client], WORKLOADS["W1"].call, calls))
            results["baseline"] = {"p50_ms": base[len(base) // 2] * 1000, "p99_ms": _p99(base) * 1000}
            for kind in ("listen", "GET"):
                await asyncio.sleep(1)
                before = harness.process_memory(pid)[0]
                writers: list[Any] = []
                async with httpx.AsyncClient(timeout=30) as http:
                    for index in range(sizes.streams):
                        if kind == "listen":
                            request, until = await _listen_request(port, index)
                        else:
                            request, until = await _get_request(port, http)
                        writers.append(await _open_stream(port, request, until))
                await asyncio.sleep(2)
                after = harness.process_memory(pid)[0]
                cpu0 = harness.process_cpu(pid)
                await asyncio.sleep(sizes.idle_seconds)
                idle_cpu = harness.process_cpu(pid) - cpu0
                open_calls = sorted(await harness.timed_calls([client], WORKLOADS["W1"].call, calls))
                results[kind] = {
                    "rss_kib_per_stream": (after - before) * 1024 / sizes.streams,
                    "rss_before_mib": before,
                    "rss_after_mib": after,
                    "idle_cpu_ms_per_s": idle_cpu / sizes.idle_seconds * 1000,
                    "p50_ms": open_calls[len(open_calls) // 2] * 1000,
                    "p99_ms": _p99(open_calls) * 1000,
                }
                for writer in writers:
                    writer.close()
                await asyncio.sleep(1)
    return {
        "title": f"{sizes.streams} idle streams of each kind on one worker of ours (uvloop)",
        "idle": results,
    }


# -- the fleet leg ---------------------------------------------------------------------------------
@contextlib.contextmanager
def _nginx(ports: list[int]) -> Iterator[tuple[int, str]]:
    """nginx with the tested docs/deploy/nginx.conf in front of `ports`, set up as tests/fleet_helpers.py
    does (one nginx worker process, nginx's default): the master's pid and the URL."""
    sys.path.insert(0, str(harness.ROOT / "tests"))
    from fleet_helpers import Nginx

    nginx = Nginx(ports)
    try:
        yield nginx.process.pid, nginx.url
    finally:
        nginx.close()


def _with_children(pid: int) -> list[int]:
    """`pid` and its child processes (nginx's master and its workers)."""
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [pid, *(int(child) for child in handle.read().split())]


def _cpu(pids: list[int]) -> float:
    return sum(harness.process_cpu(pid) for pid in pids)


def _wrk(url: str, clients: int, seconds: int) -> tuple[dict[str, Any], float]:
    """`seconds` of W1 from `clients` connections through wrk and fleet_w1.lua: wrk's JSON summary and
    wrk's own CPU seconds. Raises when any call failed: a benchmark of errors measures nothing."""
    binary = shutil.which("wrk")
    if binary is None:
        raise RuntimeError("wrk is not installed: `make bench-production` installs it (apt-get install wrk)")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [
            binary,
            f"-t{FLEET_WRK_THREADS}",
            f"-c{clients}",
            f"-d{seconds}s",
            "--timeout",
            "10s",
            "-s",
            str(FLEET_SCRIPT),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    summary: dict[str, Any] = json.loads(lines[-1])
    errors = sum(summary["errors"].values())
    if summary["failures"] or errors or not summary["requests"]:
        raise RuntimeError(
            f"fleet: {summary['failures']} of {summary['requests']} calls were not a successful echo, "
            f"socket errors {summary['errors']}; first: {summary['sample']!r}"
        )
    return summary, cpu


@dataclass
class FleetCell:
    """One fleet size at one client count, over every round."""

    calls: int = 0
    seconds: float = 0.0
    worker_cpu: float = 0.0
    nginx_cpu: float = 0.0
    wrk_cpu: float = 0.0
    redis_cpu: float = 0.0
    rates: list[float] = field(default_factory=list)  # calls/s per round
    p50_us: list[int] = field(default_factory=list)
    p99_us: list[int] = field(default_factory=list)


def measure_fleet(sizes: Sizes, log: Any) -> dict[str, Any]:
    """W1 through nginx to 1, 2 and 3 workers of ours sharing Redis, from 16 and 64 connections of wrk.

    Three workers and three nginx (in front of the first one, two and three of them) run
    together; in each round every size takes its block in turn, at each client count, each block
    after a 1 s warm-up of its own. The throughput against one worker's is the median over rounds
    of the ratio within the round. The CPU of the workers, nginx, wrk and Redis is read around
    each block: where a call's CPU goes, which bounds what more workers can give on these cores.
    """
    load_before = os.getloadavg()
    cells = {(size, clients): FleetCell() for clients in FLEET_CLIENTS for size in FLEET_SIZES}
    with _redis_process() as (redis_pid, redis_url), contextlib.ExitStack() as stack:
        entry = Entry("ours", "ours", (("BENCH_REDIS", redis_url),))  # uvicorn, httptools, uvloop
        workers = [stack.enter_context(serve(entry, log, None, None)) for _ in range(max(FLEET_SIZES))]
        ports = [int(url.rsplit(":", 1)[1].split("/")[0]) for _, url in workers]
        fronts = {size: stack.enter_context(_nginx(ports[:size])) for size in FLEET_SIZES}
        for _ in range(sizes.fleet_reps):
            for clients in FLEET_CLIENTS:
                for size in FLEET_SIZES:
                    nginx_pid, url = fronts[size]
                    _wrk(url, clients, 1)
                    nginx_pids = _with_children(nginx_pid)
                    worker_pids = [pid for pid, _ in workers[:size]]
                    workers0, nginx0, redis0 = _cpu(worker_pids), _cpu(nginx_pids), _cpu([redis_pid])
                    summary, wrk_cpu = _wrk(url, clients, sizes.fleet_seconds)
                    cell = cells[size, clients]
                    cell.worker_cpu += _cpu(worker_pids) - workers0
                    cell.nginx_cpu += _cpu(nginx_pids) - nginx0
                    cell.redis_cpu += _cpu([redis_pid]) - redis0
                    cell.wrk_cpu += wrk_cpu
                    cell.calls += summary["requests"]
                    cell.seconds += summary["duration_us"] / 1e6
                    cell.rates.append(summary["requests"] / (summary["duration_us"] / 1e6))
                    cell.p50_us.append(summary["latency_us"]["p50"])
                    cell.p99_us.append(summary["latency_us"]["p99"])
    rows: dict[str, Any] = {}
    for (size, clients), cell in cells.items():
        one = cells[1, clients]
        per_call = 1000 / cell.calls
        rows[f"{size} x{clients}"] = {
            "workers": size,
            "clients": clients,
            "calls": cell.calls,
            "calls_per_s": cell.calls / cell.seconds,
            "x_one_worker": _median(
                [mine / theirs for mine, theirs in zip(cell.rates, one.rates, strict=True)]
            ),
            "p50_ms": _median([float(v) for v in cell.p50_us]) / 1000,
            "p99_ms": _median([float(v) for v in cell.p99_us]) / 1000,
            "worker_cpu_ms_per_call": cell.worker_cpu * per_call,
            "nginx_cpu_ms_per_call": cell.nginx_cpu * per_call,
            "wrk_cpu_ms_per_call": cell.wrk_cpu * per_call,
            "redis_cpu_ms_per_call": cell.redis_cpu * per_call,
            "worker_busy": cell.worker_cpu / cell.seconds / size,  # of one core, per worker
        }
    cores = os.cpu_count() or 1
    for row in rows.values():
        one = rows[f"1 x{row['clients']}"]
        row["cpu_bound_x_one_worker"] = _cpu_bound(row, cores) / _cpu_bound(one, cores)
    return {
        "title": "W1 through nginx (docs/deploy/nginx.conf, one nginx worker process) to workers of ours "
        f"sharing Redis, driven by wrk ({FLEET_WRK_THREADS} thread)",
        "rounds": sizes.fleet_reps,
        "block_seconds": sizes.fleet_seconds,
        "cores": cores,
        "load_average": [load_before, os.getloadavg()],
        "fleet": rows,
    }


def _cpu_bound(row: dict[str, Any], cores: int) -> float:
    """The calls/s the CPU per call allows: each worker at most one core, all of it at most `cores`.

    On 2 cores one worker is bound by its own core, while two share both cores with nginx and
    wrk: with those costing X of a worker's CPU per call, two workers give at most 2/(1+X) of one.
    """
    worker = row["worker_cpu_ms_per_call"]
    total = worker + row["nginx_cpu_ms_per_call"] + row["wrk_cpu_ms_per_call"] + row["redis_cpu_ms_per_call"]
    return min(row["workers"] / worker, cores / total) * 1000


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def render_fleet(leg: dict[str, Any]) -> str:
    before, after = leg["load_average"]
    lines = [
        f"### {FLEET_LEG}: {leg['title']}",
        "",
        f"{leg['rounds']} rounds of {leg['block_seconds']} s blocks on {leg['cores']} cores; load average "
        f"{before[0]:.2f} before, {after[0]:.2f} after. CPU bound: the most x one worker that the CPU per "
        "call allows (each worker one core at most, everything together all the cores).",
        "",
        "workers | clients | calls/s | x one worker | CPU bound | p50 ms | p99 ms | CPU ms/call: workers "
        "| nginx | wrk | Redis | each worker busy",
        "--- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | ---",
    ]
    for row in leg["fleet"].values():
        lines.append(
            f"{row['workers']} | {row['clients']} | {row['calls_per_s']:.0f} | {row['x_one_worker']:.2f} | "
            f"{row['cpu_bound_x_one_worker']:.2f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
            f"{row['worker_cpu_ms_per_call']:.3f} | "
            f"{row['nginx_cpu_ms_per_call']:.3f} | {row['wrk_cpu_ms_per_call']:.3f} | "
            f"{row['redis_cpu_ms_per_call']:.3f} | {row['worker_busy']:.0%}"
        )
    return "\n".join([*lines, ""])


def _p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def render_idle(leg: dict[str, Any]) -> str:
    idle = leg["idle"]
    lines = [
        f"### {IDLE_LEG}: {leg['title']}",
        "",
        "streams | RSS KiB per stream | idle CPU ms/s | W1 p50 ms | W1 p99 ms",
        "--- | --- | --- | --- | ---",
        f"none | — | — | {idle['baseline']['p50_ms']:.2f} | {idle['baseline']['p99_ms']:.2f}",
    ]
    for kind in ("listen", "GET"):
        row = idle[kind]
        lines.append(
            f"{idle['streams']} {kind} | {row['rss_kib_per_stream']:.1f} | {row['idle_cpu_ms_per_s']:.2f} | "
            f"{row['p50_ms']:.2f} | {row['p99_ms']:.2f}"
        )
    return "\n".join([*lines, ""])


def _summarise(
    leg: Leg, figures: dict[str, Figures], servers: dict[str, tuple[int, str]], references: dict[str, str]
) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    floor = figures.get(leg.floor) if leg.floor else None
    for label, f in figures.items():
        reference = None if label == leg.reference else figures.get(references[label])
        latencies = sorted(f.latencies)
        row: dict[str, Any] = {
            "calls": f.calls,
            "cpu_ms_per_call": f.cpu / f.calls * 1000,
            "calls_per_s": f.calls / f.wall,
            "p50_ms": latencies[len(latencies) // 2] * 1000,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
            "peak_rss_mib": harness.process_memory(servers[label][0])[1],
        }
        for name, other in (("x_ref", reference), ("x_floor", floor)):
            if other is None or other is f:
                continue
            pairs = [
                mine / theirs
                for mine, theirs in zip(f.block_cpu_ms, other.block_cpu_ms, strict=True)
                if theirs > 0
            ]
            if pairs:
                row[name] = _median(pairs)
                row[name + "_interval"] = report.median_interval(pairs)
        if reference is not None and reference is not f:
            row["reference"] = references[label]
            row["rss_x_ref"] = row["peak_rss_mib"] / harness.process_memory(servers[references[label]][0])[1]
        rows[label] = row
    return rows


def _fmt(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def render(name: str, leg: dict[str, Any], reference: str, floor: str | None) -> str:
    lines = [f"### {name}: {leg['title']}", ""]
    for key, rows in leg["workloads"].items():
        lines += [
            f"{key} | CPU ms/call | x {reference} (95 % interval) | x floor | calls/s | p50 ms | p99 ms | peak RSS MiB | RSS x ref",
            "--- | --- | --- | --- | --- | --- | --- | --- | ---",
        ]
        for label, row in rows.items():
            interval = row.get("x_ref_interval")
            ratio = _fmt(row.get("x_ref"))
            if interval:
                ratio += f" ({interval[0]:.2f} to {interval[1]:.2f})"
            lines.append(
                f"{label} | {_fmt(row['cpu_ms_per_call'], 3)} | {ratio} | {_fmt(row.get('x_floor'))} | "
                f"{row['calls_per_s']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | "
                f"{row['peak_rss_mib']:.1f} | {_fmt(row.get('rss_x_ref'))}"
            )
        lines.append("")
    others = {
        row["reference"] for rows in leg["workloads"].values() for row in rows.values() if "reference" in row
    }
    if others - {reference}:
        lines += [f"handshake-era rows are against {', '.join(sorted(others - {reference}))}", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--legs",
        nargs="+",
        choices=[*sorted(LEGS), IDLE_LEG, FLEET_LEG],
        default=[*LEGS, IDLE_LEG, FLEET_LEG],
    )
    parser.add_argument(
        "--quick", action="store_true", help="a few calls per leg: proves it runs, figures mean nothing"
    )
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--streams", type=int, default=None, help="idle streams of each kind (default 5000)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.reps:
        sizes = replace(sizes, reps=args.reps)
    if args.streams:
        sizes = replace(sizes, streams=args.streams)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = args.out / f"production-{stamp}.json"
    results: dict[str, Any] = {
        "commit": harness.git_commit(),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "quick": args.quick,
        "legs": {},
    }
    with open(path.with_suffix(".log"), "w") as log:
        for name in args.legs:
            started = time.monotonic()
            if name == FLEET_LEG:
                results["legs"][name] = measure_fleet(sizes, log)
                print(render_fleet(results["legs"][name]), flush=True)
            elif name == IDLE_LEG:
                results["legs"][name] = anyio.run(measure_idle_streams, sizes, log)
                print(render_idle(results["legs"][name]), flush=True)
            else:
                leg = LEGS[name]
                results["legs"][name] = anyio.run(measure_leg, leg, sizes, log)
                print(render(name, results["legs"][name], leg.reference, leg.floor), flush=True)
            results["legs"][name]["seconds"] = time.monotonic() - started
    results["load_average_after"] = os.getloadavg()
    path.write_text(json.dumps(results, indent=2))
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
