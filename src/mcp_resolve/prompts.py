"""Prompts: a function's arguments become the prompt's arguments, its return the messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp_types import InputRequiredResult, PromptMessage

from ._signature import HandlerSignature, Overrides
from .context import Context
from .tools import to_content

__all__ = ["Prompt"]


def _messages(value: Any) -> list[dict[str, Any]]:
    items = value if isinstance(value, (list, tuple)) else [value]
    messages: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, PromptMessage):
            messages.append(item.model_dump(by_alias=True, exclude_none=True, mode="json"))
        elif isinstance(item, dict) and "role" in item:
            messages.append(
                PromptMessage.model_validate(item).model_dump(by_alias=True, exclude_none=True, mode="json")
            )
        else:
            messages.extend({"role": "user", "content": block} for block in to_content(item))
    return messages


class Prompt:
    """One prompt template."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        meta: dict[str, Any] | None,
        overrides: Overrides,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.title = title
        self.description = description or inspect.getdoc(fn) or ""
        """Sent even when empty, in the listing and in every answer, as the official SDK does."""
        self.meta = meta
        self.signature = HandlerSignature.analyse(fn, self.name, overrides, model_suffix="Arguments")
        self.arguments = []
        for arg in self.signature.argument_names:
            info = self.signature.field_info(arg)
            entry: dict[str, Any] = {"name": arg, "required": info.is_required()}
            if info.description:
                entry["description"] = info.description
            self.arguments.append(entry)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Prompt:
        """A prompt built before any server, for `mcp.add_prompt()`; the server it joins supplies its overrides."""
        return cls(fn, name=name, title=title, description=description, meta=meta, overrides=Overrides())

    def use_overrides(self, overrides: Overrides) -> None:
        """Resolve through `overrides` from now on (a prebuilt prompt joining a server)."""
        self.signature.use_overrides(overrides)

    def definition(self) -> dict[str, Any]:
        definition: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.title:
            definition["title"] = self.title
        definition["description"] = self.description
        if self.meta:
            definition["_meta"] = self.meta
        return definition

    async def render(self, arguments: dict[str, Any] | None, context: Context) -> dict[str, Any]:
        value = await self.signature.run_detached(arguments, context, failing=f"rendering prompt {self.name}")
        if isinstance(value, InputRequiredResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        return {"description": self.description, "messages": _messages(value)}
