"""The benchmark driver: `make bench` (about ten minutes) or `python benchmarks/run.py --quick`.

Every framework's server is driven by the same client (the official `mcp`
Client), so only the server differs; on HTTP 2026-07-28 a bare ASGI app
(`servers/floor.py`) answers W1 and W3n beside them, to show the floor they
share (W3 over HTTP is judged against its W3n). The primary figure is the
server's CPU time per call, read from the server process; each figure is the
median of the repetitions, and each ratio is taken within one run (the
frameworks take turns block by block, `measure_interleaved`). See README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from benchmarks import harness, openapi, report, startup
from benchmarks.harness import FRAMEWORKS, Framework
from benchmarks.workloads import WORKLOADS, Workload

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Scenario:
    """A transport, an era and the workloads measured on it."""

    transport: str  # memory | stdio | http
    mode: str  # the official client's mode: "auto" (2026-07-28 with every server here) or "legacy"
    workloads: tuple[str, ...]
    clients: int = 1
    processes: int = 1  # >1: the clients run in that many load-worker processes (benchmarks/load.py)

    @property
    def label(self) -> str:
        era = "2026-07-28" if self.mode == "auto" else "handshake"
        clients = f" x{self.clients}" if self.clients > 1 else ""
        return f"{self.transport}{clients} {era}"


SCENARIOS = (
    Scenario("memory", "auto", ("W1", "W2", "W3", "W3n", "W4")),
    Scenario("memory", "legacy", ("W1", "W4")),
    Scenario("stdio", "auto", ("W1", "W2", "W3", "W3n", "W4")),
    Scenario("stdio", "legacy", ("W1", "W4")),
    Scenario("http", "auto", ("W1", "W2", "W3", "W3n", "W4")),
    Scenario("http", "legacy", ("W1", "W4")),
    Scenario("http", "auto", ("W1", "W2"), clients=16, processes=2),
)


@dataclass(frozen=True)
class Sizes:
    """Calls per measured phase (per repetition), by transport and workload, and the phase's turns."""

    calls: dict[str, dict[str, int]]
    warmup: int
    reps: int
    import_reps: int
    many_tools: int
    blocks: int  # a phase's calls are made in this many turns per framework (see measure_interleaved)

    @classmethod
    def full(cls) -> Sizes:
        # Over HTTP our server spends a few tenths of a millisecond per W1 call; 2,000 calls make a
        # phase long enough (about a second of our CPU) to span the machine's moment-to-moment noise.
        fast = {"W1": 1000, "W2": 1000, "W3": 30, "W3n": 30, "W4": 100}
        http = {"W1": 2000, "W2": 2000, "W3": 30, "W3n": 30, "W4": 150}
        return cls({"memory": fast, "stdio": fast, "http": http}, 5, 3, 5, 1000, 5)

    @classmethod
    def quick(cls) -> Sizes:
        few = {"W1": 5, "W2": 5, "W3": 2, "W3n": 2, "W4": 2}
        return cls({"memory": few, "stdio": few, "http": few}, 1, 1, 1, 20, 2)

    def phase_calls(self, scenario: Scenario, workload: str) -> int:
        calls = self.calls[scenario.transport][workload]
        return max(calls, scenario.clients * 2) if scenario.clients > 1 else calls


@dataclass
class Session:
    """One framework's server and the clients connected to it for a scenario."""

    framework: Framework
    clients: list[Any]
    transports: list[harness.CountingTransport]
    answerer: harness.Answerer
    pid: int | None
    protocol_version: str = ""
    url: str | None = None  # set when the clients live in load-worker processes
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def sent(self, method: str) -> int:
        return sum(t.sent[method] for t in self.transports)


# -- per-call figures ------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def open_sessions(
    scenario: Scenario, frameworks: Sequence[Framework], http_servers: dict[str, tuple[int, str]], log: Any
) -> Any:
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for framework in frameworks:
            answerer = harness.Answerer()
            if scenario.processes > 1:
                server_pid, url = http_servers[framework.name]
                sessions.append(Session(framework, [], [], answerer, server_pid, url=url))
                continue
            transports: list[harness.CountingTransport] = []
            stdio = harness.StdioServer(framework, log) if scenario.transport == "stdio" else None
            for _ in range(scenario.clients):
                if scenario.transport == "memory":
                    inner = harness.memory_transport(framework, framework.load().mcp)
                elif stdio is not None:
                    inner = stdio.transport()
                else:
                    inner = harness.http_transport(http_servers[framework.name][1])
                transports.append(harness.CountingTransport(inner))
            clients = [
                await stack.enter_async_context(
                    Client(t, mode=scenario.mode, elicitation_callback=answerer)  # type: ignore[arg-type]
                )
                for t in transports
            ]
            pid: int | None
            if scenario.transport == "memory":
                pid = None
            elif stdio is not None:
                pid = stdio.pid()
            else:
                pid = http_servers[framework.name][0]
            sessions.append(
                Session(framework, clients, transports, answerer, pid, clients[0].protocol_version)
            )
        yield sessions


def applies(workload: Workload, scenario: Scenario, framework: Framework) -> bool:
    if not framework.serves(workload.key):
        return False
    return not (workload.asks and scenario.mode == "auto" and not framework.modern_questions)


def with_floor(scenario: Scenario, frameworks: Sequence[Framework]) -> list[Framework]:
    """The frameworks, and on HTTP 2026-07-28 (one client) the floor beside them (see servers/floor.py) and
    ours with tracing off and with an SDK configured (`harness.TRACING`)."""
    if scenario.transport == "http" and scenario.mode == "auto":
        return [*frameworks, harness.FLOOR, *(tracing_variants(frameworks) if scenario.clients == 1 else ())]
    return list(frameworks)


def tracing_variants(frameworks: Sequence[Framework]) -> tuple[Framework, ...]:
    return harness.TRACING if any(f.name == "ours" for f in frameworks) else ()


@dataclass
class PhaseTotals:
    """One framework's figures over a phase, added up block by block."""

    calls: int = 0
    cpu: float = 0.0
    wall: float = 0.0
    latencies: list[float] = field(default_factory=list)
    rounds: int = 0
    asked: int = 0
    block_cpu_ms: list[float] = field(default_factory=list)
    """Each block's server CPU per call, in the order the blocks ran (see report.py)."""

    def add(self, block: PhaseTotals) -> None:
        if block.calls:
            self.block_cpu_ms.append(block.cpu / block.calls * 1000)
        self.calls += block.calls
        self.cpu += block.cpu
        self.wall += block.wall
        self.latencies += block.latencies
        self.rounds += block.rounds
        self.asked += block.asked

    def summary(self, session: Session) -> dict[str, Any]:
        latencies = sorted(self.latencies)
        sample: dict[str, Any] = {
            "calls": self.calls,
            "cpu_ms_per_call": self.cpu / self.calls * 1000,
            "block_cpu_ms_per_call": self.block_cpu_ms,
            "calls_per_s": self.calls / self.wall,
            "p50_ms": latencies[len(latencies) // 2] * 1000,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
            "rounds": self.rounds / self.calls,
            "questions": self.asked / self.calls,
        }
        if session.pid is not None:
            sample["peak_rss_mb"] = harness.process_memory(session.pid)[1]
        return sample


class LoadWorkers:
    """A phase's clients in load-worker processes (`load.py`), kept for every block of the phase."""

    def __init__(self, session: Session, scenario: Scenario, workload: Workload, warmup: int) -> None:
        self.session, self.scenario, self.workload, self.warmup = session, scenario, workload, warmup
        self._pipes: list[tuple[Any, BufferedByteReceiveStream]] = []

    async def start(self, stack: contextlib.AsyncExitStack) -> None:
        assert self.session.url is not None
        clients = self.scenario.clients // self.scenario.processes
        command = [sys.executable, "-m", "benchmarks.load", self.session.url, self.scenario.mode]
        command += [self.workload.key, str(clients), str(self.warmup)]
        for _ in range(self.scenario.processes):
            process = await stack.enter_async_context(
                await anyio.open_process(command, cwd=harness.ROOT, stderr=None)
            )
            assert process.stdin is not None and process.stdout is not None
            stack.push_async_callback(process.stdin.aclose)  # end of input: the worker disconnects and exits
            self._pipes.append((process.stdin, BufferedByteReceiveStream(process.stdout)))
        for _stdin, out in self._pipes:
            ready = await out.receive_until(b"\n", 1 << 20)
            if ready != b"ready":
                raise RuntimeError(f"load worker did not start: {ready[:200]!r}")

    async def block(self, calls: int) -> PhaseTotals:
        """Run `calls` calls spread over the workers; time from the go signal to the last answer."""
        assert self.session.pid is not None
        share, extra = divmod(calls, len(self._pipes))
        cpu, wall = harness.process_cpu(self.session.pid), time.perf_counter()
        for index, (stdin, _out) in enumerate(self._pipes):
            await stdin.send(b"go %d\n" % (share + (index < extra)))
        reports = [json.loads(await out.receive_until(b"\n", 1 << 28)) for _stdin, out in self._pipes]
        wall, cpu = time.perf_counter() - wall, harness.process_cpu(self.session.pid) - cpu
        self.session.protocol_version = reports[0]["protocol_version"]
        return PhaseTotals(
            calls,
            cpu,
            wall,
            [latency for report in reports for latency in report["latencies"]],
            sum(r["rounds_sent"] for r in reports),
            sum(r["asked"] for r in reports),
        )


async def measure_block(session: Session, workload: Workload, calls: int) -> PhaseTotals:
    """`calls` calls from the session's clients in this process (spread over them when several)."""
    cpu, sent, asked = harness.process_cpu(session.pid), session.sent("tools/call"), session.answerer.asked
    wall = time.perf_counter()
    latencies = await harness.timed_calls(session.clients, workload.call, calls)
    wall = time.perf_counter() - wall
    cpu = harness.process_cpu(session.pid) - cpu
    rounds, asked = session.sent("tools/call") - sent, session.answerer.asked - asked
    return PhaseTotals(calls, cpu, wall, latencies, rounds, asked)


async def measure_interleaved(
    sessions: Sequence[Session], scenario: Scenario, workload: Workload, sizes: Sizes
) -> list[dict[str, Any]]:
    """One phase of `workload` for every session, the frameworks taking turns block by block.

    The machine's load drifts over seconds; a framework measured for a whole
    phase while a neighbour is busy, and its rival while it is not, would carry
    that into the ratio. In turns of a few hundred calls each, every framework
    meets the same drift.
    """
    calls = sizes.phase_calls(scenario, workload.key)
    totals = [PhaseTotals() for _ in sessions]
    async with contextlib.AsyncExitStack() as stack:
        workers: list[LoadWorkers | None] = []
        for session in sessions:
            if session.url is None:
                workers.append(None)
                continue
            started = LoadWorkers(session, scenario, workload, sizes.warmup)
            await started.start(stack)
            workers.append(started)
        blocks = min(sizes.blocks, calls)
        for index in range(blocks):
            block_calls = calls // blocks + (index < calls % blocks)
            for session, in_workers, total in zip(sessions, workers, totals, strict=True):
                if in_workers is not None:
                    total.add(await in_workers.block(block_calls))
                else:
                    total.add(await measure_block(session, workload, block_calls))
    return [total.summary(session) for session, total in zip(sessions, totals, strict=True)]


async def run_scenario(
    scenario: Scenario,
    frameworks: Sequence[Framework],
    sizes: Sizes,
    http_servers: dict[str, tuple[int, str]],
    log: Any,
) -> dict[str, Any]:
    async with open_sessions(scenario, with_floor(scenario, frameworks), http_servers, log) as sessions:
        workloads = [WORKLOADS[key] for key in scenario.workloads]
        for session in sessions:  # warm up every client, and check every answer once before timing anything
            for workload in workloads if session.clients else ():  # load workers warm up their own
                if applies(workload, scenario, session.framework):
                    for client in session.clients:
                        for _ in range(sizes.warmup if workload.key in ("W1", "W2") else 1):
                            await workload.call(client)
        for rep in range(sizes.reps):
            order = sessions[rep % len(sessions) :] + sessions[: rep % len(sessions)]
            for workload in workloads:
                taking_part = [s for s in order if applies(workload, scenario, s.framework)]
                samples = await measure_interleaved(taking_part, scenario, workload, sizes)
                for session, sample in zip(taking_part, samples, strict=True):
                    session.samples.setdefault(workload.key, []).append(sample)
        return {
            "scenario": scenario.label,
            "transport": scenario.transport,
            "mode": scenario.mode,
            "clients": scenario.clients,
            "protocol_versions": {s.framework.name: s.protocol_version for s in sessions},
            "samples": {s.framework.name: s.samples for s in sessions},
        }


async def run_all(
    args: argparse.Namespace, frameworks: Sequence[Framework], sizes: Sizes, log: Any
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    started = time.perf_counter()
    progress("import time")
    results["import_ms"] = startup.measure_imports(frameworks, sizes.import_reps)
    progress(f"registering {sizes.many_tools} tools")
    results["register_many"] = {
        "tools": sizes.many_tools,
        **startup.measure_registration(frameworks, sizes.reps, sizes.many_tools),
    }
    progress("OpenAPI description to tools")
    results["openapi"] = openapi.measure_conversion([f.name for f in frameworks], sizes.reps)
    progress("idle memory")
    results["idle_rss_mb"] = await startup.measure_idle_memory(frameworks, sizes.reps, log)
    transports = set(args.transports)
    if "http" in transports and not harness.has_our_http() and any(f.name == "ours" for f in frameworks):
        print("note: src/mcp_resolve/transports/http/ does not exist yet; skipping HTTP", file=sys.stderr)
        transports.discard("http")
    scenarios = [s for s in SCENARIOS if s.transport in transports]
    results["scenarios"] = []
    async with contextlib.AsyncExitStack() as stack:
        http_servers: dict[str, tuple[int, str]] = {}
        if any(s.transport == "http" for s in scenarios):
            for framework in [*frameworks, harness.FLOOR, *tracing_variants(frameworks)]:
                http_servers[framework.name] = stack.enter_context(harness.http_server(framework, log))
        for scenario in scenarios:
            progress(scenario.label)
            results["scenarios"].append(await run_scenario(scenario, frameworks, sizes, http_servers, log))
    results["seconds"] = time.perf_counter() - started
    return results


_STARTED = time.perf_counter()


def progress(stage: str) -> None:
    print(f"[{time.perf_counter() - _STARTED:6.1f}s] {stage}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a few calls per phase, one repetition (smoke run)"
    )
    parser.add_argument("--reps", type=int, help="repetitions (default 3; 1 with --quick)")
    parser.add_argument("--frameworks", nargs="+", choices=list(FRAMEWORKS), default=list(FRAMEWORKS))
    parser.add_argument(
        "--transports", nargs="+", choices=["memory", "stdio", "http"], default=["memory", "stdio", "http"]
    )
    parser.add_argument(
        "--http-stack",
        choices=["auto", "h11"],
        default="auto",
        help="uvicorn's choice for every HTTP server: auto (httptools on uvloop, as installed) or h11 on asyncio",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON result")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.pop(
        "PYTHONDONTWRITEBYTECODE", None
    )  # servers and import timings use bytecode caches, as deployed
    for name in ("httpx", "httpx2", "mcp.client"):  # the client's chatter costs every framework's runs alike
        logging.getLogger(name).setLevel(logging.WARNING)
    if args.http_stack == "h11":
        os.environ["BENCH_HTTP_STACK"] = "h11"  # read by every server process (servers/_common.py)
    sizes = Sizes.quick() if args.quick else Sizes.full()
    if args.reps:
        sizes = replace(sizes, reps=args.reps)
    frameworks = [FRAMEWORKS[name] for name in args.frameworks]
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    with open(args.out / f"bench-{stamp}.log", "w") as log:
        results = anyio.run(run_all, args, frameworks, sizes, log)
    results["meta"] = {
        "when": stamp,
        "commit": harness.git_commit(),
        "quick": args.quick,
        "reps": sizes.reps,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}",
        "frameworks": {f.name: f.import_line for f in frameworks},
        "http_stack": args.http_stack,
    }
    summary = report.summarise(results)
    results["summary"] = summary
    path = args.out / f"bench-{stamp}.json"
    path.write_text(json.dumps(results, indent=1))
    print(report.render(summary))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
