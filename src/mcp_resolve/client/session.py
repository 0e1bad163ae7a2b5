"""The client's JSON-RPC session over a message pipe: our requests, the server's requests, notifications."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
import anyio.abc

from .._concurrency import cancel_scope
from ..errors import INTERNAL_ERROR, MCPError
from .meta import request_observer
from .pipes import MessagePipe

__all__ = ["ClientSession"]

logger = logging.getLogger("mcp_resolve.client")

RequestHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""`async (method, params) -> result`: answers one request from the server."""
Send = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""`async (method, params) -> result`: sends one request to the server (a Client's `request`)."""
NotificationHandler = Callable[[str, dict[str, Any]], Awaitable[None]]
"""`async (method, params) -> None`: every notification the server sends, as it arrived."""


class _Pending:
    __slots__ = ("event", "message")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.message: dict[str, Any] | None = None


class ClientSession:
    """Correlates responses with requests and answers what the server asks."""

    def __init__(
        self, pipe: MessagePipe, on_request: RequestHandler, on_notification: NotificationHandler
    ) -> None:
        self.pipe = pipe
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._pending: dict[int | str, _Pending] = {}
        self._answering: dict[int | str, anyio.CancelScope] = {}
        """The server's requests our handlers are still answering, by id (for notifications/cancelled)."""
        self._closed: BaseException | None = None

    async def run(self, group: anyio.abc.TaskGroup) -> None:
        """Read until the server goes away; every waiting request then fails instead of hanging."""
        try:
            while True:
                message = await self.pipe.receive()
                if "method" in message:
                    if "id" in message:
                        group.start_soon(self._answer, message)
                    elif message["method"] == "notifications/cancelled":
                        self._withdrawn((message.get("params") or {}).get("requestId"))
                    else:
                        await self._on_notification(message["method"], message.get("params") or {})
                elif message.get("id") in self._pending:
                    waiter = self._pending.pop(message["id"])
                    waiter.message = message
                    waiter.event.set()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            self._closed = exc
        finally:
            for waiter in self._pending.values():
                waiter.event.set()
            self._pending.clear()

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        if self._closed is not None:
            raise ConnectionError("the server connection is closed")
        request_id = next(self._ids)
        observe = request_observer()
        if observe is not None:
            return await observe(method, request_id, params, partial(self._exchange, timeout=timeout))
        return await self._exchange(method, request_id, params, timeout=timeout)

    async def _exchange(
        self, method: str, request_id: int, params: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Send the request and wait for its answer: the result, or `MCPError`."""
        waiter = _Pending()
        self._pending[request_id] = waiter
        try:
            await self.pipe.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            with anyio.fail_after(timeout):
                await waiter.event.wait()
        finally:
            self._pending.pop(request_id, None)
        message = waiter.message
        if message is None:
            raise ConnectionError(f"the server connection closed before answering {method}")
        error = message.get("error")
        if isinstance(error, dict):
            raise MCPError(
                int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")), error.get("data")
            )
        result = message.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.pipe.send(message)

    def _withdrawn(self, request_id: Any) -> None:
        """The server no longer wants an answer: stop the handler (say, close the person's form)."""
        scope = self._answering.get(request_id)
        if scope is not None:
            scope.cancel()

    async def _answer(self, message: dict[str, Any]) -> None:
        request_id, method = message["id"], message["method"]
        reply: dict[str, Any] | None = None
        try:
            with cancel_scope() as scope:
                self._answering[request_id] = scope
                result = await self._on_request(method, message.get("params") or {})
                reply = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except MCPError as exc:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_error()}
        except Exception as exc:
            logger.exception("client handler for %s failed", method)
            reply = {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": INTERNAL_ERROR, "message": str(exc)},
            }
        finally:
            self._answering.pop(request_id, None)
        if reply is None:
            return  # withdrawn by the server: a cancelled request gets no response
        try:
            await self.pipe.send(reply)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
