"""The three outcomes of asking a person, and the form schema a question carries.

Elicitation forms are deliberately poor: a flat object of strings, numbers,
booleans and enums. `form_schema` renders a pydantic model into that shape and
refuses anything richer with a message naming the field, because a client
cannot show a form it does not understand and the person would be stuck.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError, WithJsonSchema

__all__ = [
    "AcceptedElicitation",
    "AcceptedUrlElicitation",
    "CancelledElicitation",
    "DeclinedElicitation",
    "ElicitationResult",
    "form_schema",
    "is_elicitation_result_type",
    "outcome_from_answer",
    "titled_choices",
    "url_outcome_from_answer",
]

ElicitSchemaModelT = TypeVar("ElicitSchemaModelT", bound=BaseModel)


class AcceptedElicitation(BaseModel, Generic[ElicitSchemaModelT]):
    """Result when user accepts the elicitation."""

    action: Literal["accept"] = "accept"
    data: ElicitSchemaModelT


class AcceptedUrlElicitation(BaseModel):
    """Result when the person agrees to visit the URL of a URL-mode question.

    Only consent: what happens at the URL stays out of band, and the server
    learns of it there (then may tell the client with
    `ctx.session.send_elicit_complete(elicitation_id)`).
    """

    action: Literal["accept"] = "accept"


class DeclinedElicitation(BaseModel):
    """Result when user declines the elicitation."""

    action: Literal["decline"] = "decline"


class CancelledElicitation(BaseModel):
    """Result when user cancels the elicitation."""

    action: Literal["cancel"] = "cancel"


if TYPE_CHECKING:
    ElicitationResult: TypeAlias = Union[
        AcceptedElicitation[ElicitSchemaModelT], DeclinedElicitation, CancelledElicitation
    ]
else:

    class _ElicitationResultAlias:
        """`ElicitationResult[T]` at runtime.

        Pydantic generic models do not take part in typing's TypeVar
        substitution, so a plain Union alias could not be subscripted; this
        builds the concrete union for each `T` instead.
        """

        def __getitem__(self, model: Any) -> Any:
            return Union[AcceptedElicitation[model], DeclinedElicitation, CancelledElicitation]

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            """Refused: the alias is an annotation. Callable only because Python 3.10's `Annotated`
            accepts nothing else as its type, and bare `ElicitationResult` must work there too."""
            raise TypeError("ElicitationResult is an annotation; build one of its member types instead")

        def __repr__(self) -> str:
            return "ElicitationResult"

    ElicitationResult = _ElicitationResultAlias()
"""The full outcome of a question: annotate a consumer with it to branch on decline/cancel."""

_OUTCOME_CLASSES = (DeclinedElicitation, CancelledElicitation)
ACCEPTED_ANY = AcceptedElicitation[Any]
"""Built once: subscripting a generic model costs microseconds per call even when pydantic has it cached."""
_PRIMITIVE_TYPES = {"string", "number", "integer", "boolean"}
_STRING_FORMATS = {"email", "uri", "date", "date-time"}
_SCHEMA_CACHE: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()
"""Weak: a resolver may build its form model at run time (`create_model`) on every round, and a
model nobody holds any more must not be kept alive by the schema rendered from it."""


def is_elicitation_result_type(annotation: Any) -> bool:
    """True when `annotation` is `ElicitationResult[T]`, bare `ElicitationResult`, or one of its member types.

    The bare alias means `ElicitationResult[Any]`: the consumer still wants the
    outcome to branch on, only the accepted data's type is left open.
    """
    if annotation is ElicitationResult or annotation in _OUTCOME_CLASSES or annotation is AcceptedElicitation:
        return True
    if isinstance(annotation, type) and issubclass(annotation, AcceptedElicitation):
        return True
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return all(is_elicitation_result_type(arm) for arm in get_args(annotation))
    return False


def form_schema(model: type[BaseModel]) -> dict[str, Any]:
    """Render `model` as an elicitation `requestedSchema`, or raise TypeError saying why it cannot be."""
    cached = _SCHEMA_CACHE.get(model)
    if cached is not None:
        return cached
    raw = model.model_json_schema()
    defs = raw.get("$defs", {})
    properties: dict[str, Any] = {}
    for name, prop in raw.get("properties", {}).items():
        properties[name] = _flatten_property(model, name, prop, defs)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    for key in ("title", "description"):  # the model's name and docstring, which the official sends too
        if key in raw:
            schema[key] = raw[key]
    if raw.get("required"):
        schema["required"] = list(raw["required"])
    _SCHEMA_CACHE[model] = schema
    return schema


def _flatten_property(model: type[BaseModel], name: str, prop: dict[str, Any], defs: dict[str, Any]) -> Any:
    prop = dict(prop)
    if "$ref" in prop:
        prop = {**defs[prop.pop("$ref").rsplit("/", 1)[-1]], **prop}
    if "allOf" in prop and len(prop["allOf"]) == 1:
        ref = prop.pop("allOf")[0]
        prop = {**_flatten_property(model, name, ref, defs), **prop}
    if "anyOf" in prop:
        arms = [arm for arm in prop["anyOf"] if arm.get("type") != "null"]
        if len(arms) != 1:
            raise TypeError(
                f"Elicitation schema {model.__name__}.{name}: unions are not allowed in elicitation forms"
            )
        del prop["anyOf"]
        prop = {**_flatten_property(model, name, arms[0], defs), **prop}
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items", {})
        if "$ref" in items:
            items = defs[items["$ref"].rsplit("/", 1)[-1]]
        if _titled_options(items.get("anyOf")):
            prop["items"] = {"anyOf": [dict(option) for option in items["anyOf"]]}
        elif items.get("type") == "string" and "enum" in items:
            prop["items"] = {"type": "string", "enum": list(items["enum"])}
        else:
            raise TypeError(
                f"Elicitation schema {model.__name__}.{name}: only arrays of string enums are allowed"
            )
    elif kind not in _PRIMITIVE_TYPES:
        raise TypeError(
            f"Elicitation schema {model.__name__}.{name}: type {kind or 'object'!r} is not allowed; "
            "use str, int, float, bool or an enum"
        )
    if kind == "string" and "format" in prop and prop["format"] not in _STRING_FORMATS:
        prop.pop("format")
    for key in ("$defs", "additionalProperties"):
        prop.pop(key, None)
    return prop


def _titled_options(options: Any) -> bool:
    """True for a non-empty list of `{"const": str, "title": str}`: a titled multi-select's items."""
    return (
        isinstance(options, list)
        and bool(options)
        and all(
            isinstance(o, dict)
            and set(o) == {"const", "title"}
            and all(isinstance(v, str) for v in o.values())
            for o in options
        )
    )


def titled_choices(titles: Mapping[str, str], *, multiple: bool = False) -> WithJsonSchema:
    """Display titles for a choice field: `Annotated` metadata on a `Literal[...]` or `list[Literal[...]]`.

    The form shows each title and the answer carries the value, which pydantic
    still checks against the Literal; `multiple=True` makes a multi-select.
    """
    options = [{"const": value, "title": title} for value, title in titles.items()]
    if multiple:
        return WithJsonSchema({"type": "array", "items": {"anyOf": options}})
    return WithJsonSchema({"type": "string", "oneOf": options})


def url_outcome_from_answer(
    answer: dict[str, Any],
) -> AcceptedUrlElicitation | DeclinedElicitation | CancelledElicitation:
    """Turn the answer to a URL-mode question into an outcome (it carries no content)."""
    action = answer.get("action")
    if action == "accept":
        return AcceptedUrlElicitation()
    if action == "decline":
        return DeclinedElicitation()
    if action == "cancel":
        return CancelledElicitation()
    raise ValueError(f"unknown elicitation action {action!r}")


def outcome_from_answer(
    model: type[BaseModel], answer: dict[str, Any]
) -> AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation:
    """Turn an `ElicitResult`-shaped answer into an outcome, validating accepted content.

    Raises ValueError with a reader-friendly reason when the answer does not
    conform, so the caller can name the resolver that asked.
    """
    action = answer.get("action")
    if action == "decline":
        return DeclinedElicitation()
    if action == "cancel":
        return CancelledElicitation()
    if action != "accept":
        raise ValueError(f"Received a non-elicitation response (action {action!r})")
    content = answer.get("content")
    if content is None:  # an accept that carries nothing is no answer, even to a form of optional fields
        raise ValueError("Received an accepted elicitation with no content")
    if not isinstance(content, dict):
        raise ValueError("Received an accepted elicitation whose content is not an object")
    try:
        data = model.model_validate(content)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(
            "Received an accepted elicitation whose content does not match the requested schema "
            f"({model.__name__}): {problems}"
        ) from None
    return ACCEPTED_ANY(data=data)
