"""Real HTTP for tests: any ASGI app served by uvicorn on 127.0.0.1, plus the refund-desk story as a driver.

`http_server(app)` runs uvicorn in a thread of its own (its own event loop,
like a separate process would) on a port the OS picks, and yields the base
URL once the server accepts connections. Nothing here mocks the transport.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import uvicorn

__all__ = [
    "REFUND_TRAJECTORY",
    "RefundAnswers",
    "free_port",
    "http_server",
    "initialize_request",
    "refund_answers",
    "run_refund_trajectory",
    "serving",
]


def _start(app: Any, graceful: float) -> tuple[uvicorn.Server, threading.Thread, socket.socket]:
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # every response waits out the peer's delayed ACK (~40 ms a request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=graceful)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    return server, thread, sock


def _stop(server: uvicorn.Server, thread: threading.Thread, sock: socket.socket) -> None:
    server.should_exit = True
    thread.join(15)
    sock.close()


@asynccontextmanager
async def http_server(app: Any, *, graceful: float = 2.0) -> AsyncIterator[str]:
    """Serve `app` until the block ends; yields `http://127.0.0.1:PORT`."""
    server, thread, sock = await anyio.to_thread.run_sync(_start, app, graceful)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        await anyio.to_thread.run_sync(_stop, server, thread, sock)


@contextmanager
def serving(app: Any, *, graceful: float = 2.0) -> Iterator[str]:
    """`http_server` for synchronous code (module-scoped fixtures shared by many tests)."""
    server, thread, sock = _start(app, graceful)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        _stop(server, thread, sock)


def free_port() -> int:
    """A port nothing listens on right now, for a server started in another process."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def initialize_request(*, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """A handshake-era (2025-11-25) `initialize` request, as raw tests send it to open a session."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities or {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


class RefundAnswers:
    """Answers the refund desk's two questions from a script, counting what was asked."""

    def __init__(self, scope: list[dict[str, Any] | None], restock: list[dict[str, Any] | None]) -> None:
        self.scope, self.restock = list(scope), list(restock)
        self.asked: Counter[str] = Counter()

    def answer(self, message: str) -> dict[str, Any]:
        kind = "restock" if message.startswith("Restock") else "scope"
        self.asked[kind] += 1
        content = (self.restock if kind == "restock" else self.scope).pop(0)
        return {"action": "decline"} if content is None else {"action": "accept", "content": content}


def refund_answers() -> RefundAnswers:
    """The person's answers across the story's six calls, in the order they are asked."""
    return RefundAnswers(
        scope=[
            {"full": True},
            {"full": False, "sku": "trail-boots"},
            {"full": False, "sku": "mystery-hat"},
            None,
        ],
        restock=[{"restock": True}, None],
    )


REFUND_TRAJECTORY: list[tuple[dict[str, Any], Any]] = [
    ({"order_id": "ORD-7001", "reason": "never arrived"}, {"cents": 999, "restocked": False}),
    ({"order_id": "ORD-7002", "reason": "wrong size"}, {"cents": 4800, "restocked": True}),
    ({"order_id": "ORD-7002", "reason": "boots too small"}, {"cents": 2400, "restocked": False}),
    ({"order_id": "ORD-7002", "reason": "hat?"}, "order has no item 'mystery-hat'"),
    (
        {"order_id": "ORD-7002", "reason": "changed my mind"},
        "Resolver for parameter 'scope' could not resolve: elicitation was decline",
    ),
    ({"order_id": "ORD-9999", "reason": "what order"}, "unknown order 'ORD-9999'"),
]
"""Each call's arguments and its expected receipt fields, or the text its tool error contains."""


async def run_refund_trajectory(
    call: Callable[[dict[str, Any]], Awaitable[Any]], answers: RefundAnswers
) -> None:
    """Drive the six calls through `call(arguments) -> CallToolResult` and check every outcome."""
    for arguments, expected in REFUND_TRAJECTORY:
        result = await call(arguments)
        if isinstance(expected, str):
            assert result.is_error, arguments
            assert expected in result.content[0].text, result.content[0].text
            assert result.content[0].text.startswith("Error executing tool refund_order: ")
        else:
            assert not result.is_error, result.content
            assert result.structured_content == {**arguments, **expected}
    assert answers.asked == {"scope": 4, "restock": 2}
