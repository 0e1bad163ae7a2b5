"""A registered tool: its wire description, and how a call becomes a `CallToolResult`.

The input schema is the signature's model-facing arguments as pydantic sees
them; a typed return adds an output schema and `structuredContent` (`output.py`). Every
failure an author can cause (bad arguments, `ToolError` or `ResourceError`, a
declined question, an unexpected exception) becomes a tool error result the
model can read; only protocol problems (`MCPError`) become JSON-RPC errors.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any, get_type_hints

from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel

from ._output import Output, output_for, to_content
from ._signature import ArgumentError, HandlerSignature, Overrides
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

__all__ = ["BodyGate", "Tool", "error_result", "to_content"]

logger = logging.getLogger("mcp_resolve.tools")


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def error_result(tool_name: str, message: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": f"Error executing tool {tool_name}: {message}"}],
        "isError": True,
    }


class BodyGate(Context):
    """The Context of a call whose body waits, once its resolvers are done, until it may run.

    A tool registered with `resolve_before_task=True` awaits `hold_body` of
    such a context between its resolvers and its body; with any other context
    (the same tool called without a task, or directly) the body runs at once.
    The tasks extension makes one per call it starts that way, and answers the
    request with a task only when the body is reached.
    """

    __slots__ = ()

    async def hold_body(self) -> None:
        """Return when the body may run; raise `ToolError` to refuse it (the call's result says why)."""


async def _hold_body(context: Context) -> None:
    if isinstance(context, BodyGate):
        await context.hold_body()


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
        self.detailed_errors = False
        """Whether a crash's result names the exception's class (`MCPServer(detailed_tool_errors=True)`);
        by default it reads `Error executing tool NAME`, as the official's does. Set by the registry."""
        self.meta = meta
        self.icons = icons
        self.signature = self._analyse(fn, overrides)
        self.input_schema = self._input_schema(input_schema)
        self.param_headers = self._param_headers()
        self.output = self._output_spec(structured_output)
        self._definition: dict[str, Any] | None = None
        self.task_support = _checked_task_support(self.name, task_support, resolve_before_task)
        """"optional" or "required": calls become tasks when the request declares the tasks extension."""
        self.resolve_before_task = resolve_before_task
        """Resolvers (and their questions) run in the request; the task runs only the body."""
        if resolve_before_task:
            self.signature.before_body = _hold_body

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

    def _analyse(self, fn: Callable[..., Any], overrides: Overrides) -> HandlerSignature:
        """How calls reach `fn`: its Python signature here; a bridged tool's comes from its JSON Schema."""
        return HandlerSignature.analyse(fn, self.name, overrides, model_suffix="Arguments")

    def use_overrides(self, overrides: Overrides) -> None:
        """Resolve through `overrides` from now on (a prebuilt tool joining a server)."""
        self.signature.use_overrides(overrides)

    @property
    def context_kwarg(self) -> str | None:
        """The name of the parameter that receives the `Context`, or None (the official `Tool.context_kwarg`)."""
        return self.signature.context_params[0] if self.signature.context_params else None

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

    def _output_spec(self, structured_output: bool | None) -> Output | None:
        if structured_output is False:
            return None
        try:
            annotation = get_type_hints(self.fn, include_extras=True).get("return", inspect.Signature.empty)
        except Exception:
            annotation = inspect.Signature.empty
        return output_for(self.name, annotation, structured_output)

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
            return self.convert_result(value)
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
            logger.exception("tool %s raised, or its result could not be converted", self.name)
            if self.detailed_errors:
                return error_result(self.name, _describe_unexpected(exc))
            return {
                "content": [{"type": "text", "text": f"Error executing tool {self.name}"}],
                "isError": True,
            }

    def convert_result(self, value: Any) -> dict[str, Any]:
        """The tool's return value as its wire result (`output.py` says how)."""
        if type(value) not in _NOT_RESULT_MODELS:
            if isinstance(value, InputRequiredResult):
                return value.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(value, CallToolResult):
                if self.output is not None and not value.is_error:
                    self.output.check(value.structured_content)
                return _dump(value)
        if self.output is None:
            return {"content": to_content(value), "isError": False}
        return {
            "content": to_content(value),
            "structuredContent": self.output.structured(value),
            "isError": False,
        }


_NOT_RESULT_MODELS = frozenset({str, int, float, bool, type(None), list, dict, tuple})
"""Exact types that are no result model: their values skip `isinstance` against pydantic models, which
costs a failed attribute lookup (an exception raised and caught) per check on a plain value."""


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
