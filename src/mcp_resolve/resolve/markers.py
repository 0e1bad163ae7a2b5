"""The markers an author writes: `Resolve` in annotations or defaults, `Elicit`/`Sample`/`ListRoots` as return values.

A marker is a description of a question, never the asking of it: the engine
decides when and over which wire the question travels, so the same resolver
works mid-call on the handshake era and batched on 2026-07-28.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar

from mcp_types import ModelHint, ModelPreferences, SamplingMessage, TextContent, Tool, ToolChoice
from pydantic import BaseModel

__all__ = ["Elicit", "ListRoots", "QuestionMarker", "Resolve", "Sample"]

T = TypeVar("T", bound=BaseModel)


class Resolve:
    """Marker for `Annotated[T, Resolve(fn)]`: fill the parameter by running `fn`.

    `param: T = Resolve(fn)` (the FastAPI `= Depends(fn)` habit) means the
    same and is analysed the same way, so neither spelling ever leaves the
    parameter in the input schema or lets a client set it.

    `carry=True` keeps the resolver to one run per call on 2026-07-28, where
    a call that asks questions takes several rounds and each round is a
    request that would run it again: the value it gave in the round that
    computed it rides the sealed `requestState` (as JSON of its return
    annotation) and later rounds restore it instead of running it. Every
    `Resolve` of one resolver in a handler must agree on `carry`, since a
    resolver has one value per call; on the handshake era (one request per
    call) it changes nothing.
    """

    __slots__ = ("carry", "fn")

    def __init__(self, fn: Callable[..., Any], *, carry: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"Resolve() needs a callable, got {fn!r}")
        if not isinstance(carry, bool):
            raise TypeError(f"Resolve(carry=...) takes True or False, got {carry!r}")
        self.fn = fn
        self.carry = carry

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", self.fn)
        return f"Resolve({name!r}, carry=True)" if self.carry else f"Resolve({name!r})"


class Elicit(Generic[T]):
    """A resolver's request to ask the person a form question shaped by `schema`.

    The schema is a pydantic model restricted to what elicitation forms allow
    (flat object of strings, numbers, booleans and enums); it is checked when
    the question is rendered, so a bad model fails the call with a clear error.
    `key` names the question in `inputRequests` when a client expects a
    particular name; by default it is the resolver's module-qualified name.
    """

    __slots__ = ("key", "message", "schema")

    def __init__(self, message: str, schema: type[T], *, key: str | None = None) -> None:
        self.message = message
        self.schema = schema
        self.key = key

    def __repr__(self) -> str:
        return f"Elicit({self.message!r}, {self.schema.__name__})"


class Sample:
    """A resolver's request to sample the client's LLM (`sampling/createMessage`).

    On 2026-07-28 the request must render identically across rounds, because
    the recorded answer is matched to a digest of the rendered question.
    `key` names the question on the wire, as for `Elicit`.
    """

    __slots__ = (
        "include_context",
        "key",
        "max_tokens",
        "messages",
        "metadata",
        "model_preferences",
        "stop_sequences",
        "system_prompt",
        "temperature",
        "tool_choice",
        "tools",
    )

    def __init__(
        self,
        messages: str | Sequence[SamplingMessage | dict[str, Any] | str],
        *,
        max_tokens: int = 1024,
        system_prompt: str | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: ModelPreferences | dict[str, Any] | Sequence[str] | str | None = None,
        tools: Sequence[Tool | dict[str, Any]] | None = None,
        tool_choice: ToolChoice | dict[str, Any] | None = None,
        key: str | None = None,
    ) -> None:
        self.key = key
        self.messages = _normalize_messages(messages)
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.include_context = include_context
        self.temperature = temperature
        self.stop_sequences = list(stop_sequences) if stop_sequences is not None else None
        self.metadata = metadata
        self.model_preferences = _normalize_preferences(model_preferences)
        self.tools = [t if isinstance(t, Tool) else Tool.model_validate(t) for t in tools] if tools else None
        self.tool_choice = (
            tool_choice
            if tool_choice is None or isinstance(tool_choice, ToolChoice)
            else ToolChoice.model_validate(tool_choice)
        )

    @property
    def uses_tools(self) -> bool:
        return bool(self.tools) or self.tool_choice is not None

    def __repr__(self) -> str:
        return f"Sample({len(self.messages)} message(s), max_tokens={self.max_tokens})"


class ListRoots:
    """A resolver's request for the client's roots (`roots/list`)."""

    __slots__ = ("key",)

    def __init__(self, *, key: str | None = None) -> None:
        self.key = key

    def __repr__(self) -> str:
        return "ListRoots()"


QuestionMarker = Elicit[Any] | Sample | ListRoots
"""Anything a resolver may return to ask the client instead of answering itself."""


def _normalize_messages(
    messages: str | Sequence[SamplingMessage | dict[str, Any] | str],
) -> list[SamplingMessage]:
    if isinstance(messages, str):
        messages = [messages]
    normalized: list[SamplingMessage] = []
    for message in messages:
        if isinstance(message, SamplingMessage):
            normalized.append(message)
        elif isinstance(message, str):
            normalized.append(SamplingMessage(role="user", content=TextContent(type="text", text=message)))
        else:
            normalized.append(SamplingMessage.model_validate(message))
    return normalized


def _normalize_preferences(
    preferences: ModelPreferences | dict[str, Any] | Sequence[str] | str | None,
) -> ModelPreferences | None:
    if preferences is None or isinstance(preferences, ModelPreferences):
        return preferences
    if isinstance(preferences, str):
        return ModelPreferences(hints=[ModelHint(name=preferences)])
    if isinstance(preferences, dict):
        return ModelPreferences.model_validate(preferences)
    return ModelPreferences(hints=[ModelHint(name=name) for name in preferences])
