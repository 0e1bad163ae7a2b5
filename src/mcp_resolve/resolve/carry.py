"""Carrying a resolver's value from one 2026-07-28 round to the next: `Resolve(fn, carry=True)`.

A call that asks questions takes several rounds, and each round is a request
that runs the resolvers it needs again. A resolver marked `carry=True` runs in
the round that can first compute it; when that round ends with questions, its
value is written as JSON (through a pydantic `TypeAdapter` of its return
annotation) into the round's state record, which the protocol layer seals into
`requestState`. Later rounds validate it back to that type instead of running
the resolver. Everything that decides whether a value *can* be carried is
checked at registration (`carried_type`); at run time only the value itself
can fail (a resolver returning something its annotation does not describe,
or a value over `MAX_CARRIED_BYTES`), and that fails the call with a message
that names the resolver and never quotes the value.
"""

from __future__ import annotations

import collections.abc
import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args, get_origin

import pydantic_core
from pydantic import TypeAdapter

from ..errors import InvalidSignature, ToolError

if TYPE_CHECKING:
    from .plan import ResolverPlan

__all__ = ["MAX_CARRIED_BYTES", "CarriedType", "carried_type", "carry_values", "restore_values"]

MAX_CARRIED_BYTES = 8 * 1024
"""The most JSON one round may carry, all carried values together.

The sealed `requestState` travels to the client and back on every round,
so what rides in it is paid for twice a round, in every retry's body; a
carried value is a price, an id or a snapshot of a few fields, not a cache.
"""

logger = logging.getLogger("mcp_resolve.resolve")

_YIELD_TYPES = {
    "generator": (collections.abc.Iterator, collections.abc.Iterable, collections.abc.Generator),
    "async_generator": (
        collections.abc.AsyncIterator,
        collections.abc.AsyncIterable,
        collections.abc.AsyncGenerator,
    ),
}
_NO_ANNOTATION: Any = object()


@dataclass(frozen=True)
class CarriedType:
    """How a carried resolver's value is written to and read back from the state record."""

    adapter: TypeAdapter[Any]
    name: str
    """The value's type as written, for messages and `mcp-resolve graph`."""


def carried_type(hints: Mapping[str, Any], kind: str, where: str) -> CarriedType:
    """The adapter that writes and reads a carried resolver's value: its return annotation, as JSON.

    A generator resolver's value is what it yields, so `Iterator[T]`,
    `Generator[T, ...]` and their async forms give `T`. The annotation must
    name a type pydantic can both write as JSON and read back into the same
    type: a missing annotation, `Any`, `object` or a type without a JSON form
    (a connection, a callable) is refused here, when the handler registers.

    Raises:
        InvalidSignature: naming `where`, for any of the above.
    """
    annotation = hints.get("return", _NO_ANNOTATION)
    if annotation is _NO_ANNOTATION:
        raise InvalidSignature(
            f"{where}: carry=True needs a return annotation, the type its value is read back as in later rounds"
        )
    value_type = annotation
    yields = _YIELD_TYPES.get(kind)
    if yields is not None:
        arguments = get_args(annotation)
        if get_origin(annotation) not in yields or not arguments:
            raise InvalidSignature(
                f"{where}: carry=True on a generator resolver needs its return annotated with what it yields, "
                f"as {'AsyncIterator[T]' if kind == 'async_generator' else 'Iterator[T]'} or "
                f"{'AsyncGenerator[T, None]' if kind == 'async_generator' else 'Generator[T, None, None]'}"
            )
        value_type = arguments[0]
    if value_type is Any or value_type is object:
        raise InvalidSignature(
            f"{where}: carry=True needs a concrete return type, not {_type_name(value_type)}: the carried JSON "
            "is read back as that type, and Any would come back as plain dicts and lists"
        )
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(value_type)
        adapter.json_schema(mode="serialization")  # fails for what has no JSON form
    except Exception as exc:
        raise InvalidSignature(
            f"{where}: carry=True needs a return type that can be written as JSON and read back, and "
            f"{_type_name(value_type)} cannot ({type(exc).__name__}); carry a value read through the resource "
            "(a pydantic model, a dataclass, a number), not the resource itself"
        ) from None
    return CarriedType(adapter, _type_name(value_type))


def carry_values(carried: Sequence[ResolverPlan], outcomes: Mapping[Hashable, Any]) -> dict[str, Any]:
    """The JSON of each carried resolver that has a value this round, by its question key.

    Called only when a round ends with questions. A resolver still waiting
    (on an answer, or cancelled by a failure) has no value and is not carried:
    it runs in a later round.

    Raises:
        ToolError: a value its return annotation does not describe, or
            more than `MAX_CARRIED_BYTES` in all.
    """
    values: dict[str, Any] = {}
    for plan in carried:
        if plan.key not in outcomes:
            continue
        carried_as = plan.carry
        assert carried_as is not None, "only carried plans are carried"
        value = outcomes[plan.key]
        try:
            values[plan.wire_key] = carried_as.adapter.dump_python(value, mode="json", warnings="error")
        except Exception:  # the error's text may quote the value: name the types only
            raise ToolError(
                f"Resolver {plan.name} returned a {type(value).__name__}, which cannot be carried to the "
                f"next round as its declared return type {carried_as.name}"
            ) from None
    if values:
        size = len(pydantic_core.to_json(values))
        if size > MAX_CARRIED_BYTES:
            names = ", ".join(plan.name for plan in carried if plan.wire_key in values)
            raise ToolError(
                f"The values carried to the next round ({names}) take {size} bytes of JSON, over the "
                f"limit of {MAX_CARRIED_BYTES}: carry a small value (an id, a price, a version) and look "
                "the rest up again, or drop carry=True"
            )
    return values


def restore_values(carried: Sequence[ResolverPlan], stored: Mapping[str, Any]) -> dict[Hashable, Any]:
    """The values an earlier round carried, validated back to each resolver's type, by plan key.

    `stored` came out of a sealed state, so it is what this server wrote; a
    value that no longer validates means the resolver's type changed between
    rounds (a deploy): the resolver simply runs again.
    """
    restored: dict[Hashable, Any] = {}
    for plan in carried:
        if plan.wire_key not in stored:
            continue
        carried_as = plan.carry
        assert carried_as is not None, "only carried plans are restored"
        try:
            restored[plan.key] = carried_as.adapter.validate_json(
                pydantic_core.to_json(stored[plan.wire_key])
            )
        except ValueError:  # ValidationError included
            logger.warning(
                "the value carried for resolver %s no longer fits its type; running it again", plan.name
            )
    return restored


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")
