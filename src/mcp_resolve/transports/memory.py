"""In-memory transport: a client and a server in one process, messages as JSON round trips.

Messages are serialised and parsed on the way through, so what the client
sees is exactly what would cross a wire (and unserialisable results fail
here as they would on stdio).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import pydantic_core

from ..protocol.jsonrpc import encode
from ..protocol.session import Connection

if TYPE_CHECKING:
    from ._serves import ServedServer

__all__ = ["MemoryPipe", "connect_in_memory"]


class MemoryPipe:
    """The client's end: `send` a message dict, `receive` the server's messages."""

    def __init__(
        self,
        to_server: anyio.abc.ObjectSendStream[bytes],
        from_server: anyio.abc.ObjectReceiveStream[dict[str, Any]],
    ) -> None:
        self._to_server = to_server
        self._from_server = from_server

    async def send(self, message: dict[str, Any]) -> None:
        await self._to_server.send(encode(message))

    async def receive(self) -> dict[str, Any]:
        return await self._from_server.receive()

    async def aclose(self) -> None:
        await self._to_server.aclose()


@asynccontextmanager
async def connect_in_memory(server: ServedServer) -> AsyncIterator[MemoryPipe]:
    client_send, server_receive = anyio.create_memory_object_stream[bytes](math.inf)
    server_send, client_receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)

    async def sink(message: dict[str, Any]) -> None:
        await server_send.send(pydantic_core.from_json(encode(message)))

    try:
        async with server.running(), anyio.create_task_group() as group:
            group.start_soon(Connection(server).serve, server_receive, sink)
            try:
                yield MemoryPipe(client_send, client_receive)
            finally:
                await client_send.aclose()
                group.cancel_scope.cancel()
    finally:
        # All four ends, whoever owned them: an unclosed memory stream is a ResourceWarning when
        # collected, and tests run with warnings as errors. (`serve` closes server_receive itself,
        # unless it never started; closing twice is harmless.)
        for stream in (client_send, server_receive, server_send, client_receive):
            stream.close()
