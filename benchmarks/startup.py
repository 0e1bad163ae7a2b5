"""Start-up figures: import time, the cost of registering many tools, an idle server's memory.

Each is measured in a fresh process, frameworks interleaved within a repetition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from benchmarks import harness
from benchmarks.harness import Framework


def measure_imports(frameworks: Sequence[Framework], reps: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {f.name: [] for f in frameworks}
    for framework in frameworks if reps > 1 else ():  # once untimed: bytecode caches
        harness.subprocess_json(f"{framework.import_line}; print('{{}}')")
    for _ in range(reps):
        for framework in frameworks:
            code = (
                f"import time; t = time.perf_counter(); {framework.import_line}; "
                "t = time.perf_counter() - t; import json; print(json.dumps(t * 1000))"
            )
            times[framework.name].append(harness.subprocess_json(code))
    return times


def measure_registration(
    frameworks: Sequence[Framework], reps: int, n: int
) -> dict[str, list[dict[str, float]]]:
    samples: dict[str, list[dict[str, float]]] = {f.name: [] for f in frameworks}
    for _ in range(reps):
        for framework in frameworks:
            code = f"""
import json, os, time
from benchmarks.harness import process_memory
import benchmarks.servers.{framework.module} as bench
rss = process_memory(os.getpid())[0]
cpu, wall = time.process_time(), time.perf_counter()
server = bench.register_many({n})
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({{"cpu_ms": cpu * 1000, "wall_ms": wall * 1000, "rss_mb": process_memory(os.getpid())[0] - rss}}))
"""
            samples[framework.name].append(harness.subprocess_json(code))
    return samples


async def measure_idle_memory(frameworks: Sequence[Framework], reps: int, log: Any) -> dict[str, list[float]]:
    """RSS of a stdio server that has answered `server/discover` and `tools/list`, and then sits idle."""
    from mcp import Client

    rss: dict[str, list[float]] = {f.name: [] for f in frameworks}
    for _ in range(reps):
        for framework in frameworks:
            server = harness.StdioServer(framework, log)
            async with Client(server.transport()) as client:
                await client.list_tools()
                await anyio.sleep(0.2)
                rss[framework.name].append(harness.process_memory(server.pid())[0])
    return rss
