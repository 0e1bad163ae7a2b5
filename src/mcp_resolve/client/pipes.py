"""Client-side transports as message pipes: `send(dict)`, `receive() -> dict`, `aclose()`.

A pipe hides whether the server is in this process, a child process, or
behind HTTP; the session above it only sees JSON-RPC messages. A pipe that
could not deliver a request at all answers it itself, with an error whose
`data` carries `UNDELIVERED` (the failure's kind): the server said nothing,
so nothing about the server (its protocol era, say) may be read from it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc
import pydantic_core
from anyio.streams.buffered import BufferedByteReceiveStream

from ..protocol.jsonrpc import encode

__all__ = [
    "UNDELIVERED",
    "MessagePipe",
    "StdioServerParameters",
    "open_stdio",
    "stdio_command",
    "undelivered",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
UNDELIVERED = "undelivered"
"""The `data` key of the error a pipe answers for a request that never got an answer from the server."""


def undelivered(data: Any) -> bool:
    """Whether an error's `data` says the pipe, not the server, answered (the request got no answer)."""
    return isinstance(data, dict) and UNDELIVERED in data


class MessagePipe(Protocol):
    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any]:
        """The next message from the server; raises anyio.EndOfStream when the server is gone."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class StdioServerParameters:
    """A stdio server to start, with the official SDK's field names: `Client(StdioServerParameters(...))`.

    `env` is added to this process's environment (the official adds it to a
    short default list instead); `encoding` and `encoding_error_handler` are
    accepted for ports and must stay UTF-8 and strict: JSON-RPC on stdio is UTF-8.
    """

    command: str
    args: Sequence[str] = ()
    env: dict[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    encoding: str = "utf-8"
    encoding_error_handler: str = "strict"

    def __post_init__(self) -> None:
        if (
            self.encoding.lower().replace("_", "-") not in ("utf-8", "utf8")
            or self.encoding_error_handler != "strict"
        ):
            raise ValueError(
                "MCP over stdio is UTF-8 JSON: keep encoding='utf-8' and encoding_error_handler='strict'"
            )


def stdio_command(target: str | Sequence[str]) -> list[str]:
    """A script path runs under this Python; anything else is a command line."""
    if not isinstance(target, str):
        return list(target)
    if target.endswith(".py") and os.path.exists(target):
        return [sys.executable, target]
    return shlex.split(target)


class StdioPipe:
    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._lock = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        async with self._lock:
            await self._stdin.send(encode(message) + b"\n")

    async def receive(self) -> dict[str, Any]:
        while True:
            try:
                line = await self._stdout.receive_until(b"\n", MAX_LINE_BYTES)
            except anyio.IncompleteRead:
                raise anyio.EndOfStream from None
            if line.strip():
                message = pydantic_core.from_json(line)
                if isinstance(message, dict):
                    return message

    async def aclose(self) -> None:
        await self._stdin.aclose()


@asynccontextmanager
async def open_stdio(
    command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
) -> AsyncIterator[StdioPipe]:
    """Start the server as a child process; on exit close its stdin, then escalate if it lingers."""
    process = await anyio.open_process(
        list(command), env={**os.environ, **(env or {})}, cwd=cwd, stderr=None, stdin=subprocess.PIPE
    )
    pipe = StdioPipe(process)
    try:
        yield pipe
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await pipe.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(2):
                    await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()  # its stdout too: output it wrote and nobody read would outlive the loop
