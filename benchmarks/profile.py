"""Profile a benchmark server over stdio with a bare client, the way the README's findings were made.

A raw JSON-RPC client (one request written, one answer read, no MCP client
library) keeps the client's cost out of the picture; the server's CPU per
call comes from its CPU clock, and with `--py-spy` (install it yourself: `pip install
py-spy`) the server is sampled and its functions listed by inclusive share of
the active samples.

    python benchmarks/profile.py W2 --framework ours --calls 2000 --py-spy
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import FRAMEWORKS, ROOT, process_cpu

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "profile", "version": "1"},
}
CALLS = {
    "W1": ("echo", {"text": "hello"}),
    "W2": ("order_book", {"title": "Dune"}),
    "W4": ("refund_order", {"order_id": "ORD-7002", "reason": "wrong size"}),
}
ANSWERS = ({"full": True, "sku": ""}, {"restock": True})


class RawClient:
    def __init__(self, process: subprocess.Popen[bytes], modern: bool) -> None:
        self.process, self.modern, self.ids = process, modern, 0
        if not modern:
            params = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "p"},
            }
            self.request("initialize", params)
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        return json.loads(self.process.stdout.readline())  # type: ignore[no-any-return]

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            message = self.receive()
            if "method" in message and "id" in message:  # a handshake-era question: answer it
                answer = ANSWERS[0] if "whole order" in message["params"]["message"] else ANSWERS[1]
                result = {"action": "accept", "content": answer}
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif message.get("id") == self.ids:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]  # type: ignore[no-any-return]

    def call(self, workload: str) -> None:
        name, arguments = CALLS[workload]
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if self.modern:
            params["_meta"] = META
        result = self.request("tools/call", params)
        for answer in ANSWERS if workload == "W4" and self.modern else ():
            responses = {key: {"action": "accept", "content": answer} for key in result["inputRequests"]}
            result = self.request(
                "tools/call", {**params, "inputResponses": responses, "requestState": result["requestState"]}
            )
        if result.get("isError") or result.get("resultType") == "input_required":
            raise RuntimeError(f"unexpected answer: {result}")


def hot_functions(raw_profile: Path, top: int) -> list[tuple[float, str]]:
    """Inclusive share of each function among the samples not idling in the event loop's select."""
    shares: collections.Counter[str] = collections.Counter()
    active = 0
    for line in raw_profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [re.sub(r":\d+\)", ")", frame) for frame in stack.split(";")]
        if "select (selectors.py)" in frames[-1]:
            continue
        active += int(count)
        for frame in set(frames):
            shares[frame] += int(count)
    # Frames in every sample (the interpreter, the event loop's run) say nothing.
    return [(100 * n / active, frame) for frame, n in shares.most_common() if n < active][:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(CALLS))
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), default="ours")
    parser.add_argument("--handshake", action="store_true", help="initialize first (handshake era)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--py-spy", action="store_true", help="sample the server while the calls run")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", f"benchmarks.servers.{FRAMEWORKS[args.framework].module}", "stdio"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    client = RawClient(server, modern=not args.handshake)
    for _ in range(200):
        client.call(args.workload)
    spy, raw = None, Path(tempfile.mkdtemp()) / "profile.txt"
    if args.py_spy:
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        spy = subprocess.Popen(
            [py_spy, "record", "--pid", str(server.pid), "-r", "1000", "-f", "raw", "-o", str(raw)]
        )
        time.sleep(1)
    cpu = process_cpu(server.pid)
    for _ in range(args.calls):
        client.call(args.workload)
    cpu = process_cpu(server.pid) - cpu
    print(f"{args.framework} {args.workload}: {cpu / args.calls * 1e6:.0f} µs of server CPU per call")
    if spy is not None:
        spy.send_signal(2)  # SIGINT: py-spy writes its profile and exits
        spy.wait()
        for share, frame in hot_functions(raw, args.top):
            print(f"{share:5.1f}%  {frame}")
    assert server.stdin is not None
    server.stdin.close()
    server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
