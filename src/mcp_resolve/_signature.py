"""A handler's signature split three ways: model-facing arguments, the Context, resolved parameters.

Tools, prompts and resource templates all take the same kinds of parameters,
so the split happens once, here, at registration; each request then only
validates its arguments and fills the rest.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Hashable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any, get_type_hints

import anyio
from mcp_types import InputRequiredResult
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import SchemaValidator, core_schema

from .context import Context
from .errors import INTERNAL_ERROR, InvalidSignature, MCPError, ToolError
from .resolve.plan import (
    ResolverPlan,
    build_resolver_plans,
    call_target,
    callable_name,
    find_resolved_parameters,
    is_context_annotation,
    mixed_flow_message,
    returns_input_required,
)
from .resolve.run import CallPlan, plan_call, run_steps

__all__ = ["ArgumentError", "HandlerSignature", "Overrides"]


class Overrides(dict[Any, Callable[..., Any]]):
    """`mcp.dependency_overrides`: a dict that remembers a version, so plans know to rebuild."""

    version = 0

    def __setitem__(self, key: Any, value: Callable[..., Any]) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self.version += 1

    def clear(self) -> None:
        super().clear()
        self.version += 1

    def pop(self, key: Any, *default: Any) -> Any:
        self.version += 1
        return super().pop(key, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.version += 1

    def setdefault(self, key: Any, default: Callable[..., Any]) -> Callable[..., Any]:
        self.version += 1
        return super().setdefault(key, default)

    def popitem(self) -> tuple[Any, Callable[..., Any]]:
        self.version += 1
        return super().popitem()

    def __ior__(self, other: Any) -> Overrides:  # type: ignore[override,misc]
        self.update(other)
        return self


class ArgumentError(Exception):
    """Arguments that failed validation; the message names each bad field."""


_ARGUMENT_CONFIG = ConfigDict(arbitrary_types_allowed=True)


@dataclass
class HandlerSignature:
    """What registration learned about a handler function."""

    fn: Callable[..., Any]
    name: str
    arguments_model: type[BaseModel]
    argument_names: tuple[str, ...]
    context_params: tuple[str, ...]
    resolved_params: dict[str, Any]
    is_async: bool
    overrides: Overrides
    _plans: dict[Hashable, ResolverPlan] = field(default_factory=dict)
    _call: CallPlan | None = None
    _plans_version: int = -1
    _fields_validator: SchemaValidator | None = None
    before_body: Callable[[Context], Awaitable[None]] | None = None
    """Awaited between the resolvers and the body (a task tool whose task starts only once all resolved)."""

    @classmethod
    def analyse(
        cls, fn: Callable[..., Any], name: str, overrides: Overrides, *, model_suffix: str
    ) -> HandlerSignature:
        target = call_target(fn)
        try:
            hints = get_type_hints(target, include_extras=True)
        except Exception as exc:
            raise InvalidSignature(f"cannot read the annotations of {callable_name(fn)}: {exc}") from exc
        # Both spellings, Annotated[T, Resolve(fn)] and `= Resolve(fn)`, and a refusal of ambiguous ones:
        # a parameter that reads as resolved must never fall through to a client-settable field below.
        resolved = find_resolved_parameters(fn)
        context_params: list[str] = []
        fields: dict[str, Any] = {}
        renamed: dict[str, str] = {}
        argument_names: list[str] = []
        parameters = inspect.signature(fn).parameters
        for param_name, param in parameters.items():
            if param_name in resolved:
                continue
            annotation = hints.get(param_name, Any)
            if is_context_annotation(annotation):
                context_params.append(param_name)
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise InvalidSignature(
                    f"{name}: variadic parameter {param_name!r} cannot be a model-facing argument"
                )
            if param_name.startswith("_"):
                raise InvalidSignature(f"{name}: argument names cannot start with '_' ({param_name!r})")
            default = param.default
            if not isinstance(default, FieldInfo):
                default = ... if default is inspect.Parameter.empty else default
            argument_names.append(param_name)
            field_name = _field_name(param_name, parameters)
            if field_name != param_name:
                renamed[field_name] = param_name
                if FieldInfo.from_annotated_attribute(annotation, default).alias is None:
                    # The wire name stays the parameter's: as the alias, the schema, validation and
                    # error locations all use it. An alias the author gave is left to win.
                    annotation = Annotated[annotation, Field(alias=param_name)]
            fields[field_name] = (annotation, default)
        if resolved and returns_input_required(fn):
            raise InvalidSignature(f"{name} {mixed_flow_message(resolved, declared=True)}")
        model = create_model(f"{name}{model_suffix}", __config__=_ARGUMENT_CONFIG, **fields)
        kind = _RenamingSignature if renamed else cls
        signature = kind(
            fn=fn,
            name=name,
            arguments_model=model,
            argument_names=tuple(argument_names),
            context_params=tuple(context_params),
            resolved_params=resolved,
            is_async=inspect.iscoroutinefunction(target),
            overrides=overrides,
        )
        signature.plans()  # analyse the resolver graph now: a bad graph fails at registration
        signature._fields_validator = _fields_validator(model)
        if isinstance(signature, _RenamingSignature):
            signature.renamed = renamed
        return signature

    def field_info(self, argument: str) -> FieldInfo:
        """The model field behind the model-facing argument `argument` (its description, whether required)."""
        return self.arguments_model.model_fields[argument]

    def use_overrides(self, overrides: Overrides) -> None:
        """Resolve through `overrides` from now on: a handler built before its server joins it.

        The plans rebuild on next use, so a bad graph under the new overrides
        fails here, at registration, as it would have in `analyse`.
        """
        self.overrides = overrides
        self._plans_version = -1
        self.plans()

    def plans(self) -> dict[Hashable, ResolverPlan]:
        if self._plans_version != self.overrides.version:
            self._plans = build_resolver_plans(
                self.resolved_params, set(self.argument_names), overrides=self.overrides
            )
            self._call = plan_call(self.resolved_params, self._plans)
            self._plans_version = self.overrides.version
        return self._plans

    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated argument values, as the body will see them; resolved names sent by a client are dropped."""
        values = arguments if isinstance(arguments, dict) else dict(arguments or {})
        try:
            if self._fields_validator is not None:
                fields: dict[str, Any] = self._fields_validator.validate_python(values)[0]
                return fields
            # A model that ignores extra keys holds exactly its fields in __dict__, in declaration order.
            return dict(self.arguments_model.model_validate(values).__dict__)
        except ValidationError as exc:
            raise ArgumentError(_describe(exc)) from None

    async def invoke(self, arguments: dict[str, Any], context: Context) -> Any:
        """Run resolvers, then the body, then the resolvers' cleanup; returns the body's value or the round's InputRequiredResult."""
        if not self.resolved_params:
            if self.is_async and not self.context_params:  # the body alone: nothing to add to its arguments
                return await self.fn(**arguments)
            return await self._run_body(dict(arguments), context)
        plans = self.plans()  # first: it refreshes self._call after a dependency_overrides change
        call = self._call
        assert call is not None
        if call.has_generators:  # their cleanup runs after the body
            async with AsyncExitStack() as exit_stack:
                return await self._resolve_and_run(call, plans, arguments, context, exit_stack)
        return await self._resolve_and_run(call, plans, arguments, context, None)

    async def _resolve_and_run(
        self,
        call: CallPlan,
        plans: dict[Hashable, ResolverPlan],
        arguments: dict[str, Any],
        context: Context,
        exit_stack: AsyncExitStack | None,
    ) -> Any:
        injected = await run_steps(
            call,
            plans,
            arguments,
            context,
            questioner=context.questioner,
            exit_stack=exit_stack,
            observer=context.observer,
        )
        if isinstance(injected, InputRequiredResult):
            return injected
        if self.before_body is not None:
            await self.before_body(context)
        result = await self._run_body({**arguments, **injected}, context)
        if isinstance(result, InputRequiredResult):  # undeclared, so registration could not refuse it
            raise ToolError(f"{self.name} {mixed_flow_message(self.resolved_params, declared=False)}")
        return result

    async def _run_body(self, values: dict[str, Any], context: Context) -> Any:
        for param in self.context_params:
            values[param] = context
        if self.is_async:
            return await self.fn(**values)
        result = await anyio.to_thread.run_sync(partial(self.fn, **values))
        if inspect.isawaitable(result):
            result = await result
        return result

    async def run_detached(
        self, arguments: Mapping[str, Any] | None, context: Context, *, failing: str
    ) -> Any:
        """Validate, resolve, run the body and clean up, for handlers with no error result (prompts, resources).

        A ToolError (a declined question, an author's refusal) becomes the
        JSON-RPC error `Error FAILING: MESSAGE`: it is no crash, so say it.
        Returns the body's value or the round's InputRequiredResult.
        """
        values = self.validate(arguments)
        try:
            return await self.invoke(values, context)
        except ToolError as exc:
            raise MCPError(INTERNAL_ERROR, f"Error {failing}: {exc}") from None


@dataclass
class _RenamingSignature(HandlerSignature):
    """A handler with an argument the model holds under another name (see `_field_name`).

    A class of its own so that every other handler's `validate` stays exactly
    as it was: the renaming costs only the handlers that need it.
    """

    renamed: dict[str, str] = field(default_factory=dict)
    """Field name -> parameter name."""

    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        renamed = self.renamed
        return {renamed.get(key, key): value for key, value in super().validate(arguments).items()}

    def field_info(self, argument: str) -> FieldInfo:
        for field_name, param_name in self.renamed.items():
            if param_name == argument:
                return self.arguments_model.model_fields[field_name]
        return self.arguments_model.model_fields[argument]


_PROTECTED_PREFIXES = ("model_validate", "model_dump")
"""pydantic's protected namespaces (2.10+): a field starting with one warns, or fails when it names a method."""


def _field_name(param_name: str, taken: Mapping[str, Any]) -> str:
    """The name the arguments model holds `param_name` under; the parameter name itself almost always.

    A model-facing argument may be called anything, but a pydantic field may
    not: one that shadows a BaseModel attribute (`schema`, `json`, `copy`,
    `validate`, ...) warns, and `model_config` or `model_dump` fail outright.
    Such a parameter gets a field name of its own and keeps its name as the
    alias, so nothing about it changes for the client and no warning is raised
    on the author's behalf. The field name avoids every other parameter name.
    """
    if not (hasattr(BaseModel, param_name) or param_name.startswith(_PROTECTED_PREFIXES)):
        return param_name
    candidate = f"arg_{param_name}"
    while candidate in taken or hasattr(BaseModel, candidate):
        candidate = f"arg_{candidate}"
    return candidate


def _fields_validator(model: type[BaseModel]) -> SchemaValidator | None:
    """A validator straight to the model's fields: the same checks, errors and defaults, no instance.

    A call needs the values, never the model, so none is built (and freed) per
    call (what it saves: docs/performance.md); the model stays the source of the
    input schema. It reads the model's core schema, a pydantic internal: the
    shape it knows is `model` over `model-fields` (wrapped in `definitions` when
    field types share models), and the latter validates to (fields, extras,
    fields set). For any other shape it returns None and `validate` uses the
    model itself (tests run both).
    """
    schema: Any = model.__pydantic_core_schema__
    definitions = None
    if schema["type"] == "definitions":
        definitions, schema = schema["definitions"], schema["schema"]
    if schema["type"] != "model" or schema["schema"]["type"] != "model-fields":
        return None
    fields: Any = schema["schema"]
    if definitions is not None:
        fields = core_schema.definitions_schema(fields, definitions)
    return SchemaValidator(fields, schema.get("config"))


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "(arguments)"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
