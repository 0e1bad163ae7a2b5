"""MCPServer: what a server offers (tools, resources, prompts), the facade every transport serves.

This module is the public face: construction, the registration decorators,
what the server says about itself (serverInfo, capabilities, cache hints) and
the method table. The work behind the facade has its own modules, and
the state they share is in components the facade owns and hands them:
`registry` (a `Registry`: what is offered, by name), `deployment` (a
`Deployment`: requestState keys and stores) and the shared lifespan.
`_registration` builds components (all the analysis: schemas, resolver
plans) and files them in the registry, `_methods` holds the era-free
handlers that answer requests with wire dicts from it, `_serving` runs the
lifespan and picks a transport. `protocol/` decides which era a request
speaks and finishes results accordingly; `transports/` moves the bytes.
Neither knows this class: each asks for the `Protocol` it needs
(`protocol.serves`, `transports._serves`), which this class satisfies.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mcp_types import (
    Annotations,
    CallToolResult,
    GetPromptResult,
    Icon,
    Implementation,
    InputRequiredResult,
    ToolAnnotations,
)
from mcp_types import Prompt as PromptDefinition
from mcp_types import Resource as ResourceDefinition
from mcp_types import ResourceTemplate as ResourceTemplateDefinition
from mcp_types import Tool as ToolDefinition

from .._caching import CacheableMethod, CacheHint, checked_cache_hints
from .._resource_security import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from .._signature import Overrides
from .._uri_template import UriTemplate
from ..context import Context
from ..errors import METHOD_NOT_FOUND, MCPError, ToolError, unknown_name
from ..prompts import Prompt
from ..replay import ReplayStore
from ..resources import Resource, ResourceTemplate
from ..sealing import RequestStateSecurity
from ..tools import Tool
from . import _registration as registration
from . import _serving as serving
from ._completion import Completer
from ._deployment import Deployment, choose_deployment
from ._direct import ReadResourceContents, call_tool_directly, get_prompt_directly, read_resource_directly
from ._methods import Handler, method_table
from ._registry import Registry
from ._surface import CustomRoute, ServerSettings, SessionManager
from ._tracing import telemetry_wanted, trace_by_default
from .hooks import TaskSupport, install_builtins

if TYPE_CHECKING:
    from .._task_options import TaskOptions
    from ..auth.provider import OAuthAuthorizationServerProvider
    from ..auth.tokens import AuthSettings, TokenVerifier
    from ..extension import Extension
    from ..protocol.hooks import ServerTelemetry
    from ..protocol.listen import Notifications
    from ..protocol.middleware import ServerMiddleware
    from ..protocol.session import Connection
    from ..resolve.markers import Resolve
    from ..stores import RedisConnection
    from ..stores.bus import SubscriptionBus
    from ..stores.events import EventStore
    from ..stores.sessions import SessionStore
    from ..stores.tasks import TaskStore

__all__ = ["MCPServer"]

F = TypeVar("F", bound=Callable[..., Any])
Lifespan = Callable[["MCPServer"], AbstractAsyncContextManager[Any]]

DEFAULT_NAME = "mcp-server"
"""The name of a server built without one: the official SDK's, so a ported server reports the same."""

_PROVIDER_NEEDS_SETTINGS = (
    "MCPServer(auth_server_provider=...) needs auth=AuthSettings(issuer_url=<this server's own URL>, "
    "resource_server_url=<its MCP endpoint URL>): clients learn from it where to sign in and for which "
    "resource (a provider that knows both, like OAuthProxy, fills them in itself)"
)
_PROVIDER_AND_VERIFIER = (
    "MCPServer(auth_server_provider=..., token_verifier=...): give one of them. With a provider, the "
    "tokens it issues are checked by asking it (load_access_token); a token_verifier is for tokens "
    "another authorization server issues"
)


def _provider_protection(
    provider: OAuthAuthorizationServerProvider[Any, Any, Any],
    token_verifier: TokenVerifier | None,
    auth: AuthSettings | None,
) -> tuple[TokenVerifier, AuthSettings]:
    """The verifier and settings of a server that is its own authorization server (the official SDK's rules,
    plus a provider that knows its own: `ConfiguresProtection`)."""
    from ..auth.provider import ConfiguresProtection, ProviderTokenVerifier

    if token_verifier is not None:
        raise ValueError(_PROVIDER_AND_VERIFIER)
    if isinstance(provider, ConfiguresProtection):
        verifier, settings = provider.protection()
        if auth is not None and (
            auth.issuer_url != settings.issuer_url or auth.resource_server_url != settings.resource_server_url
        ):
            raise ValueError(
                "auth=AuthSettings(...) names another issuer or resource than this provider's own "
                f"({settings.issuer_url}, {settings.resource_server_url}): leave auth= out, the provider "
                "configures it"
            )
        return verifier, settings if auth is None else auth
    if auth is None:
        raise ValueError(_PROVIDER_NEEDS_SETTINGS)
    return ProviderTokenVerifier(provider), auth


class MCPServer:
    """An MCP server. Register with `@mcp.tool()`, `@mcp.resource(uri)`, `@mcp.prompt()`; serve with `mcp.run()`."""

    telemetry: ServerTelemetry | None = None
    """Observes every request (OpenTelemetry spans and metrics). Set at construction: it observes once
    the process has configured OpenTelemetry (a global provider), importing nothing before the process
    imports it; `mcp_resolve.telemetry.instrument` sets one with explicit providers. None with
    `telemetry=False` or MCP_RESOLVE_TELEMETRY=false: each request then costs one check."""
    _server_info: tuple[tuple[str | None, ...], dict[str, Any]] | None = None
    """`server_info()` as last made, and the fields it was made of (see there)."""

    def __init__(
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        version: str | None = None,
        auth_server_provider: OAuthAuthorizationServerProvider[Any, Any, Any] | None = None,
        token_verifier: TokenVerifier | None = None,
        *,
        tools: Sequence[Tool] | None = None,
        resources: Sequence[Resource | ResourceTemplate] | None = None,
        lifespan: Lifespan | None = None,
        auth: AuthSettings | None = None,
        resource_security: ResourceSecurity = DEFAULT_RESOURCE_SECURITY,
        request_state_security: RequestStateSecurity | None = None,
        cache_hints: Mapping[CacheableMethod, CacheHint] | None = None,
        replay_store: ReplayStore | None = None,
        page_size: int = 100,
        cache_ttl_ms: int = 0,
        first_round_answers: bool = False,
        task_store: TaskStore | str | os.PathLike[str] | None = None,
        task_options: TaskOptions | None = None,
        redis_url: str | None = None,
        subscription_bus: SubscriptionBus | None = None,
        subscriptions: SubscriptionBus | Literal[False] | None = None,
        event_store: EventStore | None = None,
        debug: bool = False,
        log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] | None = None,
        warn_on_duplicate_tools: bool = True,
        warn_on_duplicate_resources: bool = True,
        warn_on_duplicate_prompts: bool = True,
        dependencies: Sequence[str] | None = None,
        extensions: Sequence[Extension] | None = None,
        middleware: Sequence[ServerMiddleware[Any]] | None = None,
        detailed_tool_errors: bool = False,
        telemetry: bool | None = None,
    ) -> None:
        """The positional order is the official SDK's (name, title, description, instructions,
        website_url, icons, version, auth_server_provider, token_verifier); the rest are keywords.

        `subscriptions=` is the official's name: a bus (as `subscription_bus=`), or False to leave
        `subscriptions/listen` unserved (the `ctx.notify_*` calls still publish, to nobody listening).

        `telemetry=False` turns off the OpenTelemetry spans and metrics every server emits once an SDK
        is configured (None: MCP_RESOLVE_TELEMETRY, on by default; docs/observability.md).
        """
        if subscriptions is not None and subscriptions is not False:
            if subscription_bus is not None:
                raise ValueError("pass subscriptions= or subscription_bus=, not both")
            subscription_bus = subscriptions
        if auth_server_provider is not None:
            token_verifier, auth = _provider_protection(auth_server_provider, token_verifier, auth)
        self.auth_server_provider = auth_server_provider
        """This server's own authorization server (None: tokens come from another one, `token_verifier`).
        Its endpoints (`/authorize`, `/token` ...) are served beside the MCP endpoint over HTTP."""
        self.name = name or DEFAULT_NAME
        self.title = title
        self.description = description
        self.website_url = website_url
        self.icons = [Icon.model_validate(icon) for icon in icons] if icons is not None else None
        """title, description, website_url, icons: sent in serverInfo, as the official SDK sends them."""
        self.offers_resource_subscriptions = True
        """Whether `resources.subscribe` is declared (a proxy clears it when its target does not offer it)."""
        self.debug = debug
        """Starlette's debug mode (tracebacks in HTTP error pages) for the app `streamable_http_app()` builds."""
        self.dependencies = list(dependencies or ())
        """Informational: the packages this server needs (the official SDK's `dependencies`)."""
        self.log = logging.getLogger(f"mcp_resolve.server.{self.name}")
        self.registry = Registry(
            self.log,
            {
                "tool": warn_on_duplicate_tools,
                "resource": warn_on_duplicate_resources,
                "prompt": warn_on_duplicate_prompts,
            },
        )
        """What this server offers, by name: `registry.tool(name)`, `registry.tools`, `.resources`,
        `.templates`, `.prompts` (read-only; register with the decorators)."""
        # A crashed tool answers `Error executing tool NAME` (the official text); True adds the
        # exception's class name: `...: unexpected error (ValueError); the details are in the server log`.
        self.registry.detailed_tool_errors = detailed_tool_errors
        self.log_level = log_level
        """The level `run()` gives the `mcp_resolve` loggers; None: MCP_RESOLVE_LOG_LEVEL, else INFO."""
        if log_level is not None:
            logging.basicConfig(level=log_level)
            logging.getLogger("mcp_resolve").setLevel(log_level)
        if token_verifier is not None or auth is not None:
            from ..auth.tokens import check_protection

            check_protection(token_verifier, auth)
        self.token_verifier = token_verifier
        """Checks the bearer token of every HTTP request (None: the HTTP endpoint is open to anyone)."""
        self.auth = auth
        """Where clients get tokens and for which resource: Protected Resource Metadata and challenges."""
        self.first_round_answers = first_round_answers
        """Whether answers sent with no requestState count (2026-07-28). Off by default: such an answer
        went through no round this server sealed, so nothing vouches the question was ever asked.
        Never honoured for a `single_use` tool."""
        self.version = version or "0.1.0"
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        """The TTL of the list results and `server/discover` (ms) for methods `cache_hints` leaves out."""
        self.cache_hints = checked_cache_hints(cache_hints)
        """Per-method `ttlMs`/`cacheScope` of 2026-07-28 results (see `cache_hint`)."""
        self.resource_security = resource_security
        """The checks a template's extracted values pass unless `@mcp.resource(security=...)` says otherwise."""
        # Chosen once, here: the arguments, else the operator's settings (MCP_RESOLVE_STATE_KEYS, _REDIS_URL).
        self.deployment: Deployment = choose_deployment(
            name=self.name,
            named=bool(name),
            request_state_security=request_state_security,
            redis_url=redis_url,
            replay_store=replay_store,
            subscription_bus=subscription_bus,
            event_store=event_store,
            task_store=task_store,
            offers_single_use=self.registry.offers_single_use,
        )
        """The requestState keys and the stores, and the checks that a deployment can work (workers, claims)."""
        self._notifications: Notifications | None = None
        self.task_options = task_options
        self.task_support: TaskSupport | None = None
        """Runs the calls of tools registered with `task_support`: the tasks extension sets it (`hooks`)."""
        self.dependency_overrides = Overrides()
        self._lifespan = serving.SharedLifespan(lifespan)
        self.custom_routes: list[CustomRoute] = []
        """Routes `@mcp.custom_route` added, served beside the MCP endpoint by every app built after."""
        self.settings = ServerSettings(self, lifespan)
        """The official SDK's `mcp.settings`: the constructor's knobs, and host, port and paths for `run()`."""
        self._apps: weakref.WeakSet[Any] = weakref.WeakSet()  # the HTTP apps built (`session_manager`)
        self.lifespan_context: Any = None
        self._roots_changed: Callable[[], Awaitable[None]] | None = None
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        """Handshake-era sessions alive now (stdio, in-memory, HTTP), for messages outside any request."""
        self._handlers: dict[str, Handler] = method_table(self)
        if subscriptions is False:
            del self._handlers["subscriptions/listen"]
        install_builtins(self)  # the tasks extension: tasks/* and `task_support`
        for tool in tools or ():
            registration.add_prebuilt_tool(self.registry, self.dependency_overrides, tool)
        for resource in resources or ():
            self.add_resource(resource)
        self.middleware: list[ServerMiddleware[Any]] = list(middleware or ())
        """Wraps every inbound request and notification, outermost first (`mcp_resolve.ServerMiddleware`).
        A list: append to it before serving. Empty, it costs a request one check."""
        self.extension_settings: dict[str, dict[str, Any]] = {}
        """What `capabilities.extensions` advertises for the `extensions=` given, by identifier."""
        if extensions:
            from ..extension import apply_extensions

            self.extension_settings = apply_extensions(self, extensions)
        if telemetry_wanted(telemetry):
            trace_by_default(self)

    # -- the deployment: these read and set `deployment` ------------------------------------
    @property
    def request_state_security(self) -> RequestStateSecurity:
        """Seals and opens 2026-07-28 requestState (`request_state_security=`, else MCP_RESOLVE_STATE_KEYS)."""
        return self.deployment.request_state_security

    @request_state_security.setter
    def request_state_security(self, value: RequestStateSecurity) -> None:
        self.deployment.request_state_security = value

    @property
    def replay_store(self) -> ReplayStore:
        """Where single-use tools claim each sealed requestState once (`replay_store=`, else Redis or memory)."""
        return self.deployment.replay_store

    @replay_store.setter
    def replay_store(self, value: ReplayStore) -> None:
        self.deployment.replay_store = value

    @property
    def subscription_bus(self) -> SubscriptionBus | None:
        """Carries list changes and resource updates to every worker (None: in process, made on first use)."""
        return self.deployment.subscription_bus

    @subscription_bus.setter
    def subscription_bus(self, value: SubscriptionBus | None) -> None:
        self.deployment.subscription_bus = value

    @property
    def event_store(self) -> EventStore | None:
        """Keeps handshake-era SSE events so a client can resume with Last-Event-ID (None: not resumable)."""
        return self.deployment.event_store

    @event_store.setter
    def event_store(self, value: EventStore | None) -> None:
        self.deployment.event_store = value

    @property
    def task_store(self) -> TaskStore | str | os.PathLike[str] | None:
        """Where tasks live: a TaskStore, a SQLite file path, or None for in memory (made on first use)."""
        return self.deployment.task_store

    @task_store.setter
    def task_store(self, value: TaskStore | str | os.PathLike[str] | None) -> None:
        self.deployment.task_store = value

    @property
    def session_store(self) -> SessionStore | None:
        """Handshake-era sessions any worker serves (None: each lives in the process that opened it)."""
        return self.deployment.session_store

    @session_store.setter
    def session_store(self, value: SessionStore | None) -> None:
        self.deployment.session_store = value

    @property
    def redis(self) -> RedisConnection | None:
        """The Redis connection every shared store uses (None: no Redis URL was set)."""
        return self.deployment.redis

    @redis.setter
    def redis(self, value: RedisConnection | None) -> None:
        self.deployment.redis = value

    # -- registration --------------------------------------------------------------------
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | dict[str, Any] | None = None,
        structured_output: bool | None = None,
        single_use: bool = False,
        meta: dict[str, Any] | None = None,
        icons: list[Any] | None = None,
        input_schema: dict[str, Any] | None = None,
        scopes: Sequence[str] | None = None,
        task_support: Literal["optional", "required", "forbidden"] | None = None,
        resolve_before_task: bool = False,
    ) -> Callable[[F], F]:
        """Register a tool. `single_use=True` makes each sealed requestState redeemable once (a refund).

        `task_support="optional"` (or `"required"`): a call whose request
        declares the tasks extension returns a task at once, and the call runs
        in the background, its resolvers' questions becoming the task's
        `input_required` status (docs/tasks.md). Without the extension an
        optional tool runs as usual and a required one is refused (-32021).
        `resolve_before_task=True` runs the resolvers in the request instead
        (their questions as ordinary `input_required` rounds) and makes only
        the body the task.

        `scopes`: OAuth scopes the caller's token must hold. A protected HTTP
        server answers a call without them with the 403 step-up challenge
        before anything runs; the tool is still listed to everyone. Off HTTP
        (stdio, in memory) there is no token and they are not checked.

        `input_schema` replaces the schema generated from the signature, served
        verbatim (for keywords pydantic does not produce); the signature still
        validates every call.
        """
        if callable(name):
            raise TypeError("use @mcp.tool() with parentheses")

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                structured_output=structured_output,
                single_use=single_use,
                meta=meta,
                icons=icons,
                input_schema=input_schema,
                scopes=scopes,
                task_support=task_support,
                resolve_before_task=resolve_before_task,
            )
            return fn

        return register

    def add_tool(self, fn: Callable[..., Any] | Tool, **options: Any) -> Tool:
        """Register `fn` as `@mcp.tool(**options)` would, or a `Tool` built beforehand (a bridged tool)."""
        if isinstance(fn, Tool):
            if options:
                raise TypeError(f"add_tool(tool) takes no options (got {', '.join(sorted(options))})")
            registration.add_prebuilt_tool(self.registry, self.dependency_overrides, fn)
            return fn
        return registration.add_tool(self.registry, self.dependency_overrides, fn, **options)

    @staticmethod
    def as_proxy(target: MCPServer | str | Sequence[str], **options: Any) -> MCPServer:
        """A server that serves what `target` serves: an `http(s)://` URL or a stdio command line.

        Tools, resources, templates, prompts and completion pass through; the
        target's logging and progress reach the caller, and its questions
        (elicitation, sampling, roots) are asked of the caller on the caller's
        era. Options: `hide={"customer_id": Resolve(fn)}` takes an argument of
        every tool that has it out of the schema and fills it from `fn`;
        `auth`, `headers`, `env`, `cwd`, `mode` configure the upstream `Client`;
        `limits=ProxyLimits(...)` bounds time and sessions; the rest
        (`token_verifier`, `auth_settings` for the front's `AuthSettings`,
        `auth_server_provider`, `middleware`, ...) configure the front
        `MCPServer`. See docs/bridges.md.
        """
        from ..bridges import as_proxy

        return as_proxy(target, **options)

    def add_resource(self, resource: Resource | ResourceTemplate) -> None:
        """Register a resource built beforehand (`Resource.from_function(fn, uri)`, an extension's), as the official SDK's does."""
        registration.add_resource(self.registry, self.dependency_overrides, resource)

    @classmethod
    def from_openapi(
        cls,
        spec: Mapping[str, Any],
        client: Any = None,
        *,
        name: str | None = None,
        route_maps: Sequence[Any] | None = None,
        hide: Mapping[str, Any] | None = None,
        names: Mapping[str, str] | None = None,
        forward_headers: Sequence[str] = (),
        timeout: float = 30.0,
        max_response_bytes: int = 4 * 1024 * 1024,
        **server_options: Any,
    ) -> MCPServer:
        """A server whose tools (and resources, by `route_maps`) call the HTTP API `spec` describes.

        `spec`: a parsed OpenAPI 3.x document. `client`: the `httpx.AsyncClient`
        calls go through (its base URL, headers and auth are the API's); without
        one, a client on the document's first absolute `servers` URL. The rest
        is `mcp_resolve.bridges.openapi.openapi_components`'s; `server_options`
        go to `MCPServer(...)`. Needs the `openapi` extra (docs/bridges.md).
        """
        from ..bridges.openapi import client_for, openapi_components

        server = cls(name=name or _openapi_title(spec), **server_options)
        for component in openapi_components(
            spec,
            client if client is not None else client_for(spec),
            route_maps=route_maps,
            hide=hide,
            names=names,
            forward_headers=forward_headers,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
        ):
            if isinstance(component, Tool):
                server.add_tool(component)
            else:
                server.add_resource(component)
        return server

    @classmethod
    def from_fastapi(cls, app: Any, *, base_url: str = "http://fastapi", **options: Any) -> MCPServer:
        """`from_openapi(app.openapi(), ...)` calling the ASGI `app` in this process (no socket).

        Headers or auth the app expects go on the client: pass
        `client=httpx.AsyncClient(transport=httpx.ASGITransport(capped_asgi_app(app, ...)), ...)`
        to choose it; otherwise one with no credentials is made, its app capped at
        `max_response_bytes` as it writes (the transport holds a whole answer in memory).
        """
        import httpx

        from ..bridges.openapi import DEFAULT_MAX_RESPONSE_BYTES, capped_asgi_app

        cap = options.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
        client = options.pop("client", None) or httpx.AsyncClient(
            transport=httpx.ASGITransport(app=capped_asgi_app(app, cap)), base_url=base_url
        )
        return cls.from_openapi(app.openapi(), client, **options)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        annotations: Annotations | dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        security: ResourceSecurity | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with `{variables}` registers a template.

        `security`: the checks this template's extracted values pass (default:
        the server's `resource_security`, which refuses path traversal,
        absolute paths and NUL bytes). Static resources extract nothing.
        """
        if "{" in uri:
            UriTemplate(uri)  # a malformed template is refused here, before any function, as by the official

        def register(fn: F) -> F:
            registration.add_function_resource(
                self.registry,
                self.dependency_overrides,
                fn,
                uri,
                self.resource_security if security is None else security,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                annotations=annotations,
                meta=meta,
                icons=icons,
            )
            return fn

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        if callable(name):
            raise TypeError("use @mcp.prompt() with parentheses")

        def register(fn: F) -> F:
            registration.add_prompt(
                self.registry,
                self.dependency_overrides,
                fn,
                name=name,
                title=title,
                description=description,
                meta=meta,
            )
            return fn

        return register

    def add_prompt(self, prompt: Prompt) -> None:
        """Register a prompt built beforehand (`Prompt.from_function(fn)`), as the official SDK's does."""
        registration.add_prebuilt_prompt(self.registry, self.dependency_overrides, prompt)

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt (ValueError if there is none); follow with `notify_list_changed("prompts")`."""
        self.registry.remove_prompt(name)

    def custom_route(
        self, path: str, methods: list[str], name: str | None = None, include_in_schema: bool = True
    ) -> Callable[[F], F]:
        """Serve a Starlette handler (`async def handler(request) -> Response`) at `path` on the HTTP apps.

        For health checks, webhooks, OAuth callbacks: the route sits beside the
        MCP endpoint in the app `streamable_http_app()` (and `sse_app()`) builds,
        after it, so it never shadows it. No bearer check runs on it, as in the
        official SDK: check the caller yourself if it must not be public.
        """

        def register(fn: F) -> F:
            self.custom_routes.append(CustomRoute(path, fn, tuple(methods), name, include_in_schema))
            return fn

        return register

    def completion(self) -> Callable[[F], F]:
        """Register the argument-completion handler: `async def complete(ref, argument, context)`.

        As in the official SDK, it gets a `PromptReference | ResourceTemplateReference`,
        a `CompletionArgument` and a `CompletionContext | None`, and returns a
        `Completion` or None; annotated with `dict` and `Context`, it gets the
        request's dicts and the Context instead (`_completion.py`).
        """

        def register(fn: F) -> F:
            self.registry.completer = Completer(fn)
            return fn

        return register

    def mount(
        self, server: MCPServer, prefix: str | None = None, *, hide: Mapping[str, Resolve] | None = None
    ) -> None:
        """Serve everything `server` offers here too, live: what it registers later appears here.

        Tools and prompts are named `prefix_name`, resources and templates
        `scheme://prefix/path` (FastMCP's names); `prefix=None` keeps its names.
        Its resolvers, `dependency_overrides`, middleware, lifespan (entered with
        this server's), single-use tools and scopes keep working, and its
        `notify_*` calls reach this server's clients. A name that would clash with
        one served here is refused, now or when `server` registers it later.

        `hide={"customer_id": Resolve(current_customer)}` takes the parameter
        out of every mounted tool that has it (`"tool.param"` for one tool): it
        leaves the input schema and this server's resolver graph fills it.
        docs/bridges.md, "Composing servers".
        """
        from ._mount import mount

        mount(self, self._lifespan, server, prefix, hide, live=True)

    def import_server(
        self, server: MCPServer, prefix: str | None = None, *, hide: Mapping[str, Resolve] | None = None
    ) -> None:
        """Serve here a copy of what `server` offers now (named as `mount` names it); later changes stay there."""
        from ._mount import mount

        mount(self, self._lifespan, server, prefix, hide, live=False)

    def on_roots_changed(self, fn: F) -> F:
        self._roots_changed = fn
        return fn

    # -- what the server is --------------------------------------------------------------
    def components(self) -> list[Tool | Prompt | Resource | ResourceTemplate]:
        """Everything registered (tools, prompts, resources, templates): for tools that inspect a server."""
        return self.registry.components()

    def server_info(self) -> dict[str, Any]:
        """`serverInfo` as it goes out (every 2026-07-28 result carries it), a new dict each time.

        Without icons it is remembered against the five text fields it is made
        of, since a result's `_meta` needs it on every call: a fresh copy of the
        remembered one instead of a model built and dumped. (Icons are models
        that may be changed in place, so with icons it is made each time.)
        """
        key = (self.name, self.version, self.title, self.description, self.website_url)
        kept = self._server_info
        if self.icons is None and kept is not None and kept[0] == key:
            return dict(kept[1])  # its values are all strings: a shallow copy is a whole one
        info = Implementation(
            name=self.name,
            version=self.version,
            title=self.title,
            description=self.description,
            website_url=self.website_url,
            icons=self.icons,
        ).model_dump(by_alias=True, exclude_none=True, mode="json")
        if self.icons is None:
            self._server_info = (key, dict(info))
        return info

    def cache_hint(self, method: str) -> tuple[int, str]:
        """(`ttlMs`, `cacheScope`) for a cacheable method's 2026-07-28 results.

        A `cache_hints` entry wins; without one, `cache_ttl_ms` and "public" for
        the lists and `server/discover`, and 0 and "private" for `resources/read`
        (a resource's contents are the caller's own until said otherwise).
        """
        hint = self.cache_hints.get(method)
        if hint is not None:
            return hint.ttl_ms, hint.scope
        if method == "resources/read":
            return 0, "private"
        return self.cache_ttl_ms, "public"

    def capabilities(self, *, modern: bool) -> dict[str, Any]:
        capabilities: dict[str, Any] = {
            # Handshake sessions hear changes outside requests; 2026-07-28 clients on subscriptions/listen.
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
        }
        if not self.offers_resource_subscriptions:
            del capabilities["resources"]["subscribe"]
        if self.registry.offers_completion():
            capabilities["completions"] = {}
        if modern and any(tool.task_support for tool in self.registry.tools.values()):
            capabilities["extensions"] = {"io.modelcontextprotocol/tasks": {}}
        if modern and self.extension_settings:
            capabilities["extensions"] = {**capabilities.get("extensions", {}), **self.extension_settings}
        return capabilities

    def is_single_use(self, method: str, params: dict[str, Any]) -> bool:
        if method != "tools/call":
            return False
        tool = self.registry.tools.get(params.get("name"))  # type: ignore[arg-type]
        return tool is not None and tool.single_use

    def required_scopes(self, method: str, params: dict[str, Any]) -> tuple[str, ...]:
        """The OAuth scopes a request's target declares (`@mcp.tool(scopes=...)`); () when none."""
        if method != "tools/call":
            return ()
        name = params.get("name")
        tool = self.registry.tools.get(name) if isinstance(name, str) else None
        return () if tool is None else tool.scopes

    async def notify_resource_updated(self, uri: str) -> int:
        """Send `notifications/resources/updated` to every session subscribed to `uri`; how many were told.

        A session hears it on its channel outside requests: stdout on stdio,
        the GET stream on HTTP (a client without one open misses it); a
        2026-07-28 client on its `subscriptions/listen` stream. With a shared
        bus (Redis) every worker's clients hear it; the count is this process's.
        """
        from ..stores.bus import ResourceUpdated

        return await self.notifications.publish(ResourceUpdated(uri))

    async def notify_list_changed(self, kind: Literal["tools", "resources", "prompts"]) -> int:
        """Tell every connected handshake-era session that the `kind` list changed; how many were told.

        Call it after registering or removing at run time, so clients re-list.
        """
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError(f"kind must be 'tools', 'resources' or 'prompts', not {kind!r}")
        from ..stores import bus

        event: bus.ServerEvent = bus.PromptsListChanged()
        if kind != "prompts":
            event = bus.ToolsListChanged() if kind == "tools" else bus.ResourcesListChanged()
        return await self.notifications.publish(event)

    @property
    def notifications(self) -> Notifications:
        """The fan-out of change notifications (made on first use, with an in-process bus unless one was given)."""
        if self._notifications is None:
            from ..protocol.listen import Notifications
            from ..stores.bus import InMemorySubscriptionBus

            if self.subscription_bus is None:
                self.subscription_bus = InMemorySubscriptionBus()
            self._notifications = Notifications(self, self.subscription_bus)
        return self._notifications

    def registered_tool(self, name: str) -> Tool | None:
        """The tool registered under `name` now, or None."""
        return self.registry.tool(name)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; follow with `await mcp.notify_list_changed("tools")`."""
        self.registry.remove_tool(name)

    async def roots_changed(self) -> None:
        if self._roots_changed is not None:
            await self._roots_changed()

    @property
    def session_manager(self) -> SessionManager:
        """The official SDK's `mcp.session_manager`: `async with mcp.session_manager.run():` in the
        lifespan of a parent app runs the lifespan of the apps built by `streamable_http_app()`/`sse_app()`.

        RuntimeError before any was built, as in the official SDK.
        """
        if not self._apps:
            raise RuntimeError(
                "session_manager is available once streamable_http_app() (or sse_app()) has built an app"
            )
        return SessionManager(tuple(self._apps))

    def running(self) -> AbstractAsyncContextManager[MCPServer]:
        """Run the lifespan once however many transports or connections share this server."""
        return serving.running(self, self._lifespan)

    def run(
        self,
        transport: Literal["stdio", "streamable-http", "sse"] = "stdio",
        *,
        log_level: str | None = None,
        **options: Any,
    ) -> None:
        """Serve until stopped: stdio by default, or `transport="streamable-http"` (host, port, path, ...).

        `transport="sse"` serves the legacy HTTP+SSE transport (handshake era only; `sse_app`).

        What is not passed comes from the environment (`MCP_RESOLVE_HOST`, `_PORT`, `_PATH`,
        `_ALLOWED_HOSTS`, `_ALLOWED_ORIGINS`, `_LOG_LEVEL`; docs/configuration.md), then the
        defaults. `log_level` (else the server's own `log_level`) sets the `mcp_resolve` loggers.
        """
        if transport == "sse":
            options = _sse_names(options)
        serving.serve(
            self, transport, log_level or self.log_level, **self.settings.run_options(transport, options)
        )

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout until stdin closes, in the running event loop."""
        await serving.serve_async(self, "stdio", self.log_level)

    async def run_streamable_http_async(self, **options: Any) -> None:
        """Serve Streamable HTTP under uvicorn in the running event loop (the options of `run()`)."""
        options = self.settings.run_options("streamable-http", options)
        await serving.serve_async(self, "streamable-http", self.log_level, **options)

    async def run_sse_async(self, **options: Any) -> None:
        """Serve the legacy HTTP+SSE transport under uvicorn in the running event loop (`sse_app` options,
        plus host, port)."""
        options = self.settings.run_options("sse", _sse_names(options))
        await serving.serve_async(self, "sse", self.log_level, **options)

    def sse_app(self, mount_path: str | None = None, **options: Any) -> Any:
        """An ASGI app serving the legacy HTTP+SSE transport (protocol 2024-11-05's): GET `sse_path`
        ("/sse") opens a session's stream, its messages are POSTed to `message_path` ("/messages/").

        Handshake era only: a 2026-07-28 client needs `streamable_http_app()`.
        `mount_path`: where a parent app mounts this one, when the parent does not
        set the ASGI `root_path` itself (the `endpoint` event must name the full path).
        Options are `mcp_resolve.transports.http.sse.SSEOptions` fields; the official's
        `max_request_body_size` is accepted for `max_body_bytes`.
        """
        options = _sse_names(options)
        options.setdefault("sse_path", self.settings.sse_path)
        options.setdefault("message_path", self.settings.message_path)
        if mount_path is not None:
            options["mount_path"] = mount_path
        app = serving.sse_app(self, **options)
        self._apps.add(app)
        return app

    def streamable_http_app(self, path: str | None = None, **options: Any) -> Any:
        """An ASGI app serving this server at `path`, to run with uvicorn or mount in Starlette/FastAPI.

        `path` defaults to `settings.streamable_http_path` ("/mcp"); the official's
        `streamable_http_path=` is accepted as its other name.
        """
        path = options.pop("streamable_http_path", path) or self.settings.streamable_http_path
        app = serving.http_app(self, path, **options)
        self._apps.add(app)
        return app

    # -- the method table ----------------------------------------------------------------
    def serves(self, method: str) -> bool:
        """Whether a request method has a handler here (the built-in ones and any added)."""
        return method in self._handlers

    def served_methods(self) -> frozenset[str]:
        """Every request method with a handler here now (the built-in ones and any added)."""
        return frozenset(self._handlers)

    def add_method(self, method: str, handler: Handler, *, replace: bool = False) -> None:
        """Serve a request method of your own: `await handler(params, context)` returns the result dict.

        On both eras and every transport, finished like the built-in methods.
        A method already served is refused unless `replace=True`.
        """
        if method in self._handlers and not replace:
            raise ValueError(f"method {method!r} is already served")
        self._handlers[method] = handler

    def handler(self, method: str) -> Handler:
        """The era-free handler of `method`, called as `await handler(params, context)`."""
        handler = self._handlers.get(method)
        if handler is None:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return handler

    # -- direct calls (tests) ------------------------------------------------------------
    async def list_tools(self) -> list[ToolDefinition]:
        """The tools as `tools/list` lists them (every one, unpaged), as the official SDK's."""
        return [ToolDefinition.model_validate(tool.definition()) for tool in self.registry.tools.values()]

    async def list_resources(self) -> list[ResourceDefinition]:
        """The static resources as `resources/list` lists them (unpaged)."""
        resources = self.registry.resources.values()
        return [ResourceDefinition.model_validate(resource.definition()) for resource in resources]

    async def list_resource_templates(self) -> list[ResourceTemplateDefinition]:
        """The resource templates as `resources/templates/list` lists them (unpaged)."""
        templates = self.registry.templates.values()
        return [ResourceTemplateDefinition.model_validate(template.definition()) for template in templates]

    async def list_prompts(self) -> list[PromptDefinition]:
        """The prompts as `prompts/list` lists them (unpaged)."""
        return [
            PromptDefinition.model_validate(prompt.definition()) for prompt in self.registry.prompts.values()
        ]

    async def read_resource(
        self, uri: Any, context: Context[Any, Any] | None = None
    ) -> list[ReadResourceContents] | InputRequiredResult:
        """Read a resource in this process: its contents (`ReadResourceContents`), for tests and tools.

        Raises what the wire answers as an error: `ResourceNotFoundError` for a
        URI nothing serves, `ResourceError` from the function, `UnexpectedResourceError`
        around a crash. A template that asks for input returns its `InputRequiredResult`.
        """
        return await read_resource_directly(self, str(uri), context)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """Render a prompt in this process, as `prompts/get` would; ValueError for an unknown one."""
        return await get_prompt_directly(self, name, arguments, context)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool in this process, with no client and no transport: for unit tests.

        The official SDK's `MCPServer.call_tool`, same signature and outcomes, so a
        test suite moves across unchanged; `server/_direct.py` says what it does.
        """
        tools = self.registry.tools
        tool = tools.get(name)
        if tool is None:
            raise ToolError(unknown_name("tool", name, tools))
        return await call_tool_directly(self, tool, arguments, context)


def _sse_names(options: dict[str, Any]) -> dict[str, Any]:
    """The official SDK's keyword names of the SSE app, as ours."""
    options = dict(options)
    if "max_request_body_size" in options:
        options["max_body_bytes"] = options.pop("max_request_body_size")
    return options


def _openapi_title(spec: Mapping[str, Any]) -> str | None:
    info = spec.get("info") if isinstance(spec, Mapping) else None
    title = info.get("title") if isinstance(info, Mapping) else None
    return title if isinstance(title, str) and title else None
