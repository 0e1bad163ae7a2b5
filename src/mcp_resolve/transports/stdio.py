"""stdio: newline-delimited JSON-RPC on stdin/stdout, logs on stderr, clean exit on EOF.

Nothing but protocol messages ever reaches stdout. Reads go through asyncio's
pipe reader (no thread hop per line); a line longer than the limit is
discarded up to its newline and answered with a parse error, so one huge
garbage line cannot take the server down.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
from typing import Any, BinaryIO

import anyio

from ..errors import PARSE_ERROR
from ..protocol.jsonrpc import encode, error_message
from ..protocol.session import Connection

__all__ = ["MAX_LINE_BYTES", "serve_stdio"]

MAX_LINE_BYTES = 4 * 1024 * 1024


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(os.environ.get("MCP_RESOLVE_LOG_LEVEL", "INFO").upper())


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


async def serve_stdio(server: Any, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Serve `server` over this process's stdin/stdout until stdin closes."""
    _configure_logging()
    source = stdin or sys.stdin.buffer
    target = stdout or sys.stdout.buffer
    reader = await _pipe_reader(source)
    write_lock = anyio.Lock()

    async def sink(message: dict[str, Any]) -> None:
        data = encode(message) + b"\n"
        async with write_lock:
            if len(data) > 65536:  # a big write may block on a full pipe: keep it off the loop
                await anyio.to_thread.run_sync(_write, target, data)
            else:
                _write(target, data)

    connection = Connection(server)
    send, receive = anyio.create_memory_object_stream[bytes](math.inf)

    async def pump() -> None:
        async with send:
            while True:
                line = await _read_line(reader)
                if line is None:
                    return
                if line == b"":
                    await sink(
                        error_message(
                            None, PARSE_ERROR, f"Parse error: message longer than {MAX_LINE_BYTES} bytes"
                        )
                    )
                    continue
                if line.strip():
                    send.send_nowait(line)

    async with server.running(), anyio.create_task_group() as group:
        group.start_soon(pump)
        await connection.serve(receive, sink)


def _write(target: BinaryIO, data: bytes) -> None:
    target.write(data)
    target.flush()
