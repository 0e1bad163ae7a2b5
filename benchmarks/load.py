"""A load worker: several official clients in one process, started on the driver's word.

The driver runs concurrent clients in more than one process so that the
client side (the official client spends milliseconds of CPU per HTTP call) is
not a single GIL-bound process that caps every server at the same rate. The
protocol on stdin/stdout: connect and warm up, print `ready`, wait for a line,
run the calls, print one JSON line with what was measured.

    python -m benchmarks.load URL MODE WORKLOAD CLIENTS CALLS WARMUP
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Any

import anyio

from benchmarks import harness
from benchmarks.workloads import WORKLOADS


async def main(url: str, mode: str, workload_key: str, clients: int, calls: int, warmup: int) -> None:
    from mcp import Client

    workload = WORKLOADS[workload_key]
    answerer = harness.Answerer()
    transports = [harness.CountingTransport(harness.http_transport(url)) for _ in range(clients)]
    async with contextlib.AsyncExitStack() as stack:
        connected = [
            await stack.enter_async_context(Client(t, mode=mode, elicitation_callback=answerer))  # type: ignore[arg-type]
            for t in transports
        ]
        for client in connected:
            for _ in range(warmup):
                await workload.call(client)
        sent, asked = sum(t.sent["tools/call"] for t in transports), answerer.asked
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        latencies: list[float] = []

        async def run(client: Any, n: int) -> None:
            for _ in range(n):
                started = time.perf_counter()
                await workload.call(client)
                latencies.append(time.perf_counter() - started)

        share, extra = divmod(calls, clients)
        async with anyio.create_task_group() as group:
            for index, client in enumerate(connected):
                group.start_soon(run, client, share + (index < extra))
        result = {
            "protocol_version": connected[0].protocol_version,
            "latencies": latencies,
            "rounds_sent": sum(t.sent["tools/call"] for t in transports) - sent,
            "asked": answerer.asked - asked,
        }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    url, mode, workload_key, clients, calls, warmup = sys.argv[1:7]
    anyio.run(main, url, mode, workload_key, int(clients), int(calls), int(warmup))
