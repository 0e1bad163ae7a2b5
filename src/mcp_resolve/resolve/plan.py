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
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from mcp_types import InputRequiredResult

from ..elicitation import is_elicitation_result_type
from ..errors import InvalidSignature
from .markers import Elicit, ListRoots, Resolve, Sample

__all__ = [
    "ResolvedParameters",
    "ResolverPlan",
    "build_resolver_plans",
    "callable_name",
    "find_resolved_parameters",
    "is_context_annotation",
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


def callable_name(fn: Callable[..., Any]) -> str:
    target = getattr(fn, "__func__", fn)
    qualname = getattr(target, "__qualname__", None) or type(target).__qualname__
    module = getattr(target, "__module__", None) or type(target).__module__
    return f"{module}:{qualname}"


def is_context_annotation(annotation: Any) -> bool:
    from ..context import Context  # the engine only needs to recognise the type

    candidate = get_origin(annotation) or annotation
    return isinstance(candidate, type) and issubclass(candidate, Context)


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        return get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise InvalidSignature(f"cannot read the annotations of {callable_name(fn)}: {exc}") from exc


def _resolve_marker(annotation: Any) -> Resolve | None:
    if get_origin(annotation) is Annotated:
        for extra in annotation.__metadata__:
            if isinstance(extra, Resolve):
                return extra
    return None


def _buried_resolve(annotation: Any) -> bool:
    """A Resolve hidden inside a union or a generic, where it cannot mean anything."""
    origin = get_origin(annotation)
    if origin is None:
        return False
    if origin is Annotated:
        return _buried_resolve(get_args(annotation)[0])
    return any(_resolve_marker(arg) is not None or _buried_resolve(arg) for arg in get_args(annotation))


def find_resolved_parameters(fn: Callable[..., Any]) -> dict[str, tuple[Resolve, bool]]:
    """Find parameters of fn annotated Annotated[_, Resolve(...)].

    Returns a mapping of parameter name to (Resolve, wants_union), where
    wants_union is True when the annotated type is an ElicitationResult member
    (the consumer wants the full outcome rather than the unwrapped model).
    """
    hints = _type_hints(fn)
    found: dict[str, tuple[Resolve, bool]] = {}
    for name in inspect.signature(fn).parameters:
        annotation = hints.get(name)
        if annotation is None:
            continue
        marker = _resolve_marker(annotation)
        if marker is not None:
            found[name] = (marker, is_elicitation_result_type(get_args(annotation)[0]))
        elif _buried_resolve(annotation):
            raise InvalidSignature(
                f"{callable_name(fn)}: parameter {name!r} hides Resolve(...) inside a union or generic; "
                "annotate it as Annotated[T, Resolve(fn)] at the top level"
            )
    return found


def _union_arms(annotation: Any) -> tuple[Any, ...]:
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return get_args(annotation)
    return (annotation,)


def returns_input_required(fn: Callable[..., Any]) -> bool:
    """True when fn's return annotation carries an InputRequiredResult arm.

    A call has a single inputResponses/requestState channel, so a tool that
    both uses resolvers and returns its own InputRequiredResult could never
    converge; registration rejects the combination.
    """
    annotation = _type_hints(fn).get("return")
    if annotation is None:
        return False
    return any(
        isinstance(arm, type) and issubclass(arm, InputRequiredResult) for arm in _union_arms(annotation)
    )


def _check_return_markers(fn: Callable[..., Any], name: str) -> None:
    annotation = _type_hints(fn).get("return")
    if annotation is None:
        return
    marker_arms = [
        arm for arm in _union_arms(annotation) if (get_origin(arm) or arm) in (Elicit, Sample, ListRoots)
    ]
    if len(marker_arms) > 1:
        raise InvalidSignature(
            f"resolver {name}: its return annotation has {len(marker_arms)} question arms "
            f"({', '.join(getattr(a, '__name__', repr(a)) for a in marker_arms)}); a resolver asks at most "
            "one kind of question, split it into one resolver per question"
        )


def _kind_of(fn: Callable[..., Any]) -> ResolverKind:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    if inspect.isasyncgenfunction(target):
        return "async_generator"
    if inspect.isgeneratorfunction(target):
        return "generator"
    if inspect.iscoroutinefunction(target):
        return "async"
    return "sync"


def build_resolver_plans(
    resolved_params: ResolvedParameters,
    tool_arg_names: set[str],
    *,
    overrides: Mapping[Any, Callable[..., Any]] | None = None,
) -> dict[Hashable, ResolverPlan]:
    """Statically analyze the resolver DAG rooted at a tool's resolved parameters.

    Raises:
        InvalidSignature: If a resolver has a cyclic dependency, or a resolver
            parameter cannot be classified (not a Context, not a Resolve(...),
            not a tool argument by name), or its return annotation has more
            than one question arm.
    """
    overrides = overrides or {}
    plans: dict[Hashable, ResolverPlan] = {}
    visiting: list[Hashable] = []
    wire_keys_seen: dict[str, int] = {}

    def visit(marker: Resolve, path: list[str]) -> Hashable:
        key: Hashable = marker.fn
        if key in plans:
            return key
        fn = overrides.get(key, marker.fn)
        name = callable_name(fn)
        if key in visiting:
            cycle = " -> ".join([*path[path.index(name) :], name]) if name in path else name
            raise InvalidSignature(f"resolver {name} depends on itself: {cycle}")
        visiting.append(key)
        _check_return_markers(fn, name)
        hints = _type_hints(fn)
        context_params: list[str] = []
        argument_params: list[str] = []
        dependency_params: list[tuple[str, Hashable, bool]] = []
        for param_name, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise InvalidSignature(
                    f"resolver {name}: parameter {param_name!r} is variadic; resolver parameters are filled "
                    "by name"
                )
            annotation = hints.get(param_name)
            dependency = _resolve_marker(annotation) if annotation is not None else None
            if dependency is not None:
                wants_union = is_elicitation_result_type(get_args(annotation)[0])
                dependency_params.append((param_name, visit(dependency, [*path, name]), wants_union))
            elif annotation is not None and _buried_resolve(annotation):
                raise InvalidSignature(
                    f"resolver {name}: parameter {param_name!r} hides Resolve(...) inside a union or generic"
                )
            elif annotation is not None and is_context_annotation(annotation):
                context_params.append(param_name)
            elif param_name in tool_arg_names:
                argument_params.append(param_name)
            else:
                raise InvalidSignature(
                    f"resolver {name}: cannot classify parameter {param_name!r}: it is not the Context, "
                    "not Annotated[..., Resolve(...)], and not the name of a tool argument "
                    f"(tool arguments: {', '.join(sorted(tool_arg_names)) or 'none'})"
                )
        visiting.pop()
        base_key = name
        count = wire_keys_seen.get(base_key, 0) + 1
        wire_keys_seen[base_key] = count
        plans[key] = ResolverPlan(
            key=key,
            fn=fn,
            name=name,
            wire_key=base_key if count == 1 else f"{base_key}#{count}",
            kind=_kind_of(fn),
            order=len(plans),
            context_params=tuple(context_params),
            argument_params=tuple(argument_params),
            dependency_params=tuple(dependency_params),
        )
        return key

    for marker, _wants_union in resolved_params.values():
        visit(marker, [])
    return plans
