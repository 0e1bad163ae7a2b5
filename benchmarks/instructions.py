"""Instructions per call of our HTTP app, counted by callgrind: a cost figure the machine's noise cannot move.

Timing cannot rank changes of a few per cent on a shared machine; the number
of instructions a call executes can, because it is the same on every run.
This drives `mcp.streamable_http_app()` from `servers/ours.py` in process on
uvloop (an in-memory ASGI `receive`/`send`, one request at a time, the event
loop turning between requests as it does under uvicorn), so it counts our
code and the libraries under it, not uvicorn or the kernel.

    python benchmarks/instructions.py                 # every workload, under valgrind
    python benchmarks/instructions.py W1 W4           # some of them
    python benchmarks/instructions.py --drive W1 300  # the driver alone (what valgrind runs)
    python benchmarks/instructions.py --cold W1       # cache misses of a call with cold caches
    python benchmarks/instructions.py --floor W1      # the same count for the floor app (W1, W3n)

`--cold` counts something else: the last-level cache misses of one call made
after the caches were flushed, as a lone client's own work between calls
flushes them (cachegrind's simulated 32 KiB L1 and 8 MiB LL; 20 and 60 calls,
each run again with the flushes alone, which are subtracted; a W4 refund's
three requests follow one flush, so later rounds find some lines warm). Over HTTP with
one client, a call's cost follows this count more than its instructions
(README.md, "Known limits"). The figure includes the in-process driver's
own side of each call, the same for every variant compared.

Each workload is run twice under `valgrind --tool=callgrind`, for 100 and for
300 calls after the same warm-up; the difference over 200 is one call's cost
(one refund's for W4: three requests, and the driver's encoding of the two
answered rounds).
Python's string hashing is fixed (`PYTHONHASHSEED=0`), since dict layouts move
the count by about 1 %.

Telemetry is on by default (docs/observability.md): the plain run is a process
that never imports OpenTelemetry. `BENCH_OTEL_API=1` imports its API first, as
a process whose libraries load it does, with no SDK configured (each request
then asks whether a global provider is set); `MCP_RESOLVE_TELEMETRY=false`
counts a server with telemetry off.

`--floor` drives the bare ASGI app of `servers/floor.py` instead, under the
same driver: what the driver, the loop and JSON cost with no framework, so
that ours less the floor is what our HTTP path itself spends (README.md,
"Where the time goes").
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pydantic_core

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = {
    "W1": ("echo", {"text": "hello"}),
    "W2": ("order_book", {"title": "Dune"}),
    "W3": ("fan_out", {"x": 1}),
    "W3n": ("nap", {"x": 1}),
    "W4": ("refund_order", {"order_id": "ORD-7002", "reason": "wrong size"}),
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
SMALL, LARGE = 100, 300
COLD_SMALL, COLD_LARGE = 20, 60  # cache simulation is slow, and the count varies less
FLUSH_BYTES = 16 << 20
SIMULATED_CACHES = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
"""Fixed, so that the count does not depend on the machine that runs it."""


def request_body(request_id: int, params: dict[str, Any]) -> bytes:
    return pydantic_core.to_json(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def post_scope(body: bytes, tool: str) -> dict[str, Any]:
    """The ASGI scope of one 2026-07-28 `tools/call` POST of `body`, as uvicorn would make it."""
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", tool.encode()),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


async def post(app: Any, body: bytes, tool: str) -> dict[str, Any]:
    """One 2026-07-28 `tools/call` POST through the ASGI app; its JSON answer."""
    scope = post_scope(body, tool)
    answered = asyncio.Event()
    sent: list[bytes] = []
    unread = True

    async def receive() -> dict[str, Any]:
        nonlocal unread
        if unread:
            unread = False
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    await app(scope, receive, send)
    await asyncio.sleep(0)  # the loop turns between requests, as it does under a server
    answer: dict[str, Any] = pydantic_core.from_json(b"".join(sent))
    return answer


def _answer_question(request: dict[str, Any]) -> dict[str, Any]:
    if "whole order" in request["params"]["message"]:
        return {"action": "accept", "content": {"full": True, "sku": ""}}
    return {"action": "accept", "content": {"restock": True}}


FIRST_ROUNDS = {
    workload: request_body(1, {"name": name, "arguments": arguments, "_meta": META})
    for workload, (name, arguments) in WORKLOADS.items()
}
"""Each workload's first request, encoded once: the driver's own JSON work is kept out of the count."""


async def call(app: Any, workload: str) -> None:
    """One call of the workload, every round of it; raises if an answer is wrong."""
    name, arguments = WORKLOADS[workload]
    body = FIRST_ROUNDS[workload]
    for round_number in range(2, 5):
        result = (await post(app, body, name))["result"]
        if result.get("isError"):
            raise RuntimeError(f"{workload} failed: {result}")
        if result.get("resultType") != "input_required":
            return
        answers = {key: _answer_question(asked) for key, asked in result["inputRequests"].items()}
        params = {
            "name": name,
            "arguments": arguments,
            "_meta": META,
            "requestState": result["requestState"],
            "inputResponses": answers,
        }
        body = request_body(round_number, params)
    raise RuntimeError(f"{workload} took more than 3 rounds")


def _app() -> Any:
    """Our streamable HTTP app, or the floor's bare ASGI app when `BENCH_APP=floor`."""
    if os.environ.get("BENCH_APP") == "floor":
        from benchmarks.servers.floor import app

        return app
    from benchmarks.servers.ours import mcp

    return mcp.streamable_http_app()


def drive(workload: str, calls: int, *, flush: bool = False, calls_too: bool = True) -> None:
    """Warm up, then make `calls` calls: what valgrind measures.

    With `flush`, the caches are flushed before each call (a 16 MiB copy, twice
    the simulated last-level cache), as the client's own work flushes them
    between a lone client's calls; without `calls_too`, only the flushes run
    (what `cold_misses` subtracts).
    """
    import uvloop

    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    if os.environ.get("BENCH_OTEL_API") == "1":
        import opentelemetry.trace  # noqa: F401 - loaded as a library would, no SDK configured
    app = _app()
    scratch, zeros = (bytearray(FLUSH_BYTES), bytes(FLUSH_BYTES)) if flush else (bytearray(), b"")

    async def main() -> None:
        for _ in range(30):
            await call(app, workload)
        for _ in range(calls):
            if flush:
                scratch[:] = zeros
            if calls_too:
                await call(app, workload)

    uvloop.run(main())


def count(workload: str) -> int:
    """Instructions per call of `workload` (the difference of two callgrind runs)."""
    small, large = (callgrind_total(__file__, "--drive", workload, str(calls)) for calls in (SMALL, LARGE))
    return (large - small) // (LARGE - SMALL)


def callgrind_total(script: str, *args: str) -> int:
    """The instructions callgrind counts in one run of `python script args` (`http_parts.py` shares it)."""
    finished = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, script, *args],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=True,
    )
    collected = re.search(r"Collected : (\d+)", finished.stderr)
    if collected is None:
        raise RuntimeError(f"no callgrind total in:\n{finished.stderr[-2000:]}")
    return int(collected.group(1))


def _cachegrind_summary(workload: str, calls: int, *, calls_too: bool) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cachegrind.out"
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", *SIMULATED_CACHES]
        command += [f"--cachegrind-out-file={out}", sys.executable, __file__, "--drive", workload, str(calls)]
        command += ["--flush"] if calls_too else ["--flush-only"]
        subprocess.run(command, env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True, check=True)
        lines = out.read_text().splitlines()
    events = next(line for line in lines if line.startswith("events:")).split()[1:]
    summary = next(line for line in lines if line.startswith("summary:")).split()[1:]
    return dict(zip(events, map(int, summary), strict=True))


def cold_misses(workload: str) -> tuple[int, int]:
    """Last-level cache misses of one call that finds the caches flushed: (instruction, data).

    What a call touches that the client's work in between has evicted is
    fetched from memory again, and with one client that happens on every
    call: this counts it, as a simulated 32 KiB L1 and 8 MiB last-level cache
    see it. The flushes' own misses are measured alone and subtracted.
    """
    per_call = {}
    for calls_too in (True, False):
        small = _cachegrind_summary(workload, COLD_SMALL, calls_too=calls_too)
        large = _cachegrind_summary(workload, COLD_LARGE, calls_too=calls_too)
        per_call[calls_too] = {key: (large[key] - small[key]) / (COLD_LARGE - COLD_SMALL) for key in large}
    misses = {key: per_call[True][key] - per_call[False][key] for key in per_call[True]}
    return round(misses["ILmr"]), round(misses["DLmr"] + misses["DLmw"])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--drive"]:
        mode = argv[3] if len(argv) > 3 else None
        if mode not in (None, "--flush", "--flush-only"):
            print(f"unknown driver mode {mode!r}: --flush or --flush-only", file=sys.stderr)
            return 2
        drive(argv[1], int(argv[2]), flush=mode is not None, calls_too=mode != "--flush-only")
        return 0
    cold = "--cold" in argv
    if "--floor" in argv:
        os.environ["BENCH_APP"] = "floor"  # inherited by the driver valgrind runs
    chosen = [name for name in argv if name not in ("--cold", "--floor")] or list(WORKLOADS)
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}", file=sys.stderr)
        return 2
    for workload in chosen:
        name = WORKLOADS[workload][0]
        if cold:
            instructions, data = cold_misses(workload)
            print(
                f"{workload:4s} {name:13s} {instructions + data:>7,} cold cache misses per call"
                f" ({instructions:,} instruction, {data:,} data)",
                flush=True,
            )
        else:
            print(f"{workload:4s} {name:13s} {count(workload):>11,} instructions per call", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
