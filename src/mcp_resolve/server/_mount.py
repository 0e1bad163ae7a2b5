"""Composition: `mcp.mount(other, prefix=...)` (live) and `mcp.import_server(other, prefix=...)` (a copy).

A mount files, in the parent's `Registry`, a copy of each component of the
mounted server under a prefixed name: tools and prompts `prefix_name`,
resources and templates `scheme://prefix/path` (FastMCP's spelling, so a
client or a port sees the names it expects; a URI without `scheme://` keeps
its own). The copies are the mounted server's components renamed: they
resolve through its resolvers and `dependency_overrides`, keep their
`single_use`, scopes and task support, and their calls run inside its
middleware with its `lifespan_context`, while the request itself (its era,
its sealed requestState, its token, its questions) stays the parent's. The
parent is what clients reach, so the parent's keys seal a mounted tool's
rounds, its replay store claims a single-use one, its transport checks
scopes.

Live (`mount`): the mount watches the mounted server's registry
(`Registry.watch`), so a later registration there appears here, refused at
once when its prefixed name clashes; its `notify_*` calls reach the parent's
clients too (`Notifications.forwards`). A copy (`import_server`) files what
is there now and follows nothing after. Either way the mounted server's
lifespan is entered when the parent's is (`SharedLifespan.companions`), the
methods its extensions added are served here when the parent serves none of
that name, and the extensions it advertises are advertised here.

`hide={"customer_id": Resolve(current_customer)}` turns a mounted tool into a
guard: the parameter leaves its input schema, a client-sent value is dropped
like any resolved parameter's, and the value comes from the parent's resolver
graph (the parent's `dependency_overrides` apply to it). Underneath, the
tool's function is seen through a signature where that parameter is
`Annotated[T, Resolve(...)]`, analysed like any other, so `check` and `graph`
show it and a multi-round question in it rides requestState as usual.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Protocol, runtime_checkable

from .._signature import HandlerSignature, Overrides
from ..context import Context
from ..errors import InvalidSignature
from ..prompts import Prompt
from ..protocol.middleware import ClientView, ServerRequestContext, dump_result, run_chain
from ..protocol.param_headers import header_declarations
from ..resolve.markers import Resolve
from ..resolve.plan import call_target
from ..resources import Resource, ResourceTemplate
from ..tools import Tool
from ._registry import Component, Slot, slot_of

if TYPE_CHECKING:
    from ..stores.bus import ServerEvent
    from ._completion import Completer
    from ._facade import MCPServer
    from ._serving import SharedLifespan

__all__ = [
    "Guardable",
    "Mount",
    "MountedPrompt",
    "MountedResource",
    "MountedTemplate",
    "MountedTool",
    "mount",
]

_URI = re.compile(r"^([^:]+://)(.*)$", re.DOTALL)
_SERVING: contextvars.ContextVar[tuple[Mount, ...]] = contextvars.ContextVar(
    "mcp_resolve_mounts_serving", default=()
)
"""The mounts whose components the current request is running in, innermost last."""
Inner = Callable[[dict[str, Any], Context], Awaitable[dict[str, Any]]]


def mount(
    parent: MCPServer,
    lifespan: SharedLifespan,
    child: MCPServer,
    prefix: str | None,
    hide: Mapping[str, Resolve] | None,
    *,
    live: bool,
) -> Mount:
    """File `child`'s components in `parent` (all or none: a clash files nothing), and follow it if `live`."""
    if child.registry.reaches(parent.registry):
        what = "itself" if child is parent else f"{child.name!r}, which serves it already"
        raise ValueError(f"{parent.name!r} cannot mount {what}: a server mounted in itself never ends")
    if prefix is not None and (not isinstance(prefix, str) or not prefix or "/" in prefix):
        raise ValueError(f"prefix must be a non-empty string without '/', or None; got {prefix!r}")
    joined = Mount(parent, child, prefix, hide or {}, live=live)
    joined.check_hide()
    copies = [joined.bridge(component) for component in child.registry.components()]
    seen: dict[Slot, Component] = {}
    for copy in copies:  # every name checked here and wherever the parent is mounted, before any is filed
        slot = slot_of(copy)
        parent.registry.check_free(slot, joined)
        parent.registry.vet(copy)
        if slot in seen:
            raise ValueError(f"{joined} has two components named {slot[1]!r} once prefixed")
        seen[slot] = copy
    for copy in copies:
        parent.registry.file_mounted(copy, joined)
    if live:
        child.registry.watch(joined)
    child.notifications.forwards.append(joined.forward)  # a copy's: only what its components' ctx sends
    parent.registry.mounted.append(child.registry)
    parent.registry.completion_routes.append(joined)
    lifespan.companions.append(child.running)
    for method in sorted(child.served_methods() - parent.served_methods()):
        parent.add_method(method, child.handler(method))  # an extension's own methods, answered by it
    for identifier, settings in child.extension_settings.items():
        parent.extension_settings.setdefault(identifier, settings)  # e.g. MCP Apps, for the desk's views
    return joined


class Mount:
    """One server mounted in another: the names it takes there, and how its components are served there."""

    def __init__(
        self,
        parent: MCPServer,
        child: MCPServer,
        prefix: str | None,
        hide: Mapping[str, Resolve],
        *,
        live: bool,
    ) -> None:
        self.parent = parent
        self.child = child
        self.prefix = prefix
        self.live = live
        what = "mounted" if live else "imported"
        self.description = f"{what} server {child.name!r}" + (
            "" if prefix is None else f" (prefix {prefix!r})"
        )
        """How errors name this mount (the registry tells mounts apart by identity, not by this)."""
        self.hide: dict[str | None, dict[str, Resolve]] = {}
        """Tool name (None: every tool) -> parameter -> the resolver that fills it."""
        for key, marker in hide.items():
            if not isinstance(marker, Resolve):
                raise TypeError(f"hide={{{key!r}: ...}} takes Resolve(fn), not {marker!r}")
            tool, _, parameter = key.rpartition(".")
            self.hide.setdefault(tool or None, {})[parameter] = marker
        self._vetted: tuple[Component, Component] | None = None

    def __str__(self) -> str:
        return self.description

    # -- names ---------------------------------------------------------------------------------
    def name(self, name: str) -> str:
        return name if self.prefix is None else f"{self.prefix}_{name}"

    def original_name(self, name: str) -> str | None:
        if self.prefix is None:
            return name
        head = f"{self.prefix}_"
        return name[len(head) :] if name.startswith(head) else None

    def uri(self, uri: str) -> str:
        """`scheme://path` -> `scheme://prefix/path`; a URI without `scheme://` is left as it is."""
        found = _URI.match(uri)
        if self.prefix is None or found is None:
            return uri
        return f"{found.group(1)}{self.prefix}/{found.group(2)}"

    def original_uri(self, uri: str) -> str | None:
        found = _URI.match(uri)
        if self.prefix is None or found is None:
            return uri
        scheme, path = found.groups()
        head = f"{self.prefix}/"
        return f"{scheme}{path[len(head) :]}" if path.startswith(head) else None

    # -- the copies ----------------------------------------------------------------------------
    def hidden_for(self, tool: Tool) -> dict[str, Resolve]:
        wanted = {**self.hide.get(None, {}), **self.hide.get(tool.name, {})}
        return {name: marker for name, marker in wanted.items() if name in tool.signature.argument_names}

    def check_hide(self) -> None:
        """Every `hide` key must name something: a guard that silently guards nothing is worse than none."""
        tools = self.child.registry.tools
        for tool_name, parameters in self.hide.items():
            candidates = (
                list(tools.values()) if tool_name is None else [t for t in (tools.get(tool_name),) if t]
            )
            if tool_name is not None and not candidates:
                raise ValueError(f"hide names tool {tool_name!r}, which {self.child.name!r} does not have")
            for parameter in parameters:
                if not any(parameter in t.signature.argument_names for t in candidates):
                    where = f"tool {tool_name!r}" if tool_name else "no tool"
                    raise ValueError(
                        f"hide names parameter {parameter!r}, which {where} of {self.child.name!r} takes "
                        "(only a model-facing argument can be hidden)"
                    )

    def bridge(self, component: Component) -> Component:
        """The parent's copy of one of the mounted server's components."""
        if isinstance(component, Tool):
            return MountedTool(component, self, self.hidden_for(component))
        if isinstance(component, Prompt):
            return MountedPrompt(component, self)
        if isinstance(component, ResourceTemplate):
            return MountedTemplate(component, self)
        return MountedResource(component, self)

    def meta(self, meta: dict[str, Any] | None) -> dict[str, Any] | None:
        """A component's `_meta`, with an MCP Apps view's `ui.resourceUri` following the view's new URI."""
        ui = meta.get("ui") if meta else None
        if not isinstance(ui, dict) or not isinstance(ui.get("resourceUri"), str):
            return meta
        assert meta is not None
        return {**meta, "ui": {**ui, "resourceUri": self.uri(ui["resourceUri"])}}

    # -- following the mounted server (Registry's Watcher) --------------------------------------
    def vet(self, component: Component) -> None:
        copy = self.bridge(component)
        self.parent.registry.check_free(slot_of(copy), self)
        self.parent.registry.vet(copy)  # and in every server the parent is mounted in
        self._vetted = (component, copy)

    def filed(self, component: Component) -> None:
        vetted, self._vetted = self._vetted, None
        copy = vetted[1] if vetted is not None and vetted[0] is component else self.bridge(component)
        self.parent.registry.file_mounted(copy, self)

    def removed(self, slot: Slot) -> None:
        kind, key = slot
        renamed = self.name(key) if kind in ("tool", "prompt") else self.uri(key)
        self.parent.registry.unfile_mounted((kind, renamed), self)

    async def forward(self, event: ServerEvent) -> None:
        """A change the mounted server announced, told to the parent's clients under the parent's names.

        A copy (`import_server`) follows nothing its server says on its own, only what one of the
        copied components says through its `ctx` while the parent serves it.
        """
        from ..stores.bus import ResourceUpdated

        if not self.live and self not in _SERVING.get():
            return

        if isinstance(event, ResourceUpdated):
            event = ResourceUpdated(self.uri(event.uri))
        await self.parent.notifications.publish(event)

    # -- completion (Registry's CompletionRoute) ------------------------------------------------
    def route(self, params: dict[str, Any]) -> tuple[Completer | None, dict[str, Any]] | None:
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        registry = self.child.registry
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            name = self.original_name(ref["name"])
            if (
                name is None
                or registry.prompt(name) is None
                or self.name(name) not in self.parent.registry.prompts
            ):
                return None
            return registry.completer_for({**params, "ref": {**ref, "name": name}})
        if ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
            uri = self.original_uri(ref["uri"])
            if (
                uri is None
                or uri not in registry.templates
                or self.uri(uri) not in self.parent.registry.templates
            ):
                return None
            return registry.completer_for({**params, "ref": {**ref, "uri": uri}})
        return None

    def offers(self) -> bool:
        return self.child.registry.offers_completion()

    # -- serving -----------------------------------------------------------------------------
    async def serve(
        self, method: str, params: dict[str, Any], context: Context, inner: Inner
    ) -> dict[str, Any]:
        """Run `inner` as the mounted server would: its lifespan_context, inside its middleware."""
        serving = _SERVING.set((*_SERVING.get(), self))
        try:
            return await self._serve(method, params, context, inner)
        finally:
            _SERVING.reset(serving)

    async def _serve(
        self, method: str, params: dict[str, Any], context: Context, inner: Inner
    ) -> dict[str, Any]:
        context = self._context(context)
        middleware = self.child.middleware
        if not middleware:
            return await inner(params, context)
        scope = context.request_scope
        request: ServerRequestContext[Any, Any] = ServerRequestContext(
            method=method,
            params=params,
            request_id=scope.request_id,
            meta=scope.meta or None,
            protocol_version=scope.protocol_version,
            lifespan_context=scope.lifespan_context,
            session=ClientView(scope.client_capabilities, scope.client_info, scope.protocol_version),
            headers=scope.headers,
            era=scope.era,
        )

        async def call_next(request: ServerRequestContext[Any, Any]) -> dict[str, Any]:
            return await inner(dict(request.params or {}), context)

        return dump_result(await run_chain(middleware, request, call_next))

    def read_hints(self, result: dict[str, Any], context: Context) -> dict[str, Any]:
        """A read of the mounted server's resource, with its own `cache_hints["resources/read"]` if it set one.

        Only on 2026-07-28, where results carry hints; without one the parent's apply, as for every
        list (a list is the parent's, mixing every mount's components).
        """
        if "resources/read" not in self.child.cache_hints or not context.is_modern:
            return result
        ttl_ms, scope = self.child.cache_hint("resources/read")
        return {**result, "ttlMs": ttl_ms, "cacheScope": scope}

    def _context(self, context: Context) -> Context:
        """The request as the mounted server's components see it: its own `lifespan_context`, and itself
        as `ctx.mcp_server`, so `ctx.read_resource` reads its own resources under its own URIs and
        `ctx.notify_*` reach the parent's clients under the parent's names (through `forward`)."""
        scope = dataclasses.replace(
            context.request_scope, lifespan_context=self.child.lifespan_context, server=self.child
        )
        return Context(scope, observer=context.observer)


@runtime_checkable
class Guardable(Protocol):
    """A tool not built from a Python function (a bridged tool) that can still take a mount's `hide=`."""

    def guarded_signature(
        self, name: str, hidden: Mapping[str, Resolve], overrides: Overrides
    ) -> HandlerSignature: ...


class MountedTool(Tool):
    """A mounted server's tool under the parent's name; with `hidden`, a guard whose hidden arguments resolve."""

    def __init__(self, source: Tool, mount: Mount, hidden: Mapping[str, Resolve]) -> None:
        # The source's parts, shared (its signature, its overrides, its output): not analysed again.
        vars(self).update(vars(source))
        self.source = source
        self.mount = mount
        self.name = mount.name(source.name)
        self.meta = mount.meta(source.meta)
        self.hidden: tuple[str, ...] = tuple(hidden)
        """The arguments the parent fills from its resolver graph (`hide=`): gone from the input schema."""
        self.delegates = type(source).call is not Tool.call
        """A tool class with its own `call` (another mount's copy) is called as itself; the rest run here,
        through the source's signature and the source's `convert_result`."""
        self._copy_definition: dict[str, Any] | None = None
        if hidden:
            overrides = _Layered(source.signature.overrides, mount.parent.dependency_overrides)
            if isinstance(source, Guardable):
                signature = source.guarded_signature(self.name, hidden, overrides)
            elif self.delegates:
                raise InvalidSignature(
                    f"tool {source.name}: hide= works on tools built from functions or schemas; this one "
                    f"is a {type(source).__name__} (give the hiding to it where it is built)"
                )
            else:
                signature = HandlerSignature.analyse(
                    _hiding(source.fn, hidden), self.name, overrides, model_suffix="Arguments"
                )
            signature.before_body = source.signature.before_body
            self.signature = signature
            self.input_schema = _without(source.input_schema, hidden)
            self.param_headers = header_declarations(self.input_schema)

    def definition(self) -> dict[str, Any]:
        if self._copy_definition is None:
            definition = {**self.source.definition(), "name": self.name, "inputSchema": self.input_schema}
            if self.meta:
                definition["_meta"] = self.meta
            self._copy_definition = definition
        return self._copy_definition

    def convert_result(self, value: Any) -> dict[str, Any]:
        """The source tool's own conversion (a bridged tool passes its wire dict through as it is)."""
        return self.source.convert_result(value)

    def request_arguments(self, arguments: dict[str, Any] | None) -> dict[str, Any] | None:
        """The arguments as the mounted server's middleware sees them: hidden names gone, so a value
        a client sent for one (dropped anyway) never looks like the one the tool runs with."""
        if not self.hidden or not isinstance(arguments, dict):
            return arguments
        return {key: value for key, value in arguments.items() if key not in self.hidden}

    async def call(self, arguments: dict[str, Any] | None, context: Context) -> dict[str, Any]:
        params = {"name": self.source.name, "arguments": self.request_arguments(arguments)}
        return await self.mount.serve("tools/call", params, context, self._call)

    async def _call(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        arguments = params.get("arguments")
        if self.delegates:
            return await self.source.call(arguments, context)
        return await Tool.call(self, arguments, context)


class MountedPrompt(Prompt):
    """A mounted server's prompt under the parent's name."""

    def __init__(self, source: Prompt, mount: Mount) -> None:
        vars(self).update(vars(source))
        self.source = source
        self.mount = mount
        self.name = mount.name(source.name)

    def definition(self) -> dict[str, Any]:
        return {**self.source.definition(), "name": self.name}

    async def render(self, arguments: dict[str, Any] | None, context: Context) -> dict[str, Any]:
        async def inner(params: dict[str, Any], context: Context) -> dict[str, Any]:
            return await self.source.render(params.get("arguments"), context)

        return await self.mount.serve(
            "prompts/get", {"name": self.source.name, "arguments": arguments}, context, inner
        )


def _renamed_contents(result: dict[str, Any], original: str, uri: str) -> dict[str, Any]:
    """A read's result with the contents the mounted server gave at `original` now at `uri`."""
    contents = result.get("contents")
    if not isinstance(contents, list) or original == uri:
        return result
    renamed = [
        {**item, "uri": uri} if isinstance(item, dict) and item.get("uri") == original else item
        for item in contents
    ]
    return {**result, "contents": renamed}


class MountedResource(Resource):
    """A mounted server's resource at the parent's URI."""

    def __init__(self, source: Resource, mount: Mount) -> None:
        vars(self).update(vars(source))
        self.source = source
        self.mount = mount
        self.uri = mount.uri(source.uri)
        self.meta = mount.meta(source.meta)

    def definition(self) -> dict[str, Any]:
        definition = {**self.source.definition(), "uri": self.uri}
        if self.meta:
            definition["_meta"] = self.meta
        return definition

    async def read_result(self, context: Context) -> dict[str, Any]:
        async def inner(params: dict[str, Any], context: Context) -> dict[str, Any]:
            read = await self.source.read_result(context)
            return self.mount.read_hints(_renamed_contents(read, self.source.uri, self.uri), context)

        return await self.mount.serve("resources/read", {"uri": self.source.uri}, context, inner)


class MountedTemplate(ResourceTemplate):
    """A mounted server's resource template at the parent's URI template."""

    def __init__(self, source: ResourceTemplate, mount: Mount) -> None:
        vars(self).update(vars(source))
        self.source = source
        self.mount = mount
        self.uri = mount.uri(source.uri)
        self.meta = mount.meta(source.meta)

    def definition(self) -> dict[str, Any]:
        definition = {**self.source.definition(), "uriTemplate": self.uri}
        if self.meta:
            definition["_meta"] = self.meta
        return definition

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        original = self.mount.original_uri(uri)
        return None if original is None else self.source.match(original)

    async def read(self, uri: str, variables: dict[str, str | list[str]], context: Context) -> dict[str, Any]:
        original = self.mount.original_uri(uri) or uri

        async def inner(params: dict[str, Any], context: Context) -> dict[str, Any]:
            read = await self.source.read(original, variables, context)
            return self.mount.read_hints(_renamed_contents(read, original, uri), context)

        return await self.mount.serve("resources/read", {"uri": original}, context, inner)


# -- hiding ----------------------------------------------------------------------------------------
class _Layered(Overrides):
    """A guard's overrides: the mounted server's own first, then the parent's (whose graph fills hidden ones)."""

    def __init__(self, first: Overrides, then: Overrides) -> None:
        super().__init__()
        self.first = first
        self.then = then

    @property  # type: ignore[override]
    def version(self) -> int:
        return self.first.version + self.then.version

    @version.setter
    def version(self, value: int) -> None:
        """Nothing is set here: the layers count their own changes."""

    def __bool__(self) -> bool:
        return True

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self.first:
            return self.first[key]
        return self.then.get(key, default)


def _hiding(fn: Callable[..., Any], hidden: Mapping[str, Resolve]) -> Callable[..., Any]:
    """`fn` seen through a signature where each hidden parameter is `Annotated[T, Resolve(...)]`.

    Every parameter becomes keyword-only (the engine passes them by name), so a
    hidden one may drop its default wherever it stands.
    """
    target = call_target(fn)
    try:
        from typing import get_type_hints

        hints = get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise InvalidSignature(
            f"cannot read the annotations of {getattr(fn, '__qualname__', fn)}: {exc}"
        ) from exc
    parameters = []
    for param in inspect.signature(fn).parameters.values():
        annotation = hints.get(param.name, Any)
        if param.name in hidden:
            annotation = Annotated[annotation, hidden[param.name]]
            param = param.replace(default=inspect.Parameter.empty)
        parameters.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
    returns = hints.get("return", inspect.Signature.empty)

    guarded: Callable[..., Any]
    if inspect.iscoroutinefunction(target):

        async def run_async(**values: Any) -> Any:
            return await fn(**values)

        guarded = run_async
    else:

        def run_sync(**values: Any) -> Any:
            return fn(**values)

        guarded = run_sync

    setattr(guarded, "__signature__", inspect.Signature(parameters, return_annotation=returns))  # noqa: B010
    guarded.__annotations__ = {p.name: p.annotation for p in parameters}
    if returns is not inspect.Signature.empty:
        guarded.__annotations__["return"] = returns
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        if hasattr(fn, attribute):
            setattr(guarded, attribute, getattr(fn, attribute))
    return guarded


def _without(schema: dict[str, Any], hidden: Mapping[str, Resolve]) -> dict[str, Any]:
    """The input schema with the hidden parameters gone from `properties` and `required`."""
    trimmed = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        trimmed["properties"] = {k: v for k, v in properties.items() if k not in hidden}
    required = schema.get("required")
    if isinstance(required, list):
        trimmed["required"] = [name for name in required if name not in hidden]
        if not trimmed["required"]:
            del trimmed["required"]
    return trimmed
