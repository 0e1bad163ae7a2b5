"""How a tool's return value becomes its result: decided once, from the return annotation, at registration.

The rules are the official SDK's, so a ported tool lists the same
`outputSchema` and answers the same `structuredContent`:

- a pydantic model or a TypedDict is the schema itself, as is `dict[str, X]`
  (titled `<tool>DictOutput`);
- any other class with annotated attributes (a dataclass, or an ordinary
  class) is read attribute by attribute into a model of those annotations; a
  class without annotations (and `Any`, `object`, `datetime`, ...) has no
  schema, and its value is sent as text;
- anything else (`str`, `int`, `float`, `None`, `list[...]`, unions,
  `Literal`, another `dict`) is wrapped as `{"result": value}`;
- content blocks, `Image` and `Audio` have no schema; `InputRequiredResult`
  arms of a union are dropped; `Annotated[CallToolResult, Model]` lists
  `Model`'s schema and checks the returned `structuredContent` against it.

The text content is the value itself (one block per item of a list or
tuple), JSON indented by 2 when it is not a string, as the official sends it.

Per call, a value of exactly `str`, `int` or `bool` where that is declared
skips the serializer; other values are dumped (not validated: a value of the
wrong type is sent as it dumps), except an annotated class's, which has to be
read through its model.
"""

from __future__ import annotations

import inspect
import logging
import sys
import types
from collections.abc import Callable
from typing import Annotated, Any, Union, cast, get_args, get_origin, get_type_hints

import pydantic_core
from mcp_types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ResourceLink,
    TextContent,
)
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    PydanticUserError,
    TypeAdapter,
    create_model,
)
from typing_extensions import NotRequired, Required, TypedDict, is_typeddict  # typing's are 3.11+

from .errors import InvalidSignature

__all__ = ["CONTENT_TYPES", "Output", "is_content_annotation", "output_for", "to_content"]

logger = logging.getLogger("mcp_resolve.tools")

CONTENT_TYPES = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)

_VERBATIM = (str, int, bool)
"""Return types whose values (of exactly that type) are already JSON."""

_WRAPPED_TYPES = (str, int, float, bool, bytes, type(None))


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def to_content(value: Any) -> list[dict[str, Any]]:
    """Any return value as a list of content blocks (wire dicts): a list or tuple one block per item."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, (int, float)):  # bool too: a number's JSON, without the general path below
        return [{"type": "text", "text": pydantic_core.to_json(value).decode()}]
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
    return [{"type": "text", "text": pydantic_core.to_json(value, fallback=str, indent=2).decode()}]


def is_content_annotation(annotation: Any) -> bool:
    """Whether the annotation declares content blocks (or a result) the model reads, not data."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return is_content_annotation(get_args(annotation)[0])
    if origin in (list, tuple, Union, types.UnionType):
        return any(is_content_annotation(arg) for arg in get_args(annotation) if arg is not Ellipsis)
    return isinstance(annotation, type) and (
        issubclass(annotation, (*CONTENT_TYPES, CallToolResult, InputRequiredResult))
        or hasattr(annotation, "to_content_block")
    )


class Output:
    """A typed return's `outputSchema`, and how each value becomes `structuredContent`."""

    def __init__(self, values: Any, described: Any, *, wrap: bool, from_attributes: bool = False) -> None:
        self.wrap = wrap
        """The value goes under `result` (the schema is a `<tool>Output` object with that one field)."""
        self.adapter: TypeAdapter[Any] = TypeAdapter(values)
        """Dumps (or, for an ordinary class, reads) the returned values."""
        self.schema = _inline_root_ref(TypeAdapter(described).json_schema(mode="serialization"))
        self._from_attributes = from_attributes
        self._verbatim = values if values in _VERBATIM else None

    def structured(self, value: Any) -> Any:
        if type(value) is self._verbatim:  # a str, int or bool is its own JSON form: no serializer needed
            return {"result": value}
        if self._from_attributes:  # an ordinary class: read through its model
            return self.adapter.validate_python(value).model_dump(mode="json", by_alias=True)
        if isinstance(value, BaseModel) and not self.wrap:  # its own dump: a subclass keeps its fields
            return value.model_dump(mode="json", by_alias=True)
        dumped = self.adapter.dump_python(value, mode="json", by_alias=True)
        return {"result": dumped} if self.wrap else dumped

    def check(self, structured_content: Any) -> None:
        """Raise unless a returned `CallToolResult`'s `structuredContent` fits the declared model."""
        self.adapter.validate_python(structured_content)


def output_for(tool_name: str, annotation: Any, structured_output: bool | None) -> Output | None:
    """The tool's structured output for its return annotation (extras kept), or None for text only.

    `annotation` is `inspect.Signature.empty` when the function declares none.
    """
    if structured_output is False:
        return None
    if annotation is inspect.Signature.empty:
        if structured_output:
            raise InvalidSignature(f"tool {tool_name}: structured_output=True needs a return annotation")
        return None
    base, metadata = _split(annotation)
    if get_origin(base) in (Union, types.UnionType):
        arms = get_args(base)
        kept = tuple(arm for arm in arms if not _is_type(arm, InputRequiredResult))
        if not kept:
            return None
        if len(kept) > 1 and any(_is_type(arm, CallToolResult) for arm in kept):
            raise InvalidSignature(
                f"tool {tool_name}: CallToolResult cannot be part of a union; "
                "return CallToolResult(content=[]) for an empty result"
            )
        if len(kept) != len(arms):
            annotation = kept[0] if len(kept) == 1 else Union[kept]  # a runtime tuple of arms
            base, metadata = _split(annotation)
    if _is_type(base, InputRequiredResult):
        return None
    if _is_type(base, CallToolResult):
        if not metadata:
            return None
        annotation = Annotated[tuple(metadata)] if len(metadata) > 1 else metadata[0]
        base, metadata = _split(annotation)
    elif structured_output is None and is_content_annotation(base):
        return None
    try:
        output = _output(tool_name, annotation, base)
    except (PydanticUserError, PydanticSchemaGenerationError, NameError, TypeError, ValueError) as exc:
        if structured_output:
            raise InvalidSignature(
                f"tool {tool_name}: return type {base!r} cannot be structured output: {exc}"
            ) from exc
        logger.warning(
            "tool %s: no outputSchema, its return type %r cannot be described (%s)", tool_name, base, exc
        )
        return None
    if output is None and structured_output:
        raise InvalidSignature(
            f"tool {tool_name}: return type {base!r} declares no fields for structured output"
        )
    return output


def _output(tool_name: str, annotation: Any, base: Any) -> Output | None:
    if isinstance(base, types.GenericAlias):
        if get_origin(base) is dict and get_args(base)[:1] == (str,):
            return Output(base, Annotated[base, Field(title=f"{tool_name}DictOutput")], wrap=False)
    elif isinstance(base, type) and base not in _WRAPPED_TYPES:
        if issubclass(base, BaseModel):
            return Output(base, base, wrap=False)
        if is_typeddict(base):
            readable = _readable_typeddict(base)
            return Output(readable, readable, wrap=False)
        hints = get_type_hints(base)
        if not hints:
            return None  # nothing says what it holds: sent as text
        model = _model_of_class(base, hints)
        return Output(model, model, wrap=False, from_attributes=True)
    return Output(annotation, create_model(f"{tool_name}Output", result=(annotation, ...)), wrap=True)


def _split(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """`Annotated[T, *meta]` as `(T, meta)`; anything else as `(annotation, ())`."""
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        return base, tuple(metadata)
    return annotation, ()


def _is_type(annotation: Any, cls: type) -> bool:
    return (
        isinstance(annotation, type)
        and not isinstance(annotation, types.GenericAlias)
        and issubclass(annotation, cls)
    )


def _model_of_class(cls: type, hints: dict[str, Any]) -> type[BaseModel]:
    """A model of an ordinary class's annotated attributes, its class-level values as defaults."""
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        if name.startswith("_"):
            continue
        fields[name] = (hint, getattr(cls, name)) if hasattr(cls, name) else (hint, ...)
    return create_model(cls.__name__, __config__=ConfigDict(from_attributes=True), **fields)


def _readable_typeddict(cls: type) -> Any:
    """A `typing.TypedDict` as pydantic can read it: before Python 3.12 it wants `typing_extensions`'."""
    if sys.version_info >= (3, 12) or type(cls).__module__ != "typing":
        return cls
    keys: dict[str, Any] = {}
    for name, hint in get_type_hints(cls, include_extras=True).items():
        while get_origin(hint) in (Required, NotRequired):
            hint = get_args(hint)[0]
        keys[name] = hint if name in cls.__required_keys__ else NotRequired[hint]  # type: ignore[attr-defined]
    # The functional form, with a name known only now (which type checkers cannot follow).
    make = cast("Callable[[str, dict[str, Any]], Any]", TypedDict)
    rebuilt = make(cls.__name__, keys)
    for attribute in ("__doc__", "__module__", "__qualname__"):
        setattr(rebuilt, attribute, getattr(cls, attribute, None))
    return rebuilt


def _inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema whose root is only a `$ref` (a self-referencing model) with that definition at the root.

    `outputSchema` must be an object schema at its root; `$defs` stays, for
    the references inside.
    """
    ref = schema.get("$ref")
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix):
        return schema
    rest = {key: value for key, value in schema.items() if key != "$ref"}
    return {**schema["$defs"][ref[len(prefix) :]], **rest}
