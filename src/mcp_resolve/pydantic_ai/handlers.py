"""The toolset's handlers, in the shapes pydantic-ai (after FastMCP) documents, adapted to our Client's.

A pydantic-ai user's elicitation handler is
`(message, response_type, params, context)` and returns an instance of
`response_type`, a dict, or a result with an `action` (to decline or
cancel); a sampling handler is `(messages, params, context)` and returns a
string or a `CreateMessageResult`; a progress handler is
`(progress, total, message)`; roots are a list or `(context) -> list`. Our
Client wants one-argument handlers that return the wire answer. These
adapters translate, so handlers written for pydantic-ai's `MCPToolset` work
unchanged here, on both protocol eras (our Client answers mid-call requests
and 2026-07-28 rounds through the same handler). No FastMCP import: the
`response_type` is a Pydantic model built from the question's schema.
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import mcp_types
import pydantic_core
from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    Root,
    SamplingMessage,
)
from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = [
    "ElicitationHandler",
    "HandlerContext",
    "LogHandler",
    "MessageHandler",
    "ProgressHandler",
    "RootsHandler",
    "RootsList",
    "SamplingHandler",
    "elicitation_adapter",
    "progress_adapter",
    "response_type_for",
    "roots_adapter",
    "sampling_adapter",
]

SAMPLED_MODEL_NAME = "mcp-resolve-client"
"""The `model` a sampling answer names when the handler returned bare text and so named none."""


@dataclass(frozen=True)
class HandlerContext:
    """The last argument of every handler: which toolset is asking on the server's behalf, and for what."""

    toolset: Any
    """The `MCPToolset` whose server asked."""
    method: str
    """The server's request: `elicitation/create`, `sampling/createMessage` or `roots/list`."""


ElicitationHandler: TypeAlias = Callable[
    [str, type[Any] | None, ElicitRequestFormParams, HandlerContext], Awaitable[Any]
]
"""`(message, response_type, params, context)`: return a `response_type` instance or a dict to accept,
or an object with `action` ("decline", "cancel"), e.g. `mcp_types.ElicitResult(action="decline")`."""

SamplingAnswer: TypeAlias = str | CreateMessageResult
SamplingHandler: TypeAlias = Callable[
    [list[SamplingMessage], CreateMessageRequestParams, HandlerContext],
    SamplingAnswer | Awaitable[SamplingAnswer],
]
"""`(messages, params, context)`: return the completion's text, or a full `CreateMessageResult`."""

LogHandler: TypeAlias = Callable[[LoggingMessageNotificationParams], Awaitable[None]]
ProgressHandler: TypeAlias = Callable[[float, float | None, str | None], Awaitable[None]]
"""`(progress, total, message)`; a task's status messages arrive here too, numbered in order."""
MessageHandler: TypeAlias = Callable[[mcp_types.ServerNotification | Exception], Awaitable[None]]
"""Every notification the server sends, as its `mcp_types` model (a FastMCP `MessageHandler` fits)."""
RootsList: TypeAlias = Sequence[str | Root]
RootsHandler: TypeAlias = Callable[[HandlerContext], RootsList | Awaitable[RootsList]]


async def _settled(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


# -- elicitation -----------------------------------------------------------------------------


def elicitation_adapter(
    handler: ElicitationHandler, context: HandlerContext
) -> Callable[[ElicitRequestFormParams], Awaitable[dict[str, Any]]]:
    async def answer(params: ElicitRequestFormParams) -> dict[str, Any]:
        response_type = response_type_for(params.requested_schema)
        result = await _settled(handler(params.message, response_type, params, context))
        return elicit_answer(result, params.requested_schema)

    return answer


def elicit_answer(result: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The wire answer: a result with an `action` says it; anything else is the accepted content."""
    action, content = "accept", result
    if not isinstance(result, dict) and isinstance(getattr(result, "action", None), str):
        action, content = result.action, getattr(result, "content", None)
    if isinstance(content, BaseModel):
        content = content.model_dump(mode="json", by_alias=True, exclude_none=True)
    content = pydantic_core.to_jsonable_python(content)
    if content is not None and not isinstance(content, dict):
        if set(schema.get("properties") or {}) != {"value"}:
            raise TypeError(f"an elicitation answer must be an object, got {type(content).__name__}")
        content = {"value": content}  # a one-value form (`Elicit(..., int)` style) answered with the value
    answer: dict[str, Any] = {"action": action}
    if action == "accept" and content is not None:
        answer["content"] = content
    return answer


_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}


def response_type_for(schema: dict[str, Any]) -> type[BaseModel] | None:
    """A Pydantic model of the form the server asked for (None for a form with no fields).

    Elicitation forms are flat (strings, numbers, booleans, enums, lists of
    enum values), so the mapping is small; anything else becomes `Any` and is
    left to the server, which validates every answer anyway.
    """
    properties = schema.get("properties") or {}
    if not properties:
        return None
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for index, (name, spec) in enumerate(properties.items()):
        spec = spec if isinstance(spec, dict) else {}
        field_name = name
        if (
            not name.isidentifier()
            or keyword.iskeyword(name)
            or name.startswith(("_", "model_"))
            or hasattr(BaseModel, name)
        ):
            field_name = f"field_{index}"
        default: Any = ... if name in required else spec.get("default")
        fields[field_name] = (
            _field_type(spec),
            Field(default, alias=name, description=spec.get("description"), title=spec.get("title")),
        )
    title = str(schema.get("title") or "ElicitationResponse")
    config = ConfigDict(populate_by_name=True)
    model: type[BaseModel] = create_model(
        title if title.isidentifier() else "ElicitationResponse", __config__=config, **fields
    )
    return model


def _field_type(spec: dict[str, Any]) -> Any:
    choices = _choices(spec)
    if choices:
        return Literal[tuple(choices)]  # type: ignore[valid-type]
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        return list[_field_type(items if isinstance(items, dict) else {})]  # type: ignore[misc]
    return _SCALARS.get(kind, Any) if isinstance(kind, str) else Any


def _choices(spec: dict[str, Any]) -> list[Any]:
    if isinstance(spec.get("enum"), list):
        return list(spec["enum"])
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list) and options and all(isinstance(o, dict) and "const" in o for o in options):
        return [o["const"] for o in options]
    return []


# -- sampling, progress, roots ---------------------------------------------------------------


def sampling_adapter(
    handler: SamplingHandler, context: HandlerContext
) -> Callable[[CreateMessageRequestParams], Awaitable[CreateMessageResult]]:
    async def answer(params: CreateMessageRequestParams) -> CreateMessageResult:
        result = await _settled(handler(params.messages, params, context))
        if isinstance(result, str):
            return CreateMessageResult(
                role="assistant",
                content=mcp_types.TextContent(type="text", text=result),
                model=SAMPLED_MODEL_NAME,
            )
        return result  # type: ignore[no-any-return]

    return answer


def progress_adapter(handler: ProgressHandler) -> Callable[[ProgressNotificationParams], Awaitable[None]]:
    async def on_progress(update: ProgressNotificationParams) -> None:
        await handler(update.progress, update.total, update.message)

    return on_progress


def roots_adapter(
    roots: RootsList | RootsHandler, context: HandlerContext
) -> Sequence[str | Root] | Callable[[], Awaitable[Sequence[str | Root]]]:
    """A list stays a list; a function of the context becomes the no-argument function our Client calls."""
    if not callable(roots):
        return [root if isinstance(root, Root) else str(root) for root in roots]
    handler = roots

    async def current() -> Sequence[str | Root]:
        found = await _settled(handler(context))
        return [root if isinstance(root, Root) else str(root) for root in found]

    return current
