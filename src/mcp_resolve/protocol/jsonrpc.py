"""JSON-RPC 2.0 framing: decoding one message, classifying it, and building answers.

Decoding never raises past this module: malformed input becomes the error
answer it deserves, so a transport can reply and go on serving.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import pydantic_core

from ..errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, MCPError

if TYPE_CHECKING:
    from ..auth.tokens import AccessToken

__all__ = [
    "Incoming",
    "IncomingNotification",
    "IncomingRequest",
    "IncomingResponse",
    "MalformedMessage",
    "Sink",
    "decode",
    "encode",
    "error_message",
    "failure_message",
    "is_request_id",
    "notifier",
    "result_message",
]

logger = logging.getLogger("mcp_resolve.protocol")

Sink = Callable[[dict[str, Any]], Awaitable[None]]
"""Sends one message toward the client on the channel of the request it belongs to."""


@dataclass(slots=True)
class IncomingRequest:
    id: int | str
    method: str
    params: dict[str, Any]
    headers: Mapping[str, str] | None = None
    """The transport's headers for this one request (HTTP); None to use the connection's."""
    access_token: AccessToken | None = None
    """The bearer token the transport verified for this one request (a protected HTTP server)."""
    peer: str | None = None
    """Who sent it, as the transport knows: "address ..." over HTTP, else None for the connection's."""
    close_stream: Callable[[], Awaitable[None]] | None = None
    """Ends the resumable HTTP stream carrying this request's answer (`ctx.close_sse_stream`); None: none."""


@dataclass(slots=True)
class IncomingNotification:
    method: str
    params: dict[str, Any]


@dataclass(slots=True)
class IncomingResponse:
    id: int | str
    result: dict[str, Any] | None
    error: dict[str, Any] | None


Incoming = IncomingRequest | IncomingNotification | IncomingResponse


def encode(message: dict[str, Any]) -> bytes:
    return pydantic_core.to_json(message)


def result_message(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def failure_message(request: IncomingRequest, exc: Exception) -> dict[str, Any]:
    """The error answer to a request whose handling raised: an MCPError as it says, anything else as an internal error.

    The internal error's details go to the log only; the client learns nothing of them.
    """
    if isinstance(exc, MCPError):
        return error_message(request.id, exc.code, exc.message, exc.data)
    logger.error("internal error while handling %s", request.method, exc_info=exc)
    return error_message(request.id, INTERNAL_ERROR, "Internal error")


def notifier(sink: Sink) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    """What a request's Context sends its notifications (log messages, progress) through."""

    async def send_notification(method: str, params: dict[str, Any]) -> None:
        await sink({"jsonrpc": "2.0", "method": method, "params": params})

    return send_notification


def is_request_id(value: Any) -> TypeGuard[int | str]:
    """Whether `value` can name a request: JSON-RPC ids are strings or integers (MCP forbids null)."""
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class MalformedMessage(MCPError):
    """A message that is not a usable JSON-RPC message; `request_id` is its id when one could be read.

    The answer to it goes back with that id (or null), so a client that sent a
    bad request still learns which one failed.
    """

    def __init__(self, code: int, message: str, request_id: Any = None) -> None:
        super().__init__(code, message)
        self.request_id: int | str | None = request_id if is_request_id(request_id) else None

    def answer(self) -> dict[str, Any]:
        return error_message(self.request_id, self.code, self.message)


def decode(raw: bytes | str | dict[str, Any]) -> Incoming:
    """Classify one message; raises MalformedMessage for bad input."""
    if isinstance(raw, dict):
        obj: Any = raw
    else:
        try:
            obj = pydantic_core.from_json(raw)
        except ValueError:
            raise MalformedMessage(PARSE_ERROR, "Parse error: the message is not valid JSON") from None
    if not isinstance(obj, dict):
        raise MalformedMessage(
            INVALID_REQUEST, "Invalid Request: a message must be a JSON object (batches are not supported)"
        )
    request_id: Any = obj.get("id")
    if obj.get("jsonrpc") != "2.0":
        raise MalformedMessage(INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"", request_id)
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str):
            raise MalformedMessage(INVALID_REQUEST, "Invalid Request: 'method' must be a string", request_id)
        params = obj.get("params")
        if params is None:
            params = {}
        elif not isinstance(params, dict):
            # JSON-RPC allows by-position params; MCP methods take only named ones, so it is bad params.
            raise MalformedMessage(INVALID_PARAMS, "Invalid params: 'params' must be an object", request_id)
        if "id" not in obj:
            return IncomingNotification(method, params)
        if not is_request_id(request_id):
            raise MalformedMessage(INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer")
        return IncomingRequest(request_id, method, params)
    if is_request_id(request_id) and ("result" in obj or "error" in obj):
        result, error = obj.get("result"), obj.get("error")
        if isinstance(result, dict) or isinstance(error, dict):
            return IncomingResponse(request_id, result if isinstance(result, dict) else None, error)
    raise MalformedMessage(
        INVALID_REQUEST, "Invalid Request: not a request, notification or response", request_id
    )
