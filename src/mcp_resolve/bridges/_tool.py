"""A tool described by a JSON Schema and served by an async call, not by a Python signature.

A proxied tool, an OpenAPI operation or a mounted server's tool arrives as a
name, an input schema and somewhere to send the arguments. Its arguments may
be called anything (`from`, `customer-id`), so they never become Python
parameters: the call gets them as the dict the client sent, minus what it
may not choose. `hide` names those: each leaves the served schema and is
filled by the resolver graph (the caller's token, a database, a question to
the person), exactly as `Annotated[T, Resolve(fn)]` fills a parameter of a
decorated tool; whatever a client sends under that name is dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, create_model
from pydantic_core import to_jsonable_python

from .._signature import ArgumentError, HandlerSignature, Overrides
from ..context import Context
from ..errors import InvalidSignature, ToolError
from ..resolve import Resolve
from ..tools import Tool

__all__ = ["BridgeCall", "BridgedTool", "bridged_tool"]

BridgeCall = Callable[[dict[str, Any], Context], Awaitable[CallToolResult | dict[str, Any]]]
"""`await call(arguments, context)`: the arguments as sent (hidden ones filled), the result as a
`CallToolResult` or its wire dict (`{"content": [...], "isError": ...}`)."""

_NO_FIELDS: type[BaseModel] = create_model("BridgedArguments")
"""The (empty) arguments model of every bridged tool: its schema is the one it was given."""


class _BridgedSignature(HandlerSignature):
    """The arguments of a schema-described tool: passed through as a dict, hidden names filled by resolvers."""

    hidden: frozenset[str] = frozenset()
    required: tuple[str, ...] = ()
    """The schema's required arguments a client still sends (hidden ones are filled, not sent)."""

    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments the client sent, minus hidden names; a missing required one fails here.

        The rest of the schema is the call's to enforce (an upstream server
        validates its own arguments): checking it twice would cost every call
        and could disagree with the server that owns it.
        """
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, Mapping):
            raise ArgumentError("(arguments): Input should be an object")
        hidden = self.hidden
        values = {key: value for key, value in arguments.items() if key not in hidden}
        missing = [name for name in self.required if name not in values]
        if missing:
            raise ArgumentError("; ".join(f"{name}: Field required" for name in missing))
        return values

    async def invoke(self, arguments: dict[str, Any], context: Context) -> Any:
        if not self.resolved_params:
            return await self.fn(arguments, context)
        return await super().invoke(arguments, context)

    async def _run_body(self, values: dict[str, Any], context: Context) -> Any:
        # Resolved values go on the wire: a model or a date becomes its JSON form here.
        for name in self.hidden:
            if name in values:
                values[name] = to_jsonable_python(values[name])
        return await self.fn(values, context)


class BridgedTool(Tool):
    """A tool whose schema and call come from elsewhere (`bridged_tool` builds one)."""

    def __init__(
        self,
        name: str,
        input_schema: Mapping[str, Any],
        call: BridgeCall,
        *,
        hide: Mapping[str, Resolve] | None = None,
        title: str | None = None,
        description: str | None = None,
        output_schema: Mapping[str, Any] | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        icons: list[Any] | None = None,
        scopes: Sequence[str] | None = None,
    ) -> None:
        if not callable(call):
            raise TypeError(f"bridged tool {name}: call must be an async function, not {call!r}")
        self.hidden = _checked_hide(name, input_schema, hide)
        """Each hidden argument and the resolver that fills it."""
        self.upstream_schema = dict(input_schema)
        """The schema as given, hidden arguments included."""
        self.declared_output_schema = dict(output_schema) if output_schema is not None else None
        super().__init__(
            call,
            name=name,
            title=title,
            description=description or "",
            annotations=annotations,
            structured_output=False,
            single_use=False,
            meta=meta,
            icons=icons,
            overrides=Overrides(),
            input_schema=_served_schema(input_schema, self.hidden),
            scopes=scopes,
        )

    def _analyse(self, fn: Callable[..., Any], overrides: Overrides) -> HandlerSignature:
        return self._signature(fn, self.name, self.hidden, overrides)

    def guarded_signature(
        self, name: str, hidden: Mapping[str, Resolve], overrides: Overrides
    ) -> HandlerSignature:
        """How calls reach this tool when `hidden` arguments are filled too (a mount's `hide=`)."""
        return self._signature(self.fn, name, {**self.hidden, **hidden}, overrides)

    def _signature(
        self, fn: Callable[..., Any], name: str, hidden: Mapping[str, Resolve], overrides: Overrides
    ) -> HandlerSignature:
        properties = self.upstream_schema.get("properties") or {}
        visible = tuple(key for key in properties if key not in hidden)
        required = self.upstream_schema.get("required") or ()
        signature = _BridgedSignature(
            fn=fn,
            name=name,
            arguments_model=_NO_FIELDS,
            argument_names=visible,
            context_params=(),
            resolved_params={key: (marker, False) for key, marker in hidden.items()},
            is_async=True,
            overrides=overrides,
        )
        signature.hidden = frozenset(hidden)
        signature.required = tuple(key for key in required if isinstance(key, str) and key not in hidden)
        signature.plans()  # a bad resolver graph fails now, at registration
        return signature

    def definition(self) -> dict[str, Any]:
        definition = super().definition()
        if self.declared_output_schema is not None and "outputSchema" not in definition:
            definition["outputSchema"] = self.declared_output_schema
        return definition

    def convert_result(self, value: Any) -> dict[str, Any]:
        """A wire dict passes as it is (a relayed result is already one); models are dumped."""
        if isinstance(value, dict):
            if value.get("resultType") == "input_required":  # a round of the call's own (a relayed question)
                return value
            if not isinstance(value.get("content"), list):
                raise ToolError("the bridged call returned no content list")
            return value
        if isinstance(value, (CallToolResult, InputRequiredResult)):
            return super().convert_result(value)
        raise ToolError(f"the bridged call returned {type(value).__name__}, not a CallToolResult")


def bridged_tool(
    name: str,
    input_schema: Mapping[str, Any],
    call: BridgeCall,
    *,
    hide: Mapping[str, Resolve] | None = None,
    title: str | None = None,
    description: str | None = None,
    output_schema: Mapping[str, Any] | None = None,
    annotations: ToolAnnotations | dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    icons: list[Any] | None = None,
    scopes: Sequence[str] | None = None,
) -> BridgedTool:
    """A tool described by `input_schema` whose calls go to `await call(arguments, context)`.

    Register it with `mcp.add_tool(tool)` or `MCPServer(tools=[tool])`.
    `arguments` is the dict the client sent (names need not be Python
    identifiers; an optional argument left out stays out). `hide` maps an
    argument name to `Resolve(fn)`: that argument leaves the served schema
    (`properties` and `required`), a client's value for it is dropped, and
    `fn`, run by the resolver engine like any resolver (it may take the
    Context, other resolvers, or visible arguments by name), supplies it.
    `call` returns a `CallToolResult` or its wire dict.
    """
    return BridgedTool(
        name,
        input_schema,
        call,
        hide=hide,
        title=title,
        description=description,
        output_schema=output_schema,
        annotations=annotations,
        meta=meta,
        icons=icons,
        scopes=scopes,
    )


def _checked_hide(
    name: str, schema: Mapping[str, Any], hide: Mapping[str, Resolve] | None
) -> dict[str, Resolve]:
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise InvalidSignature(f"bridged tool {name}: input_schema must be a JSON Schema with type 'object'")
    if not hide:
        return {}
    properties = schema.get("properties") or {}
    hidden: dict[str, Resolve] = {}
    for argument, marker in hide.items():
        if not isinstance(marker, Resolve):
            raise InvalidSignature(
                f"bridged tool {name}: hide[{argument!r}] must be Resolve(fn), not {type(marker).__name__}"
            )
        if argument not in properties:
            raise InvalidSignature(
                f"bridged tool {name}: hides {argument!r}, which its input schema does not have "
                f"(arguments: {', '.join(sorted(properties)) or 'none'})"
            )
        hidden[argument] = marker
    return hidden


def _served_schema(schema: Mapping[str, Any], hidden: Mapping[str, Resolve]) -> dict[str, Any]:
    """The schema a client sees: the hidden arguments gone from `properties` and `required`."""
    served = dict(schema)
    if not hidden:
        return served
    served["properties"] = {k: v for k, v in (schema.get("properties") or {}).items() if k not in hidden}
    required = [key for key in schema.get("required") or () if key not in hidden]
    if required:
        served["required"] = required
    else:
        served.pop("required", None)
    return served
