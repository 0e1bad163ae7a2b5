"""How the driver reaches each server: one client (the official `mcp` Client) over every transport.

Only the server differs between frameworks. Server-side figures come from
the server process itself (its CPU clock, and `/proc/<pid>/status`), so the
client's own cost never enters the primary figure; in memory, client and
server share this process and the figure is their sum.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import importlib
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import anyio

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Framework:
    """A framework under test: its bench server module and the one line that imports it."""

    name: str
    module: str
    import_line: str
    modern_questions: bool = True  # False: no resolver questions on 2026-07-28 (FastMCP)
    workloads: tuple[str, ...] | None = None  # the workloads it serves (None: all of them)

    def serves(self, workload: str) -> bool:
        return self.workloads is None or workload in self.workloads

    def load(self) -> ModuleType:
        return importlib.import_module(f"benchmarks.servers.{self.module}")


FRAMEWORKS = {
    "ours": Framework("ours", "ours", "from mcp_resolve import MCPServer"),
    "official": Framework("official", "official", "from mcp.server.mcpserver import MCPServer"),
    "fastmcp": Framework("fastmcp", "fastmcp_server", "from fastmcp import FastMCP", modern_questions=False),
}
FLOOR = Framework("floor", "floor", "", workloads=("W1", "W3n"))
"""Not a framework: the bare ASGI app of `servers/floor.py`, measured beside them on HTTP 2026-07-28 W1 and W3n."""
TRACING = (
    Framework("ours-off", "ours_untraced", "", workloads=("W1",)),
    Framework("ours-sdk", "ours_sdk", "", workloads=("W1",)),
)
"""`ours` with telemetry off, and with an OpenTelemetry SDK configured: beside `ours` (on, no SDK) on HTTP
2026-07-28 W1, so the cost of tracing by default is read within one run."""


# -- measuring a process ---------------------------------------------------------------------
class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_LIBC = ctypes.CDLL(None, use_errno=True)
"""The C library this interpreter already has loaded (`find_library` would run `ldconfig` on every import)."""


def process_cpu(pid: int | None) -> float:
    """User+system CPU seconds of `pid` (all its threads, ended ones included), or of this process when None.

    Read from the process's CPU clock (`clock_getcpuclockid`), which the
    kernel keeps in nanoseconds. `/proc/<pid>/stat` gives the same total in
    10 ms ticks: a block of a few hundred fast calls is only some tens of
    ticks, and that rounding alone moved a phase's figure by 1-2 %.
    """
    if pid is None:
        return time.process_time()
    clock = ctypes.c_int()
    error = _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock))
    if error:
        raise OSError(error, f"clock_getcpuclockid({pid}): {os.strerror(error)}")
    now = _Timespec()
    if _LIBC.clock_gettime(clock, ctypes.byref(now)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"clock_gettime(CPU clock of {pid}): {os.strerror(error)}")
    return now.tv_sec + now.tv_nsec / 1e9


async def timed_calls(
    clients: Sequence[Any], call: Callable[[Any], Awaitable[Any]], calls: int
) -> list[float]:
    """Make `calls` calls spread over `clients` (concurrently when several); each call's latency in seconds."""
    latencies: list[float] = []

    async def run(client: Any, n: int) -> None:
        for _ in range(n):
            started = time.perf_counter()
            await call(client)
            latencies.append(time.perf_counter() - started)

    if len(clients) == 1:
        await run(clients[0], calls)
        return latencies
    share, extra = divmod(calls, len(clients))
    async with anyio.create_task_group() as group:
        for index, client in enumerate(clients):
            group.start_soon(run, client, share + (index < extra))
    return latencies


def process_memory(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of `pid` in MiB."""
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


# -- the client's side of every transport ----------------------------------------------------
class _CountingWrite:
    """The client's write stream, counting what it sends by JSON-RPC method (rounds, questions)."""

    def __init__(self, inner: Any, sent: collections.Counter[str]) -> None:
        self._inner = inner
        self._sent = sent

    async def send(self, item: Any) -> None:
        method = getattr(item.message, "method", None)
        if method is not None:
            self._sent[method] += 1
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _CountingWrite:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


class CountingTransport:
    """Wraps any official-client Transport; `sent` counts the client's requests by method."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.sent: collections.Counter[str] = collections.Counter()

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return read, _CountingWrite(write, self.sent)

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._inner.__aexit__(*exc_info)


@contextlib.asynccontextmanager
async def ours_in_memory(server: Any) -> AsyncIterator[tuple[Any, Any]]:
    """Our server on the official client's in-memory streams.

    The official client speaks `SessionMessage` objects; our connection speaks
    JSON-RPC dicts. Each message is converted once each way (the work a wire
    would do), a cost the official server's own in-memory path does not pay.
    """
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    from mcp_resolve.protocol.session import Connection

    to_server_send, to_server_receive = anyio.create_memory_object_stream[Any](math.inf)
    to_client_send, to_client_receive = anyio.create_memory_object_stream[Any](math.inf)
    raw_send, raw_receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)

    async def sink(message: dict[str, Any]) -> None:
        await to_client_send.send(SessionMessage(jsonrpc_message_adapter.validate_python(message)))

    async def pump() -> None:
        async with raw_send, to_server_receive:
            async for item in to_server_receive:
                raw_send.send_nowait(item.message.model_dump(by_alias=True, exclude_unset=True, mode="json"))

    async with server.running(), anyio.create_task_group() as group:
        group.start_soon(pump)
        group.start_soon(Connection(server).serve, raw_receive, sink)
        try:
            yield to_client_receive, to_server_send
        finally:
            group.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def lowlevel_in_memory(server: Any, lifespan: Any = None) -> AsyncIterator[tuple[Any, Any]]:
    """The official SDK's own in-memory pairing (FastMCP's `FastMCPTransport` does the same)."""
    from mcp.shared.memory import create_client_server_memory_streams

    lowlevel = getattr(server, "_lowlevel_server", None) or server._mcp_server
    async with contextlib.AsyncExitStack() as stack:
        if lifespan is not None:
            await stack.enter_async_context(lifespan)
        client_streams, server_streams = await stack.enter_async_context(
            create_client_server_memory_streams()
        )
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        group.start_soon(lowlevel.run, *server_streams, lowlevel.create_initialization_options())
        yield client_streams


def memory_transport(framework: Framework, server: Any) -> Any:
    if framework.name == "ours":
        return ours_in_memory(server)
    if framework.name == "fastmcp":
        return lowlevel_in_memory(server, server._lifespan_manager())
    return lowlevel_in_memory(server)


@dataclass
class StdioServer:
    """A server the official `stdio_client` spawns; it tells us its pid through a file."""

    framework: Framework
    log: TextIO
    pid_file: str = field(default_factory=lambda: tempfile.mktemp(prefix="bench-pid-"))

    def transport(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", f"benchmarks.servers.{self.framework.module}", "stdio"],
            env={**os.environ, "BENCH_PID_FILE": self.pid_file},
            cwd=str(ROOT),
        )
        return stdio_client(parameters, errlog=self.log)

    def pid(self) -> int:
        with open(self.pid_file) as handle:
            return int(handle.read())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def http_server(framework: Framework, log: TextIO) -> Any:
    """Serve the framework's `streamable_http_app()` under uvicorn in a subprocess; yields (pid, url)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", f"benchmarks.servers.{framework.module}", "http", str(port)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{framework.name} HTTP server exited with {process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{framework.name} HTTP server did not listen on {port}") from None
                time.sleep(0.05)
        yield process.pid, f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def http_transport(url: str) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url)


def has_our_http() -> bool:
    return (ROOT / "src" / "mcp_resolve" / "transports" / "http" / "__init__.py").exists()


# -- the person answering the refund desk ----------------------------------------------------
class Answerer:
    """Answers the refund desk's two questions (whole order: yes; restock: yes) and counts them."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        self.asked += 1
        if "whole order" in params.message:
            return ElicitResult(action="accept", content={"full": True, "sku": ""})
        return ElicitResult(action="accept", content={"restock": True})


def subprocess_json(code: str, timeout: float = 300) -> Any:
    """Run `code` in a fresh interpreter at the repo root; its last stdout line is JSON."""
    import json

    output = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=True
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def git_commit() -> str:
    """The commit measured, with a `+` when the working tree had uncommitted changes."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return commit.stdout.strip() + ("+" if dirty.stdout.strip() else "")
