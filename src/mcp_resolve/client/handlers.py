"""Answering what the server asks and hearing what it tells: the client's handlers, applied.

One set of handlers serves every way a question arrives: a handshake-era
server's request in the middle of a call, a 2026-07-28 server's
`inputRequests`, a task waiting for input. A handler may be a coroutine
function or a plain one, and return a result model or a dict. A question
without a handler is refused as an unknown method, which is also why the
client declares only the capabilities it has handlers for.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from mcp_types import (
    CreateMessageRequestParams,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    Root,
)
from pydantic import BaseModel

from ..errors import METHOD_NOT_FOUND, MCPError
from .session import NotificationHandler
from .url_elicitation import UrlElicitationHandler, as_elicit_result

__all__ = [
    "ElicitationHandler",
    "LogHandler",
    "NotificationHandler",
    "ProgressHandler",
    "Handlers",
    "Roots",
    "SamplingHandler",
    "UrlElicitationHandler",
    "answer",
    "declared",
    "hear",
]

ElicitationHandler = Callable[[ElicitRequestFormParams], Awaitable[Any]]
SamplingHandler = Callable[[CreateMessageRequestParams], Awaitable[Any]]
Roots = Sequence[str | Root] | Callable[[], Awaitable[Sequence[str | Root]]]
LogHandler = Callable[[LoggingMessageNotificationParams], Awaitable[None]]
ProgressHandler = Callable[[ProgressNotificationParams], Awaitable[None]]

logger = logging.getLogger("mcp_resolve.client")


class Handlers(Protocol):
    """Where the handlers are read from (a `Client`), afresh each time: one set after connecting counts."""

    elicitation_handler: ElicitationHandler | None
    url_elicitation_handler: UrlElicitationHandler | None
    sampling_handler: SamplingHandler | None
    sampling_tools: bool
    roots: Roots | None
    log_handler: LogHandler | None
    progress_handler: ProgressHandler | None
    notification_handler: NotificationHandler | None
    extensions: dict[str, dict[str, Any]]


def declared(handlers: Handlers) -> dict[str, Any]:
    """The capabilities to declare: one per handler there is, and the extensions."""
    capabilities: dict[str, Any] = {}
    modes = {"form": handlers.elicitation_handler, "url": handlers.url_elicitation_handler}
    if any(handler is not None for handler in modes.values()):
        capabilities["elicitation"] = {mode: {} for mode, handler in modes.items() if handler is not None}
    if handlers.sampling_handler is not None:
        capabilities["sampling"] = {"tools": {}} if handlers.sampling_tools else {}
    if handlers.roots is not None:
        capabilities["roots"] = {"listChanged": True}
    if handlers.extensions:
        capabilities["extensions"] = {key: dict(value) for key, value in handlers.extensions.items()}
    return capabilities


async def answer(handlers: Handlers, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The result for one request from the server, from the handler for its method (MCPError without one)."""
    if method == "elicitation/create" and params.get("mode") == "url":
        if handlers.url_elicitation_handler is None:
            raise MCPError(METHOD_NOT_FOUND, "this client does not handle URL-mode elicitation")
        visit = ElicitRequestURLParams.model_validate(params)
        return as_elicit_result(await _maybe_await(handlers.url_elicitation_handler(visit)))
    if method == "elicitation/create" and handlers.elicitation_handler is not None:
        form = ElicitRequestFormParams.model_validate(params)
        return _dump(await _maybe_await(handlers.elicitation_handler(form)))
    if method == "sampling/createMessage" and handlers.sampling_handler is not None:
        sampling = CreateMessageRequestParams.model_validate(params)
        return _dump(await _maybe_await(handlers.sampling_handler(sampling)))
    if method == "roots/list" and handlers.roots is not None:
        roots = handlers.roots() if callable(handlers.roots) else handlers.roots
        if inspect.isawaitable(roots):
            roots = await roots
        return {"roots": [_dump(r) if isinstance(r, Root) else {"uri": r} for r in roots]}
    if method == "ping":
        return {}
    raise MCPError(METHOD_NOT_FOUND, f"this client does not handle {method}")


async def hear(handlers: Handlers, method: str, params: dict[str, Any]) -> None:
    """Hand one notification to its typed handler, then to the handler of every notification."""
    if method == "notifications/message" and handlers.log_handler is not None:
        await handlers.log_handler(LoggingMessageNotificationParams.model_validate(params))
    elif method == "notifications/progress" and handlers.progress_handler is not None:
        await handlers.progress_handler(ProgressNotificationParams.model_validate(params))
    if handlers.notification_handler is not None:
        try:
            await handlers.notification_handler(method, params)
        except Exception:  # the connection outlives a failing handler: it reads on
            logger.exception("notification_handler failed on %s", method)


def _dump(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(value, dict):
        raise TypeError(f"a handler must return a result model or dict, got {type(value).__name__}")
    value.pop("resultType", None)
    return value


async def _maybe_await(value: Any) -> Any:
    """A handler may be a plain function as well as a coroutine function: both answer the same way."""
    return await value if inspect.isawaitable(value) else value
