"""stdio: newline-delimited JSON-RPC on stdin/stdout, logs on stderr, clean exit on EOF.

Nothing but protocol messages ever reaches stdout: while serving, file
descriptor 1 points at stderr and only the protocol holds the real stdout.
Reads go through asyncio's pipe reader (no thread hop per line); a line
longer than the limit is discarded up to its newline and answered with a
parse error, so one huge garbage line cannot take the server down.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import anyio.abc

from .._environment import settings_in_environment
from .._logs import configure_logging
from ..errors import PARSE_ERROR
from ..protocol.jsonrpc import encode, error_message
from ..protocol.session import Connection, Sink

if TYPE_CHECKING:
    from ._serves import ServedServer

__all__ = ["MAX_LINE_BYTES", "serve_stdio"]

logger = logging.getLogger("mcp_resolve.stdio")

MAX_LINE_BYTES = 4 * 1024 * 1024
DRAIN_SECONDS = 5.0  # at EOF, how long requests still running may take to answer


async def _pipe_reader(stream: BinaryIO) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stream)
    return reader


async def _read_line(reader: asyncio.StreamReader) -> bytes | None:
    """The next line, `b""` for an oversized one (already discarded), or None at EOF."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        return exc.partial or None
    except asyncio.LimitOverrunError as exc:
        await reader.readexactly(exc.consumed)
        while True:
            try:
                await reader.readuntil(b"\n")
                return b""
            except asyncio.LimitOverrunError as more:
                await reader.readexactly(more.consumed)
            except asyncio.IncompleteReadError:
                return None
    return line


@contextmanager
def _claim_stdout() -> Iterator[BinaryIO]:
    """A private handle on stdout for the protocol, with file descriptor 1 itself pointed at stderr.

    A stray `print()` in a tool, or a child process it starts, would otherwise
    write into the protocol stream and break the client's parser.
    """
    try:
        out_fd, err_fd = sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):  # stdout is not a real file: nothing to guard
        yield sys.stdout.buffer
        return
    sys.stdout.flush()
    saved = os.dup(out_fd)
    os.dup2(err_fd, out_fd)
    protocol = os.fdopen(saved, "wb", closefd=False)
    try:
        yield protocol
    finally:
        with contextlib.suppress(OSError):  # the client closed its end: what is unsent stays unsent
            protocol.close()
        sys.stdout.flush()
        os.dup2(saved, out_fd)
        os.close(saved)


async def serve_stdio(
    server: ServedServer,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    log_level: str | None = None,
) -> None:
    """Serve `server` over this process's stdin/stdout until stdin closes.

    Logs go to stderr at `log_level`, else MCP_RESOLVE_LOG_LEVEL, else INFO (`mcp_resolve._logs`).
    """
    if stdout is None:
        if log_level is None and not settings_in_environment():
            configure_logging(None)  # nothing set: the defaults, without loading the settings model
        else:
            from ..settings import load_settings  # here: the model loads pydantic-settings (about 1 MB)

            settings = load_settings(log_level=log_level)
            configure_logging(settings.log_level)
            logger.debug("settings: %s", settings.described())
        server.deployment.warn_local_claims()  # shared keys, claims in this process: the one start-up warning
        with _claim_stdout() as protocol:
            await serve_stdio(server, stdin, protocol)
        return
    source = stdin or sys.stdin.buffer
    target = stdout
    reader = await _pipe_reader(source)
    write_lock = anyio.Lock()
    serving = anyio.CancelScope()

    async def sink(message: dict[str, Any]) -> None:
        data = encode(message) + b"\n"
        try:
            if len(data) <= 65536 and not write_lock.locked():
                _write(target, data)  # no await in between: nothing can interleave, so no lock to take
                return
            async with write_lock:
                if len(data) > 65536:  # a big write may block on a full pipe: keep it off the loop
                    await anyio.to_thread.run_sync(_write, target, data)
                else:
                    _write(target, data)
        except OSError:  # the client closed our stdout: nobody can hear us, so stop serving, quietly
            if not serving.cancel_called:
                logger.info("the client closed stdout; stopping")
                serving.cancel()

    async with server.running():
        with serving:
            await Connection(server).serve(_Lines(reader, sink), sink, drain_seconds=DRAIN_SECONDS)


class _Lines(anyio.abc.ObjectReceiveStream[bytes]):
    """stdin as the connection's message stream, read where it is consumed: no pump task, no channel hop."""

    def __init__(self, reader: asyncio.StreamReader, sink: Sink) -> None:
        self._reader = reader
        self._sink = sink

    async def receive(self) -> bytes:
        while True:
            line = await _read_line(self._reader)
            if line is None:
                raise anyio.EndOfStream
            if line == b"":
                message = f"Parse error: message longer than {MAX_LINE_BYTES} bytes"
                await self._sink(error_message(None, PARSE_ERROR, message))
            elif line.strip():
                return line

    async def aclose(self) -> None:
        """Nothing to release: stdin belongs to the process."""


def _write(target: BinaryIO, data: bytes) -> None:
    target.write(data)
    target.flush()
