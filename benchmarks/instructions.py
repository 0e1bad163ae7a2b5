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

Each workload is run twice under `valgrind --tool=callgrind`, for 100 and for
300 calls after the same warm-up; the difference over 200 is one call's cost
(one refund's for W4: three requests, and the driver's encoding of the two
answered rounds).
Python's string hashing is fixed (`PYTHONHASHSEED=0`), since dict layouts move
the count by about 1 %.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic_core

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = {
    "W1": ("echo", {"text": "hello"}),
    "W2": ("order_book", {"title": "Dune"}),
    "W3n": ("nap", {"x": 1}),
    "W4": ("refund_order", {"order_id": "ORD-7002", "reason": "wrong size"}),
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
SMALL, LARGE = 100, 300


def request_body(request_id: int, params: dict[str, Any]) -> bytes:
    return pydantic_core.to_json(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


async def post(app: Any, body: bytes, tool: str) -> dict[str, Any]:
    """One 2026-07-28 `tools/call` POST through the ASGI app; its JSON answer."""
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", tool.encode()),
    ]
    scope = {
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


def drive(workload: str, calls: int) -> None:
    """Warm up, then make `calls` calls: what valgrind measures."""
    import uvloop

    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    from benchmarks.servers.ours import mcp

    app = mcp.streamable_http_app()

    async def main() -> None:
        for _ in range(30):
            await call(app, workload)
        for _ in range(calls):
            await call(app, workload)

    uvloop.run(main())


def count(workload: str) -> int:
    """Instructions per call of `workload` (the difference of two callgrind runs)."""
    totals = []
    for calls in (SMALL, LARGE):
        finished = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                sys.executable,
                __file__,
                "--drive",
                workload,
                str(calls),
            ],
            env={**os.environ, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
        collected = re.search(r"Collected : (\d+)", finished.stderr)
        if collected is None:
            raise RuntimeError(f"no callgrind total in:\n{finished.stderr[-2000:]}")
        totals.append(int(collected.group(1)))
    return (totals[1] - totals[0]) // (LARGE - SMALL)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--drive"]:
        drive(argv[1], int(argv[2]))
        return 0
    chosen = argv or list(WORKLOADS)
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}", file=sys.stderr)
        return 2
    for workload in chosen:
        name = WORKLOADS[workload][0]
        print(f"{workload:4s} {name:13s} {count(workload):>11,} instructions per call", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
