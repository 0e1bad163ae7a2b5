"""Static analysis of a resolver graph, done once when a tool is registered.

The plan answers every question that does not depend on a request: which
function fills which parameter, in which one-after-another order a sequential
run would visit them, what each resolver's question key is on the wire, and
whether the graph is even well formed. Execution (`run.py`) then only follows
the plan.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import typing_extensions
from mcp_types import InputRequiredResult
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ..elicitation import form_schema, is_elicitation_result_type
from ..errors import InvalidSignature
from .carry import CarriedType, carried_type
from .markers import Elicit, ListRoots, Resolve, Sample

__all__ = [
    "ResolvedParameters",
    "ResolverPlan",
    "build_resolver_plans",
    "call_target",
    "callable_name",
    "find_resolved_parameters",
    "is_context_annotation",
    "mixed_flow_message",
    "parameter_resolver",
    "returns_input_required",
]

ResolvedParameters = Mapping[str, tuple[Resolve, bool]]
"""Parameter name -> (its Resolve marker, whether it wants the full ElicitationResult)."""

ResolverKind = Literal["async", "sync", "async_generator", "generator"]


@dataclass(frozen=True, eq=False)
class ResolverPlan:
    """Everything about one resolver that can be known before a request arrives."""

    key: Hashable
    """Identity of the resolver as written in `Resolve(...)` (bound methods of one object are one)."""
    fn: Callable[..., Any]
    """What runs: the resolver, or its replacement from `dependency_overrides`."""
    name: str
    """Module-qualified name, for error messages."""
    wire_key: str
    """Deterministic key of this resolver's question in `inputRequests`."""
    kind: ResolverKind
    order: int
    """Position in the one-after-another order: dependencies first, signature order."""
    context_params: tuple[str, ...]
    argument_params: tuple[str, ...]
    dependency_params: tuple[tuple[str, Hashable, bool], ...]
    """(parameter, dependency key, wants the full ElicitationResult)."""
    carry: CarriedType | None = None
    """How its value rides to later 2026-07-28 rounds, when written `Resolve(fn, carry=True)`; else None."""


def callable_name(fn: Callable[..., Any]) -> str:
    target = getattr(fn, "__func__", fn)
    qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
    module = getattr(target, "__module__", None) or type(target).__module__
    return f"{module}:{qualname}"


CONTEXT_MARK = "__mcp_resolve_context__"
"""The attribute by which the engine recognises the Context class (and subclasses) without importing it:
the Context lives above the engine, and the engine imports nothing above it."""


def is_context_annotation(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:  # `ctx: Context | None = None`
        return any(is_context_annotation(arm) for arm in get_args(annotation))
    candidate = origin or annotation
    return isinstance(candidate, type) and getattr(candidate, CONTEXT_MARK, False) is True


def call_target(fn: Callable[..., Any]) -> Any:
    """What actually runs when `fn` is called: itself for a function or method, else its `__call__`
    (a callable object), whose annotations and kind (async, generator) are the ones that count."""
    return fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(call_target(fn), include_extras=True)
    except Exception as exc:
        raise InvalidSignature(f"cannot read the annotations of {callable_name(fn)}: {exc}") from exc


def _readable_type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Every annotation of fn that can be evaluated, each on its own when not all of them can.

    For the public questions (`find_resolved_parameters`, `returns_input_required`)
    one unresolvable string annotation must not hide the others, nor raise: an
    annotation that cannot be read simply declares nothing. Registration reads
    every annotation strictly on its own and refuses the handler with its own message.
    """
    target = call_target(fn)
    try:
        return get_type_hints(target, include_extras=True)
    except Exception:
        pass
    raw = getattr(target, "__annotations__", None)
    if not isinstance(raw, dict):
        return {}
    globalns = getattr(inspect.unwrap(target), "__globals__", {})
    hints: dict[str, Any] = {}
    for name, annotation in raw.items():
        try:  # the same evaluation as get_type_hints, one annotation at a time
            one = types.SimpleNamespace(__annotations__={name: annotation})
            hints[name] = get_type_hints(one, globalns=globalns, include_extras=True)[name]
        except Exception:
            continue
    return hints


_QUESTION_MARKERS = (Elicit, Sample, ListRoots)
_MARKER_CLASSES = (Resolve, *_QUESTION_MARKERS)
_SCAN_DEPTH = 6
"""How deep a default's containers are searched for a stray marker (registration only)."""


def _resolve_marker(annotation: Any) -> Resolve | None:
    if get_origin(annotation) is Annotated:
        for extra in annotation.__metadata__:
            if isinstance(extra, Resolve):
                return extra
    return None


def _buried_resolve(annotation: Any) -> Resolve | None:
    """A Resolve hidden inside a union or a generic, where it cannot mean anything."""
    origin = get_origin(annotation)
    if origin is None:
        return None
    if origin is Annotated:
        return _buried_resolve(get_args(annotation)[0])
    for arg in get_args(annotation):
        found = _resolve_marker(arg) or _buried_resolve(arg)
        if found is not None:
            return found
    return None


def _is_marker(value: Any) -> bool:
    """A marker instance, or a marker class written where an instance was meant (`= Resolve`, `Elicit[M]`)."""
    if isinstance(value, _MARKER_CLASSES):
        return True
    origin = get_origin(value)  # identity only: an arbitrary default's __eq__ may not return a bool
    return any(value is cls or origin is cls for cls in _MARKER_CLASSES)


def _nested_marker(value: Any, depth: int = 0) -> Any:
    """The first marker inside a container default or a `Field(default=...)`, or None.

    Only a whole default `= Resolve(fn)` is resolved; one inside a list, a
    tuple, a dict or a pydantic `Field` would reach the body as a plain
    object (or the input schema as a client-settable default), so it has to
    be found and refused at registration.
    """
    if _is_marker(value):
        return value
    if depth >= _SCAN_DEPTH or isinstance(value, (str, bytes, bytearray)):
        return None
    if isinstance(value, FieldInfo):
        return _nested_marker(value.default, depth + 1)
    if isinstance(value, dict):
        items: Any = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    else:
        return None
    for item in items:
        found = _nested_marker(item, depth + 1)
        if found is not None:
            return found
    return None


def _describe_marker(marker: Any) -> str:
    if isinstance(marker, Resolve):
        return f"Resolve({callable_name(marker.fn)}{', carry=True' if marker.carry else ''})"
    if isinstance(marker, _QUESTION_MARKERS):
        return f"{type(marker).__name__}(...)"
    return getattr(marker, "__name__", None) or repr(marker)


def parameter_resolver(
    where: str, param: inspect.Parameter, annotation: Any | None
) -> tuple[Resolve, bool] | None:
    """The resolver filling one parameter, from `Annotated[T, Resolve(fn)]` or a `= Resolve(fn)` default.

    The two spellings are one declaration: FastAPI's `= Depends(fn)` habit
    must not leave a parameter client-settable, so the default form is
    resolved (and hidden from the input schema) exactly like the annotated
    one. Returns (marker, wants the full ElicitationResult) or None for a
    parameter no resolver fills. Anything that could be read two ways, or
    that a reader would take for a resolved parameter while the engine
    would not, raises InvalidSignature naming `where` and the parameter.
    """
    name = param.name
    annotated: list[Resolve] = []
    if annotation is not None and get_origin(annotation) is Annotated:
        for extra in annotation.__metadata__:
            if isinstance(extra, Resolve):
                if all(extra.fn != seen.fn for seen in annotated):
                    annotated.append(extra)
                continue
            stray = _nested_marker(extra)
            if stray is not None:
                raise InvalidSignature(
                    f"{where}: parameter {name!r} carries {_describe_marker(stray)} in its annotation, "
                    "where it would be ignored; only Annotated[T, Resolve(fn)] fills a parameter (a resolver "
                    "returns Elicit, Sample or ListRoots to ask the client)"
                )
    if len(annotated) > 1:
        raise InvalidSignature(
            f"{where}: parameter {name!r} names {len(annotated)} resolvers in its annotation "
            f"({', '.join(_describe_marker(m) for m in annotated)}); a parameter is filled by one resolver"
        )
    buried = _buried_resolve(annotation) if annotation is not None else None
    if buried is not None:
        raise InvalidSignature(
            f"{where}: parameter {name!r} wraps `Resolve(...)` in a union or generic: it hides "
            f"Resolve({callable_name(buried.fn)}) where it cannot be filled; annotate it as "
            "Annotated[T, Resolve(fn)] at the top level (use ElicitationResult[T] as T to receive a decline)"
        )
    default = param.default
    from_default = default if isinstance(default, Resolve) else None
    if from_default is None and default is not inspect.Parameter.empty:
        stray = _nested_marker(default)
        if isinstance(stray, _QUESTION_MARKERS) and stray is default:
            raise InvalidSignature(
                f"{where}: parameter {name!r} has {_describe_marker(stray)} as its default; Elicit, Sample "
                "and ListRoots are what a resolver returns to ask the client, never a parameter default: "
                f"return it from a resolver fn and declare `{name}: T = Resolve(fn)`"
            )
        if stray is not None:
            place = "as its default" if stray is default else f"inside its default ({type(default).__name__})"
            raise InvalidSignature(
                f"{where}: parameter {name!r} has {_describe_marker(stray)} {place}, where no resolver "
                f"runs and it is a plain value a client could replace; write `{name}: T = Resolve(fn)` or "
                "Annotated[T, Resolve(fn)]"
            )
    if (
        annotated
        and from_default is not None
        and (annotated[0].fn != from_default.fn or annotated[0].carry != from_default.carry)
    ):
        raise InvalidSignature(
            f"{where}: parameter {name!r} names two resolvers, {_describe_marker(annotated[0])} in its "
            f"annotation and {_describe_marker(from_default)} as its default; keep one"
        )
    marker = annotated[0] if annotated else from_default
    if marker is None:
        return None
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
        raise InvalidSignature(
            f"{where}: parameter {name!r} is variadic and cannot be filled by {_describe_marker(marker)}; "
            "declare one named parameter per resolved value"
        )
    value_type = get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation
    return marker, value_type is not None and is_elicitation_result_type(value_type)


def find_resolved_parameters(fn: Callable[..., Any]) -> dict[str, tuple[Resolve, bool]]:
    """Find parameters of fn annotated Annotated[_, Resolve(...)] or defaulting to Resolve(...).

    Returns a mapping of parameter name to (Resolve, wants_union), where
    wants_union is True when the annotated type is an ElicitationResult member
    (the consumer wants the full outcome rather than the unwrapped model).
    `x: T = Resolve(fn)` is reported exactly as `x: Annotated[T, Resolve(fn)]`.
    An annotation that cannot be evaluated (a string naming something not
    importable at run time) is no resolved parameter: the others are still
    found, and registration refuses the handler later with its own message.

    Raises:
        InvalidSignature: If a parameter's marker is ambiguous or misplaced
            (two different resolvers, a Resolve buried in a union or inside
            a container default, a question marker as a default).
    """
    hints = _readable_type_hints(fn)
    where = callable_name(fn)
    found: dict[str, tuple[Resolve, bool]] = {}
    for name, param in inspect.signature(fn).parameters.items():
        resolved = parameter_resolver(where, param, hints.get(name))
        if resolved is not None:
            found[name] = resolved
    return found


_ALIAS_TYPES: tuple[type, ...] = tuple(
    {typing_extensions.TypeAliasType, getattr(typing, "TypeAliasType", typing_extensions.TypeAliasType)}
)
"""`type R = ...` (3.12+) and its typing_extensions backport: an alias whose target is read lazily."""
_ALIAS_DEPTH = 16
"""How many aliases deep `_arms` follows (an alias may name itself through a union)."""


def _arms(annotation: Any, bindings: Mapping[Any, Any] | None = None, depth: int = 0) -> Iterator[Any]:
    """The arms a value of `annotation` can be, seen through Annotated, unions and type aliases.

    `Annotated[X | Y, ...]`, `Optional[X]`, `Union[...]`, `X | Y`, a
    `TypeAlias` (already its target once evaluated) and a `type R = ...`
    alias, subscripted or not, all declare what the function may return;
    registration has to see an arm however it is spelled. An alias whose
    target cannot be evaluated (a TYPE_CHECKING-only name) declares no arm.
    """
    if isinstance(annotation, TypeVar) and bindings and annotation in bindings:
        annotation = bindings[annotation]
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from _arms(get_args(annotation)[0], bindings, depth)
    elif origin is Union or origin is types.UnionType:
        for arm in get_args(annotation):
            yield from _arms(arm, bindings, depth)
    elif isinstance(annotation, _ALIAS_TYPES) or isinstance(origin, _ALIAS_TYPES):
        alias = annotation if origin is None else origin
        if depth >= _ALIAS_DEPTH:
            return
        try:
            target = alias.__value__
        except Exception:
            return
        inner: dict[Any, Any] = {}
        if origin is not None:  # `R[int]`: the alias's type parameters stand for these arguments
            arguments = [bindings.get(a, a) if bindings else a for a in get_args(annotation)]
            inner = dict(zip(getattr(alias, "__type_params__", ()), arguments, strict=False))
        yield from _arms(target, inner, depth + 1)
    else:
        yield annotation


def returns_input_required(fn: Callable[..., Any]) -> bool:
    """True when fn's return annotation carries an InputRequiredResult arm.

    A call has a single inputResponses/requestState channel, so a tool that
    both uses resolvers and returns its own InputRequiredResult could never
    converge; registration rejects the combination. The arm counts however it
    is spelled (Annotated, any union, a type alias), since a spelling that
    slipped past would only fail at run time, after the client looped.
    """
    annotation = _readable_type_hints(fn).get("return")
    if annotation is None:
        return False
    return any(isinstance(arm, type) and issubclass(arm, InputRequiredResult) for arm in _arms(annotation))


def mixed_flow_message(resolved_params: ResolvedParameters, *, declared: bool) -> str:
    """Why a handler may not combine resolvers with its own InputRequiredResult, naming a resolved parameter.

    `declared`: found in the return annotation at registration; otherwise the
    body returned one at run time (no annotation said so), and the call fails
    with this as its tool error instead of sending the client rounds that can
    never converge.
    """
    parameter, (marker, _wants_union) = next(iter(resolved_params.items()))
    found = "the return annotation declares one" if declared else "the body returned one"
    return (
        "combines Resolve(...) parameters with an InputRequiredResult return (the official wording): "
        f"parameter {parameter!r} is filled by Resolve({callable_name(marker.fn)}) and {found}; a call has one "
        "inputResponses/requestState channel, so its rounds are driven by resolvers or by the body, not "
        "both (let a resolver return Elicit, Sample or ListRoots instead)"
    )


def _check_return_markers(hints: dict[str, Any], where: str) -> None:
    """One question arm at most, and a form model that a client can show, known before any call."""
    annotation = hints.get("return")
    if annotation is None:
        return
    marker_arms = [
        arm for arm in _arms(annotation) if (get_origin(arm) or arm) in (Elicit, Sample, ListRoots)
    ]
    if len(marker_arms) > 1:
        raise InvalidSignature(
            f"{where}: its return annotation has multiple Elicit/Sample/ListRoots arms ({len(marker_arms)} "
            f"question arms: {', '.join(getattr(a, '__name__', repr(a)) for a in marker_arms)}); a resolver "
            "asks at most one kind of question, split it into one resolver per question"
        )
    for arm in marker_arms:
        schema = get_args(arm)[0] if get_origin(arm) is Elicit else None
        # `Elicit[BaseModel]` declares a form whose model is built at run time (`create_model`): there is
        # nothing to check until the resolver returns it, and rendering checks it then.
        if isinstance(schema, type) and issubclass(schema, BaseModel) and schema is not BaseModel:
            try:
                form_schema(schema)
            except TypeError as exc:
                raise InvalidSignature(f"{where}: {exc}") from None


def _kind_of(fn: Callable[..., Any]) -> ResolverKind:
    target = call_target(fn)
    if inspect.isasyncgenfunction(target):
        return "async_generator"
    if inspect.isgeneratorfunction(target):
        return "generator"
    if inspect.iscoroutinefunction(target):
        return "async"
    return "sync"


def _carried_type(original: Callable[..., Any], where: str) -> CarriedType:
    """How a `carry=True` resolver's value is carried: read from the resolver as written in `Resolve(...)`.

    The written resolver's annotation is the contract (a `dependency_overrides`
    stand-in, often a bare lambda in a test, gives a value of the same type).
    A resolver that asks a question itself is refused: its answer already
    rides `requestState`, pinned to the question; what is worth carrying is
    the resolver that computes from the answer.
    """
    hints = _type_hints(original)
    if any((get_origin(arm) or arm) in _QUESTION_MARKERS for arm in _arms(hints.get("return"))):
        raise InvalidSignature(
            f"{where}: carry=True is for resolvers that compute a value; this one may ask a question "
            "(Elicit, Sample or ListRoots), whose answer already rides requestState: carry the resolver "
            "that uses the answer instead"
        )
    return carried_type(hints, _kind_of(original), where)


def build_resolver_plans(
    resolved_params: ResolvedParameters,
    tool_arg_names: set[str],
    *,
    overrides: Mapping[Any, Callable[..., Any]] | None = None,
) -> dict[Hashable, ResolverPlan]:
    """Statically analyze the resolver DAG rooted at a tool's resolved parameters.

    Every message names the resolver at fault and the parameter through which
    it was reached, so a bad graph can be fixed from the error alone.

    Raises:
        InvalidSignature: If a resolver has a cyclic dependency, or a resolver
            parameter cannot be classified (not a Context, not a Resolve(...),
            not a tool argument by name), or its return annotation has more
            than one question arm or an `Elicit[Model]` whose model cannot
            be an elicitation form; for `carry=True`, if the markers of one
            resolver disagree on it or its value cannot be carried (see
            `carry.carried_type`).
    """
    overrides = overrides or {}
    plans: dict[Hashable, ResolverPlan] = {}
    visiting: list[Hashable] = []
    wire_keys_seen: dict[str, int] = {}
    first_consumer: dict[Hashable, tuple[str, bool]] = {}

    def visit(marker: Resolve, path: list[str], consumer: str) -> Hashable:
        key: Hashable = marker.fn
        seen = first_consumer.setdefault(key, (consumer, marker.carry))
        if seen[1] != marker.carry:
            carried, plain = (seen[0], consumer) if seen[1] else (consumer, seen[0])
            raise InvalidSignature(
                f"Resolve({callable_name(marker.fn)}) has carry=True filling {carried} but not filling "
                f"{plain}; a resolver has one value per call, so mark every Resolve of it alike (one alias, "
                "`X = Annotated[T, Resolve(fn, carry=True)]`, keeps them together)"
            )
        if key in plans:
            return key
        fn = overrides.get(key, marker.fn)
        name = callable_name(fn)
        where = f"resolver {name} (filling {consumer})"
        if key in visiting:
            cycle = " -> ".join([*path[visiting.index(key) :], name])
            raise InvalidSignature(f"{where} has a cyclic dependency, it depends on itself: {cycle}")
        visiting.append(key)
        hints = _type_hints(fn)
        _check_return_markers(hints, where)
        context_params: list[str] = []
        argument_params: list[str] = []
        dependency_params: list[tuple[str, Hashable, bool]] = []
        for param_name, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise InvalidSignature(
                    f"{where}: parameter {param_name!r} is variadic; resolver parameters are filled by name"
                )
            annotation = hints.get(param_name)
            dependency = parameter_resolver(where, param, annotation)
            if dependency is not None:
                dependency_marker, wants_union = dependency
                dependency_key = visit(
                    dependency_marker, [*path, name], f"parameter {param_name!r} of {name}"
                )
                dependency_params.append((param_name, dependency_key, wants_union))
            elif annotation is not None and is_context_annotation(annotation):
                context_params.append(param_name)
            elif param_name in tool_arg_names:
                argument_params.append(param_name)
            else:
                raise InvalidSignature(
                    f"{where}: cannot classify parameter {param_name!r}, so it cannot be resolved: it is not "
                    "the Context, not Annotated[..., Resolve(...)] or `= Resolve(...)`, and not the name of a "
                    f"tool argument (tool arguments: {', '.join(sorted(tool_arg_names)) or 'none'})"
                )
        visiting.pop()
        count = wire_keys_seen.get(name, 0) + 1
        wire_keys_seen[name] = count
        plans[key] = ResolverPlan(
            key=key,
            fn=fn,
            name=name,
            wire_key=name if count == 1 else f"{name}#{count}",
            kind=_kind_of(fn),
            order=len(plans),
            context_params=tuple(context_params),
            argument_params=tuple(argument_params),
            dependency_params=tuple(dependency_params),
            carry=_carried_type(marker.fn, where) if marker.carry else None,
        )
        return key

    for parameter, (marker, _wants_union) in resolved_params.items():
        visit(marker, [], f"parameter {parameter!r}")
    return plans
