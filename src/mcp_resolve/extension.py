"""Extensions (SEP-2133): opt-in bundles of behaviour a server declares in its capabilities.

The official SDK's extension API under the same names. An `Extension`
subclass names itself with a reverse-DNS `identifier` and contributes from a
closed set: tools (`ToolBinding`), resources (`ResourceBinding`), request
methods of its own (`MethodBinding`), and one `tools/call` interceptor.
`MCPServer(extensions=[...])` registers the contributions and advertises
`capabilities.extensions[identifier] = extension.settings()` on protocol
2026-07-28 (the handshake era's capabilities have no such field, so, as in
the official SDK, it is not sent there).

`require_client_extension(ctx, identifier)` refuses a request, with -32021
and the official error data, unless the client declared the extension.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from mcp_types import CallToolRequestParams
from mcp_types.methods import SPEC_CLIENT_METHODS
from pydantic import BaseModel, ValidationError

from .context import Context
from .errors import INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, MCPError
from .protocol.extension_ids import validate_extension_identifier
from .protocol.middleware import CallNext, ClientView, HandlerResult, ServerRequestContext, dump_result

if TYPE_CHECKING:
    from .protocol.serves import Handler
    from .resources import Resource, ResourceTemplate
    from .server import MCPServer

__all__ = [
    "Extension",
    "MethodBinding",
    "RequestHandler",
    "ResourceBinding",
    "ToolBinding",
    "apply_extensions",
    "require_client_extension",
    "validate_extension_identifier",
]

RequestHandler = Callable[[ServerRequestContext[Any, Any], Any], Awaitable[HandlerResult]]
"""An extension method's handler: `async (ctx, params) -> result`, `params` validated as `params_type`."""


@dataclass(frozen=True)
class ToolBinding:
    """A tool an extension contributes: `fn` registered as `mcp.add_tool(fn, meta=meta, **kwargs)`."""

    fn: Callable[..., Any]
    meta: dict[str, Any] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceBinding:
    """A resource an extension contributes: a `Resource` or `ResourceTemplate` built with its URI."""

    resource: Resource | ResourceTemplate


@dataclass(frozen=True)
class MethodBinding:
    """A request method an extension serves, such as `com.example/search`.

    `params_type` validates the params before `handler` runs (-32602 when
    they do not fit). `protocol_versions`, when given, limits the method to
    those versions: at any other it is answered as an unknown method.
    Extension methods only add: naming a method of the protocol itself is
    refused here, and one the server already serves is refused when the
    extension is applied.
    """

    method: str
    params_type: type[BaseModel]
    handler: RequestHandler
    protocol_versions: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.method in SPEC_CLIENT_METHODS:
            raise ValueError(
                f"MethodBinding cannot bind spec method {self.method!r}; extension methods are "
                "additive — use Extension.intercept_tool_call or MCPServer.middleware to wrap core behaviour"
            )
        if self.protocol_versions is not None and not self.protocol_versions:
            raise ValueError(
                f"MethodBinding for {self.method!r} has an empty protocol_versions set, so it could "
                "never be served; use None to admit every version"
            )


class Extension:
    """Base class of an extension: set `identifier`, override only what it contributes."""

    identifier: str
    """Reverse-DNS identifier, e.g. `com.example/search`; the key under `capabilities.extensions`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        identifier = cls.__dict__.get("identifier")
        if identifier is not None:  # one set in __init__ instead is checked when the server applies it
            validate_extension_identifier(identifier, owner=cls.__name__)

    def settings(self) -> dict[str, Any]:
        """What the server advertises at `capabilities.extensions[identifier]` ({} for none)."""
        return {}

    def advertised(self) -> bool:
        """Whether the server advertises the extension in its capabilities (checked once it is applied).

        True by default; an extension that can end up contributing nothing (MCP Apps with no view)
        says False then, so a client is not told of a feature that is not there.
        """
        return True

    def tools(self) -> Sequence[ToolBinding]:
        return ()

    def resources(self) -> Sequence[ResourceBinding]:
        return ()

    def methods(self) -> Sequence[MethodBinding]:
        return ()

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Wrap `tools/call`: return `await call_next(ctx)` to go on, or a result of your own to answer.

        `params` are the validated call params, and the tool runs with them
        whatever context is passed on; rewriting a request belongs to
        middleware. The first extension's interceptor is the outermost.
        """
        return await call_next(ctx)


class _DeclaredCapabilities(Protocol):
    @property
    def client_capabilities_dict(self) -> dict[str, Any]: ...


def require_client_extension(
    ctx: ServerRequestContext[Any, Any] | Context[Any, Any] | _DeclaredCapabilities, identifier: str
) -> None:
    """Refuse the request (-32021, naming the extension) unless the client declared `identifier`.

    Call it from an extension's method handler or interceptor (with their
    `ctx`), or from a tool (with its `Context`, or `ctx.request_context` as
    official code does).
    """
    if isinstance(ctx, ServerRequestContext):
        capabilities = ctx.session.client_capabilities_dict
    else:
        capabilities = ctx.client_capabilities_dict
    declared = (capabilities or {}).get("extensions")
    supported = isinstance(declared, dict) and identifier in declared
    if not supported:
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"Client did not declare required extension {identifier!r}",
            {"requiredCapabilities": {"extensions": {identifier: {}}}},
        )


# -- applying extensions to a server --------------------------------------------------------
def apply_extensions(server: MCPServer, extensions: Sequence[Extension]) -> dict[str, dict[str, Any]]:
    """Register every extension's contributions on `server`; the settings to advertise, by identifier."""
    applied: list[Extension] = []
    settings: dict[str, dict[str, Any]] = {}
    for extension in extensions:
        identifier = getattr(extension, "identifier", None)
        validate_extension_identifier(identifier, owner=type(extension).__name__)
        assert isinstance(identifier, str)
        if any(getattr(e, "identifier", None) == identifier for e in applied):
            raise ValueError(f"Extension {identifier!r} is already registered")
        for tool in extension.tools():
            server.add_tool(tool.fn, meta=tool.meta, **tool.kwargs)
        for resource in extension.resources():
            server.add_resource(resource.resource)
        for method in extension.methods():
            if server.serves(method.method):
                raise ValueError(
                    f"Extension {identifier!r} binds method {method.method!r}, which is already "
                    "registered; extension methods are additive and cannot replace another handler"
                )
            server.add_method(method.method, _method_handler(method))
        if extension.advertised():
            settings[identifier] = dict(extension.settings())
        applied.append(extension)
    interceptors = [e for e in applied if type(e).intercept_tool_call is not Extension.intercept_tool_call]
    if interceptors:
        server.add_method("tools/call", _intercepted(applied, server.handler("tools/call")), replace=True)
    return settings


def request_context(context: Context[Any, Any], params: dict[str, Any]) -> ServerRequestContext[Any, Any]:
    """The official handler-tier context of the request a `Context` belongs to."""
    meta = context.meta
    info = context.client_info
    return ServerRequestContext(
        method=context.method,
        params=params,
        request_id=context.request_id,
        meta=meta or None,
        protocol_version=context.protocol_version,
        lifespan_context=context.lifespan_context,
        session=ClientView(
            context.client_capabilities_dict,
            None if info is None else info.model_dump(by_alias=True, exclude_none=True, mode="json"),
            context.protocol_version,
        ),
        headers=context.headers,
        era="modern" if context.is_modern else "handshake",
    )


def _method_handler(binding: MethodBinding) -> Handler:
    async def serve(params: dict[str, Any], context: Context[Any, Any]) -> dict[str, Any]:
        try:
            typed = binding.params_type.model_validate(params, by_name=False)
        except ValidationError:
            raise MCPError(INVALID_PARAMS, "Invalid request parameters", "") from None
        versions = binding.protocol_versions
        if versions is not None and context.protocol_version not in versions:
            raise MCPError(METHOD_NOT_FOUND, "Method not found", binding.method)
        return dump_result(await binding.handler(request_context(context, params), typed))

    return serve


def _intercepted(extensions: Sequence[Extension], call_tool: Handler) -> Handler:
    """`tools/call` wrapped in each extension's interceptor, the first outermost."""

    async def serve(params: dict[str, Any], context: Context[Any, Any]) -> dict[str, Any]:
        try:
            typed = CallToolRequestParams.model_validate(params, by_name=False)
        except ValidationError:
            raise MCPError(INVALID_PARAMS, "Invalid request parameters", "") from None

        async def innermost(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
            return await call_tool(params, context)

        chain: CallNext = innermost
        for extension in reversed(extensions):
            chain = partial(_intercept, extension, typed, chain)
        return dump_result(await chain(request_context(context, params)))

    return serve


def _intercept(
    extension: Extension,
    params: CallToolRequestParams,
    call_next: CallNext,
    ctx: ServerRequestContext[Any, Any],
) -> Awaitable[HandlerResult]:
    return extension.intercept_tool_call(params, ctx, call_next)
