"""Server CPU per call of a proxied echo: our echo served directly, through our proxy, through FastMCP's.

    python benchmarks/proxy.py [--calls N] [--reps N] [--quick]

One run starts the bench echo server (`servers/ours.py`, W1) on HTTP, then
two fronts of it, each its own uvicorn process: `mcp-resolve proxy --http`
and FastMCP's `create_proxy(url)`. The same client (ours, handshake era,
which all three speak) makes the same echo calls to each; the figures are
the CPU seconds the front process and the echo server behind it spent per
call, and the median latency. Compare the rows of one run, not runs.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import anyio

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import FRAMEWORKS, free_port, http_server, process_cpu  # noqa: E402

FASTMCP_PROXY = """
import sys
import uvicorn
from fastmcp.server.server import create_proxy
proxy = create_proxy(sys.argv[1], mode="legacy")
uvicorn.run(proxy.http_app(path="/mcp"), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


@contextlib.contextmanager
def front(command: list[str], port: int, log: TextIO) -> Iterator[tuple[int, str]]:
    """A proxy process listening on `port`; yields (pid, its /mcp URL)."""
    process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        import socket

        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[:4]} exited with {process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{command[:4]} did not listen on {port}") from None
                time.sleep(0.05)
        yield process.pid, f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def measure(url: str, pids: list[int], calls: int, warmup: int) -> dict[str, float]:
    """CPU per call (µs) of each pid, and the median latency (ms), over `calls` echo calls."""
    from mcp_resolve import Client

    async with Client(url, mode="legacy") as client:
        for _ in range(warmup):
            await client.call_tool("echo", {"text": "hi"})
        before = [process_cpu(pid) for pid in pids]
        latencies = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool("echo", {"text": "hi"})
            latencies.append(time.perf_counter() - started)
            assert not result.is_error, result
        after = [process_cpu(pid) for pid in pids]
    figures = {
        f"cpu{index}": (a - b) / calls * 1e6 for index, (a, b) in enumerate(zip(after, before, strict=True))
    }
    figures["latency_ms"] = statistics.median(latencies) * 1e3
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a few calls, one repetition: proves it runs")
    options = parser.parse_args(argv)
    calls, reps, warmup = (20, 1, 5) if options.quick else (options.calls, options.reps, 50)
    rows: dict[str, list[dict[str, float]]] = {"direct": [], "mcp-resolve proxy": [], "FastMCP proxy": []}
    with tempfile.TemporaryFile("w+") as log, http_server(FRAMEWORKS["ours"], log) as (echo_pid, echo_url):
        ours_port, fastmcp_port = free_port(), free_port()
        ours = [sys.executable, "-m", "mcp_resolve", "proxy", "--http", "--port", str(ours_port), echo_url]
        theirs = [sys.executable, "-c", FASTMCP_PROXY, echo_url, str(fastmcp_port)]
        with (
            front(ours, ours_port, log) as (ours_pid, ours_url),
            front(theirs, fastmcp_port, log) as (
                fastmcp_pid,
                fastmcp_url,
            ),
        ):
            for _ in range(reps):  # interleaved, so a busy neighbour weighs on every row alike
                rows["direct"].append(anyio.run(measure, echo_url, [echo_pid], calls, warmup))
                rows["mcp-resolve proxy"].append(
                    anyio.run(measure, ours_url, [ours_pid, echo_pid], calls, warmup)
                )
                rows["FastMCP proxy"].append(
                    anyio.run(measure, fastmcp_url, [fastmcp_pid, echo_pid], calls, warmup)
                )
    print(f"proxied echo over HTTP, handshake era: {calls} calls x {reps}, medians")
    print(f"{'front':<20}{'front CPU/call':>16}{'echo server CPU/call':>22}{'latency':>10}")
    for name, samples in rows.items():
        front_cpu = statistics.median(s["cpu0"] for s in samples)
        echo_cpu = statistics.median(s["cpu1"] for s in samples) if "cpu1" in samples[0] else front_cpu
        shown_front = "-" if name == "direct" else f"{front_cpu:.0f} µs"
        print(
            f"{name:<20}{shown_front:>16}{echo_cpu:>19.0f} µs{statistics.median(s['latency_ms'] for s in samples):>8.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
