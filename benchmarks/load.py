"""A load worker: several official clients in one process, started on the driver's word.

The driver runs concurrent clients in more than one process so that the
client side (the official client spends milliseconds of CPU per HTTP call) is
not a single GIL-bound process that caps every server at the same rate. The
protocol on stdin/stdout: connect and warm up, print `ready`; then, for every
line `go N`, run N calls spread over the clients and print one JSON line with
what was measured; end at end of input. A worker thus serves every block of
a phase whose frameworks take turns block by block.

    python -m benchmarks.load URL MODE WORKLOAD CLIENTS WARMUP
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

import anyio

from benchmarks import harness
from benchmarks.workloads import WORKLOADS, Workload


async def main(url: str, mode: str, workload_key: str, clients: int, warmup: int) -> None:
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
        print("ready", flush=True)
        while command := (await anyio.to_thread.run_sync(sys.stdin.readline)).split():
            if command[0] != "go" or len(command) != 2:
                raise SystemExit(f"load worker: expected 'go N', got {command!r}")
            measured = await run_block(connected, transports, answerer, workload, int(command[1]))
            print(json.dumps(measured), flush=True)


async def run_block(
    connected: list[Any],
    transports: list[harness.CountingTransport],
    answerer: harness.Answerer,
    workload: Workload,
    calls: int,
) -> dict[str, Any]:
    sent, asked = sum(t.sent["tools/call"] for t in transports), answerer.asked
    latencies = await harness.timed_calls(connected, workload.call, calls)
    return {
        "protocol_version": connected[0].protocol_version,
        "latencies": latencies,
        "rounds_sent": sum(t.sent["tools/call"] for t in transports) - sent,
        "asked": answerer.asked - asked,
    }


if __name__ == "__main__":
    url, mode, workload_key, clients, warmup = sys.argv[1:6]
    anyio.run(main, url, mode, workload_key, int(clients), int(warmup))
