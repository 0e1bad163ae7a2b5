"""A registered tool: its wire description, and how a call becomes a `CallToolResult`.

The input schema is the signature's model-facing arguments as pydantic sees
them; a typed return adds an output schema and `structuredContent`. Every
failure an author can cause (bad arguments, `ToolError` or `ResourceError`, a
declined question, an unexpected exception) becomes a tool error result the
model can read; only protocol problems (`MCPError`) become JSON-RPC errors.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import types
from collections.abc import Callable, Sequence
from typing import Any, Union, get_args, get_origin, get_type_hints

import pydantic_core
from mcp_types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ResourceLink,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, TypeAdapter, create_model
from typing_extensions import is_typeddict  # knows typing_extensions.TypedDict (pydantic's before 3.12)

from .context import Context
from .errors import (
    InvalidSignature,
    MCPError,
    ResourceError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)
from .protocol.param_headers import InvalidHeaderDeclaration, header_declarations
from .signature import ArgumentError, HandlerSignature, Overrides

__all__ = ["Tool", "error_result", "to_content"]

logger = logging.getLogger("mcp_resolve.tools")

CONTENT_TYPES = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def to_content(value: Any) -> list[dict[str, Any]]:
    """Any return value as a list of content blocks (wire dicts)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, CONTENT_TYPES):
        return [_dump(value)]
    to_block = getattr(value, "to_content_block", None)
    if callable(to_block):
        return [_dump(to_block())]
    if isinstance(value, (list, tuple)):
        blocks: list[dict[str, Any]] = []
        for item in value:
            blocks.extend(to_content(item))
        return blocks
    return [{"type": "text", "text": pydantic_core.to_json(value, fallback=str).decode()}]


def error_result(tool_name: str, message: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": f"Error executing tool {tool_name}: {message}"}],
        "isError": True,
    }


def _is_content_annotation(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, tuple, Union, types.UnionType):
        return any(_is_content_annotation(arg) for arg in get_args(annotation) if arg is not Ellipsis)
    return isinstance(annotation, type) and (
        issubclass(annotation, (*CONTENT_TYPES, CallToolResult, InputRequiredResult))
        or hasattr(annotation, "to_content_block")
    )


def _is_object_type(annotation: Any) -> bool:
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation) or is_typeddict(annotation)
    ):
        return True
    return get_origin(annotation) is dict


_VERBATIM = (str, int, bool)
"""Return types whose values (of exactly that type) are already JSON."""


class _Output:
    """How a typed return becomes `structuredContent`, decided once at registration."""

    def __init__(self, tool_name: str, annotation: Any) -> None:
        self.wrap = not _is_object_type(annotation)
        if self.wrap:
            model = create_model(f"{tool_name}Output", result=(annotation, ...))
            self.schema = model.model_json_schema(mode="serialization")
        else:
            self.schema = TypeAdapter(annotation).json_schema(mode="serialization")
        self.adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        self._verbatim = annotation if annotation in _VERBATIM else None

    def structured(self, value: Any) -> Any:
        if type(value) is self._verbatim:  # a str, int or bool is its own JSON form: no serializer needed
            return {"result": value}
        dumped = self.adapter.dump_python(value, mode="json")
        return {"result": dumped} if self.wrap else dumped


class Tool:
    """One tool: registered once, called many times."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        annotations: ToolAnnotations | dict[str, Any] | None,
        structured_output: bool | None,
        single_use: bool,
        meta: dict[str, Any] | None,
        icons: list[Any] | None,
        overrides: Overrides,
        input_schema: dict[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        task_support: str | None = None,
        resolve_before_task: bool = False,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.scopes: tuple[str, ...] = _checked_scopes(self.name, scopes)
        """OAuth scopes a caller's token must hold (a protected HTTP server answers 403 without them)."""
        self.title = title
        self.description = description or inspect.getdoc(fn) or ""
        """Sent even when empty, as the official SDK does."""
        self.annotations = (
            ToolAnnotations.model_validate(annotations) if isinstance(annotations, dict) else annotations
        )
        self.single_use = single_use
        self.meta = meta
        self.icons = icons
        self.signature = HandlerSignature.analyse(fn, self.name, overrides, model_suffix="Arguments")
        self.input_schema = self._input_schema(input_schema)
        self.param_headers = self._param_headers()
        self.output = self._output_spec(structured_output)
        self._definition: dict[str, Any] | None = None
        self.task_support = _checked_task_support(self.name, task_support, resolve_before_task)
        """"optional" or "required": calls become tasks when the request declares the tasks extension."""
        self.resolve_before_task = resolve_before_task
        """Resolvers (and their questions) run in the request; the task runs only the body."""
        if resolve_before_task:
            from .tasks.runner import wait_for_task  # only task tools load the task runner

            self.signature.before_body = wait_for_task

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        context_kwarg: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> Tool:
        """A tool built before any server, for `MCPServer(tools=[...])`: the official SDK's constructor.

        `context_kwarg` is accepted for its signature and not needed: a
        Context parameter is found by its annotation. The server the tool
        joins supplies its `dependency_overrides`.
        """
        return cls(
            fn,
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            structured_output=structured_output,
            single_use=False,
            meta=meta,
            icons=icons,
            overrides=Overrides(),
        )

    def use_overrides(self, overrides: Overrides) -> None:
        """Resolve through `overrides` from now on (a prebuilt tool joining a server)."""
        self.signature.use_overrides(overrides)

    def _input_schema(self, declared: dict[str, Any] | None) -> dict[str, Any]:
        """The signature's schema, or the author's own served verbatim (the signature still validates calls)."""
        if declared is None:
            return self.signature.arguments_model.model_json_schema()
        if declared.get("type") != "object":
            raise InvalidSignature(f"tool {self.name}: input_schema must be a JSON Schema with type 'object'")
        return declared

    def _param_headers(self) -> dict[tuple[str, ...], str]:
        """The `x-mcp-header` mirroring declared in the input schema, checked now so a bad one never ships."""
        try:
            return header_declarations(self.input_schema)
        except InvalidHeaderDeclaration as exc:
            raise InvalidSignature(f"tool {self.name}: {exc}") from None

    def _output_spec(self, structured_output: bool | None) -> _Output | None:
        if structured_output is False:
            return None
        try:
            annotation = get_type_hints(self.fn).get("return", inspect.Signature.empty)
        except Exception:
            annotation = inspect.Signature.empty
        if annotation in (inspect.Signature.empty, None, type(None)) or _is_content_annotation(annotation):
            if structured_output:
                raise TypeError(f"tool {self.name}: structured_output=True needs a typed, non-content return")
            return None
        return _Output(self.name, annotation)

    def definition(self) -> dict[str, Any]:
        if self._definition is None:
            definition: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
            if self.title:
                definition["title"] = self.title
            definition["description"] = self.description
            if self.output is not None:
                definition["outputSchema"] = self.output.schema
            if self.annotations is not None:
                definition["annotations"] = _dump(self.annotations)
            if self.icons:
                definition["icons"] = [_dump(i) if isinstance(i, BaseModel) else i for i in self.icons]
            if self.meta:
                definition["_meta"] = self.meta
            self._definition = definition
        return self._definition

    async def call(self, arguments: dict[str, Any] | None, context: Context) -> dict[str, Any]:
        """Run the tool; the answer is a CallToolResult or InputRequiredResult as a wire dict."""
        try:
            values = self.signature.validate(arguments)
        except ArgumentError as exc:
            return error_result(self.name, f"invalid arguments: {exc}")
        try:
            value = await self.signature.invoke(values, context)
        except MCPError:
            raise
        except (
            ToolError,
            ResourceError,
            InvalidSignature,
        ) as exc:  # InvalidSignature: an override at call time
            if isinstance(exc, (UnexpectedToolError, UnexpectedResourceError)):
                logger.error("tool %s: a tool or resource it used crashed", self.name, exc_info=exc)
            return error_result(self.name, str(exc))
        except Exception as exc:
            logger.exception("tool %s raised", self.name)
            return error_result(self.name, _describe_unexpected(exc))
        return self.convert_result(value)

    def convert_result(self, value: Any) -> dict[str, Any]:
        if isinstance(value, InputRequiredResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(value, CallToolResult):
            return _dump(value)
        result: dict[str, Any] = {}
        if self.output is not None:
            structured = self.output.structured(value)
            shown = structured["result"] if self.output.wrap else structured
            text = shown if isinstance(shown, str) else pydantic_core.to_json(shown).decode()
            result["content"] = [{"type": "text", "text": text}]
            result["structuredContent"] = structured
        else:
            result["content"] = to_content(value)
        result["isError"] = False
        return result


def _checked_scopes(tool_name: str, scopes: Sequence[str] | None) -> tuple[str, ...]:
    if scopes is None:
        return ()
    if isinstance(scopes, str):
        raise InvalidSignature(f"tool {tool_name}: scopes must be a list of scopes, e.g. [{scopes!r}]")
    from .auth.tokens import check_scope  # only tools that declare scopes load the auth types

    try:
        return tuple(dict.fromkeys(check_scope(scope) for scope in scopes))
    except ValueError as exc:
        raise InvalidSignature(f"tool {tool_name}: {exc}") from None


def _checked_task_support(tool_name: str, task_support: str | None, resolve_before_task: bool) -> str | None:
    if task_support not in (None, "forbidden", "optional", "required"):
        raise InvalidSignature(
            f"tool {tool_name}: task_support must be 'optional', 'required' or 'forbidden', not {task_support!r}"
        )
    if resolve_before_task and task_support in (None, "forbidden"):
        raise InvalidSignature(
            f"tool {tool_name}: resolve_before_task needs task_support 'optional' or 'required'"
        )
    return None if task_support == "forbidden" else task_support


def _describe_unexpected(exc: Exception) -> str:
    """What the model learns of an exception nobody meant to show it: its kind, not its text.

    An unexpected exception's message may carry internals (a key, a path, a
    query), so it goes to the server log with the traceback; raise ToolError
    for a message the model should read.
    """
    return f"unexpected error ({type(exc).__name__}); the details are in the server log"
