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

from mcp_types import Annotations, CallToolResult, Icon, Implementation, InputRequiredResult, ToolAnnotations

from .._caching import CacheableMethod, CacheHint, checked_cache_hints
from .._resource_security import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from .._signature import Overrides
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
from ._direct import call_tool_directly
from ._methods import Handler, method_table
from ._registry import Registry
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
        event_store: EventStore | None = None,
        debug: bool = False,
        log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] | None = None,
        warn_on_duplicate_tools: bool = True,
        warn_on_duplicate_resources: bool = True,
        warn_on_duplicate_prompts: bool = True,
        dependencies: Sequence[str] | None = None,
        extensions: Sequence[Extension] | None = None,
        middleware: Sequence[ServerMiddleware[Any]] | None = None,
        telemetry: bool | None = None,
    ) -> None:
        """The positional order is the official SDK's (name, title, description, instructions,
        website_url, icons, version, auth_server_provider, token_verifier); the rest are keywords.

        `telemetry=False` turns off the OpenTelemetry spans and metrics every server emits once an SDK
        is configured (None: MCP_RESOLVE_TELEMETRY, on by default; docs/observability.md).
        """
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
        self.lifespan_context: Any = None
        self._roots_changed: Callable[[], Awaitable[None]] | None = None
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        """Handshake-era sessions alive now (stdio, in-memory, HTTP), for messages outside any request."""
        self._handlers: dict[str, Handler] = method_table(self)
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

    def add_tool(self, fn: Callable[..., Any], **options: Any) -> Tool:
        return registration.add_tool(self.registry, self.dependency_overrides, fn, **options)

    def add_resource(self, resource: Resource | ResourceTemplate) -> None:
        """Register a resource built beforehand (`Resource.from_function(fn, uri)`, an extension's), as the official SDK's does."""
        registration.add_resource(self.registry, self.dependency_overrides, resource)

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

    def on_roots_changed(self, fn: F) -> F:
        self._roots_changed = fn
        return fn

    # -- what the server is --------------------------------------------------------------
    def components(self) -> list[Tool | Prompt | Resource | ResourceTemplate]:
        """Everything registered (tools, prompts, resources, templates): for tools that inspect a server."""
        return self.registry.components()

    def server_info(self) -> dict[str, Any]:
        info = Implementation(
            name=self.name,
            version=self.version,
            title=self.title,
            description=self.description,
            website_url=self.website_url,
            icons=self.icons,
        )
        return info.model_dump(by_alias=True, exclude_none=True, mode="json")

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
        if self.registry.completer is not None:
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

    def running(self) -> AbstractAsyncContextManager[MCPServer]:
        """Run the lifespan once however many transports or connections share this server."""
        return serving.running(self, self._lifespan)

    def run(
        self,
        transport: Literal["stdio", "streamable-http"] = "stdio",
        *,
        log_level: str | None = None,
        **options: Any,
    ) -> None:
        """Serve until stopped: stdio by default, or `transport="streamable-http"` (host, port, path, ...).

        What is not passed comes from the environment (`MCP_RESOLVE_HOST`, `_PORT`, `_PATH`,
        `_ALLOWED_HOSTS`, `_ALLOWED_ORIGINS`, `_LOG_LEVEL`; docs/configuration.md), then the
        defaults. `log_level` (else the server's own `log_level`) sets the `mcp_resolve` loggers.
        """
        serving.serve(self, transport, log_level or self.log_level, **options)

    def streamable_http_app(self, path: str = "/mcp", **options: Any) -> Any:
        """An ASGI app serving this server at `path`, to run with uvicorn or mount in Starlette/FastAPI."""
        return serving.http_app(self, path, **options)

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
