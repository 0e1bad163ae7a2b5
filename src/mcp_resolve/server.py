"""MCPServer: what a server offers (tools, resources, prompts) and the method table serving it.

Registration does all the analysis (schemas, resolver plans); the method
handlers here are era-free and return wire dicts. `protocol/` decides which
era a request speaks and finishes results accordingly; `transports/` moves
the bytes.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from mcp_types import Annotations, CallToolResult, Icon, Implementation, InputRequiredResult, ToolAnnotations

from .caching import CacheableMethod, CacheHint, checked_cache_hints
from .completion import Completer
from .context import Context
from .deployment import choose_stores
from .direct import call_tool_directly
from .errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MCPError,
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    unknown_name,
)
from .prompts import Prompt
from .protocol.param_headers import check_param_headers
from .replay import ReplayStore
from .resource_security import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from .resources import Resource, ResourceTemplate, UnsafeParameter
from .sealing import RequestStateSecurity
from .signature import ArgumentError, Overrides
from .tools import Tool

if TYPE_CHECKING:
    from .auth.tokens import AuthSettings, TokenVerifier
    from .extension import Extension
    from .protocol.hooks import ServerTelemetry
    from .protocol.listen import Notifications
    from .protocol.middleware import ServerMiddleware
    from .protocol.session import Connection
    from .stores.bus import SubscriptionBus
    from .stores.events import EventStore
    from .stores.tasks import TaskStore
    from .tasks.records import TaskOptions

__all__ = ["MCPServer"]

F = TypeVar("F", bound=Callable[..., Any])
Handler = Callable[[dict[str, Any], Context], Awaitable[dict[str, Any]]]
Lifespan = Callable[["MCPServer"], AbstractAsyncContextManager[Any]]

RESOURCE_NOT_FOUND_HANDSHAKE = -32002  # 2025-11-25 and earlier; 2026-07-28 uses -32602

DEFAULT_NAME = "mcp-server"
"""The name of a server built without one: the official SDK's, so a ported server reports the same."""

_NO_AUTHORIZATION_SERVER = (
    "auth_server_provider: mcp-resolve has no authorization server built in. Run one of your own "
    "(Keycloak, Auth0, Okta, Ory Hydra, ...) and make this server a resource server: "
    "MCPServer(..., token_verifier=JWTVerifier(...) or IntrospectionVerifier(...), "
    "auth=AuthSettings(issuer_url=..., resource_server_url=...)) from mcp_resolve.auth (docs/auth.md)."
)

_UNNAMED_SHARED_KEYS = (
    "this server has no name but seals requestState with shared keys (request_state_security or "
    "MCP_RESOLVE_STATE_KEYS): sealed state carries the server name as its audience, so that state "
    "minted by another service holding the same keys is refused, and unnamed servers would all "
    f"stamp {DEFAULT_NAME!r}. Name the server (MCPServer('my-service')) or set "
    "RequestStateSecurity(audience=...)."
)


class MCPServer:
    """An MCP server. Register with `@mcp.tool()`, `@mcp.resource(uri)`, `@mcp.prompt()`; serve with `mcp.run()`."""

    telemetry: ServerTelemetry | None = None
    """Observes every request (OpenTelemetry spans and metrics) once `mcp_resolve.telemetry.instrument`
    set it. None by default: each request then costs one check, and OpenTelemetry is never imported."""

    def __init__(
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        version: str | None = None,
        auth_server_provider: object | None = None,
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
    ) -> None:
        """The positional order is the official SDK's (name, title, description, instructions,
        website_url, icons, version, auth_server_provider, token_verifier); the rest are keywords.
        """
        if auth_server_provider is not None:
            raise NotImplementedError(_NO_AUTHORIZATION_SERVER)
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
        self._warn_on_duplicate = {
            "tool": warn_on_duplicate_tools,
            "resource": warn_on_duplicate_resources,
            "prompt": warn_on_duplicate_prompts,
        }
        self.log_level = log_level
        """The level `run()` gives the `mcp_resolve` loggers; None: MCP_RESOLVE_LOG_LEVEL, else INFO."""
        if log_level is not None:
            logging.basicConfig(level=log_level)
            logging.getLogger("mcp_resolve").setLevel(log_level)
        if token_verifier is not None or auth is not None:
            from .auth.tokens import check_protection

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
        # The operator's settings (MCP_RESOLVE_*), read when an argument leaves a choice to them.
        from .settings import load_settings

        settings = load_settings() if request_state_security is None or redis_url is None else None
        if settings is not None and redis_url is None:
            redis_url = settings.redis()
        self.request_state_security = request_state_security or RequestStateSecurity.from_keys(
            None if settings is None else settings.state_key_ring()
        )
        security = self.request_state_security
        if not name and not security.is_ephemeral and security.audience is None:
            raise ValueError(_UNNAMED_SHARED_KEYS)
        self.task_store = task_store
        """Where tasks live: a TaskStore, a SQLite file path, or None for in memory (made on first use)."""
        self.replay_store: ReplayStore
        self.subscription_bus: SubscriptionBus | None
        """Carries list changes and resource updates to every worker (None: in process, made on first use)."""
        self.event_store: EventStore | None
        """Keeps handshake-era SSE events so a client can resume with Last-Event-ID (None: not resumable)."""
        self.redis: Any
        self.session_store: Any
        # Chosen once, here: explicit stores, else Redis when redis_url or MCP_RESOLVE_REDIS_URL is set.
        choose_stores(
            self,
            redis_url=redis_url,
            replay_store=replay_store,
            subscription_bus=subscription_bus,
            event_store=event_store,
        )
        self._notifications: Notifications | None = None
        self.task_options = task_options
        self._task_runner: Any = None
        self.dependency_overrides = Overrides()
        self.log = logging.getLogger(f"mcp_resolve.server.{self.name}")
        self._lifespan = lifespan
        self._lifespan_users = 0
        self._lifespan_stack: Any = None
        self.lifespan_context: Any = None
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self._completion: Completer | None = None
        self._roots_changed: Callable[[], Awaitable[None]] | None = None
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        """Handshake-era sessions alive now (stdio, in-memory, HTTP), for messages outside any request."""
        self._handlers: dict[str, Handler] = {
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
            "tasks/get": partial(self._task_method, "tasks/get"),
            "tasks/update": partial(self._task_method, "tasks/update"),
            "tasks/cancel": partial(self._task_method, "tasks/cancel"),
            "subscriptions/listen": self._listen,
        }
        for tool in tools or ():
            self._add_prebuilt_tool(tool)
        for resource in resources or ():
            self.add_resource(resource)
        self.middleware: list[ServerMiddleware[Any]] = list(middleware or ())
        """Wraps every inbound request and notification, outermost first (`mcp_resolve.ServerMiddleware`).
        A list: append to it before serving. Empty, it costs a request one check."""
        self.extension_settings: dict[str, dict[str, Any]] = {}
        """What `capabilities.extensions` advertises for the `extensions=` given, by identifier."""
        if extensions:
            from .extension import apply_extensions

            self.extension_settings = apply_extensions(self, extensions)

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
        options.setdefault("name", None)
        for key in ("title", "description", "annotations", "structured_output", "meta", "icons"):
            options.setdefault(key, None)
        options.setdefault("single_use", False)
        tool = Tool(fn, overrides=self.dependency_overrides, **options)
        self._warn_if_duplicate("tool", tool.name, self._tools)
        self._tools[tool.name] = tool
        return tool

    def _add_prebuilt_tool(self, tool: Tool) -> None:
        """A `Tool.from_function(...)` built before this server: it resolves through this server's overrides."""
        if not isinstance(tool, Tool):
            raise TypeError(
                f"tools= takes mcp_resolve.tools.Tool objects (Tool.from_function(fn)), not {tool!r}"
            )
        tool.use_overrides(self.dependency_overrides)
        self._warn_if_duplicate("tool", tool.name, self._tools)
        self._tools[tool.name] = tool

    def add_resource(self, resource: Resource | ResourceTemplate) -> None:
        """Register a resource built beforehand (`Resource.from_function(fn, uri)`, an extension's), as the official SDK's does."""
        if not isinstance(resource, (Resource, ResourceTemplate)):
            raise TypeError(f"expected a Resource (Resource.from_function(fn, uri)), not {resource!r}")
        resource.use_overrides(self.dependency_overrides)
        registry: dict[str, Any] = (
            self._templates if isinstance(resource, ResourceTemplate) else self._resources
        )
        self._warn_if_duplicate("resource", resource.uri, registry)
        registry[resource.uri] = resource

    def _warn_if_duplicate(self, kind: str, key: str, registered: Mapping[str, Any]) -> None:
        """A second registration under one name replaces the first; say so unless told not to."""
        if key in registered and self._warn_on_duplicate[kind]:
            self.log.warning("%s already exists: %s (the new one replaces it)", kind.capitalize(), key)

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
            options = dict(
                uri=uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                annotations=annotations,
                meta=meta,
                overrides=self.dependency_overrides,
                icons=icons,
            )
            if "{" in uri:
                checks = security if security is not None else self.resource_security
                template = ResourceTemplate(fn, security=checks, **options)
                self._warn_if_duplicate("resource", uri, self._templates)
                self._templates[uri] = template
            else:
                self._warn_if_duplicate("resource", uri, self._resources)
                self._resources[uri] = Resource(fn, **options)
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
            prompt = Prompt(
                fn,
                name=name,
                title=title,
                description=description,
                meta=meta,
                overrides=self.dependency_overrides,
            )
            self._warn_if_duplicate("prompt", prompt.name, self._prompts)
            self._prompts[prompt.name] = prompt
            return fn

        return register

    def completion(self) -> Callable[[F], F]:
        """Register the argument-completion handler: `async def complete(ref, argument, context)`.

        As in the official SDK, it gets a `PromptReference | ResourceTemplateReference`,
        a `CompletionArgument` and a `CompletionContext | None`, and returns a
        `Completion` or None; annotated with `dict` and `Context`, it gets the
        request's dicts and the Context instead (`completion.py`).
        """

        def register(fn: F) -> F:
            self._completion = Completer(fn)
            return fn

        return register

    def on_roots_changed(self, fn: F) -> F:
        self._roots_changed = fn
        return fn

    # -- what the server is --------------------------------------------------------------
    def components(self) -> list[Tool | Prompt | Resource | ResourceTemplate]:
        """Everything registered (tools, prompts, resources, templates): for tools that inspect a server."""
        return [
            *self._tools.values(),
            *self._prompts.values(),
            *self._resources.values(),
            *self._templates.values(),
        ]

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
        if self._completion is not None:
            capabilities["completions"] = {}
        if modern and any(tool.task_support for tool in self._tools.values()):
            capabilities["extensions"] = {"io.modelcontextprotocol/tasks": {}}
        if modern and self.extension_settings:
            capabilities["extensions"] = {**capabilities.get("extensions", {}), **self.extension_settings}
        return capabilities

    def is_single_use(self, method: str, params: dict[str, Any]) -> bool:
        if method != "tools/call":
            return False
        tool = self._tools.get(params.get("name"))  # type: ignore[arg-type]
        return tool is not None and tool.single_use

    def required_scopes(self, method: str, params: dict[str, Any]) -> tuple[str, ...]:
        """The OAuth scopes a request's target declares (`@mcp.tool(scopes=...)`); () when none."""
        if method != "tools/call":
            return ()
        name = params.get("name")
        tool = self._tools.get(name) if isinstance(name, str) else None
        return () if tool is None else tool.scopes

    async def notify_resource_updated(self, uri: str) -> int:
        """Send `notifications/resources/updated` to every session subscribed to `uri`; how many were told.

        A session hears it on its channel outside requests: stdout on stdio,
        the GET stream on HTTP (a client without one open misses it); a
        2026-07-28 client on its `subscriptions/listen` stream. With a shared
        bus (Redis) every worker's clients hear it; the count is this process's.
        """
        from .stores.bus import ResourceUpdated

        return await self.notifications.publish(ResourceUpdated(uri))

    async def notify_list_changed(self, kind: Literal["tools", "resources", "prompts"]) -> int:
        """Tell every connected handshake-era session that the `kind` list changed; how many were told.

        Call it after registering or removing at run time, so clients re-list.
        """
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError(f"kind must be 'tools', 'resources' or 'prompts', not {kind!r}")
        from .stores import bus

        event: bus.ServerEvent = bus.PromptsListChanged()
        if kind != "prompts":
            event = bus.ToolsListChanged() if kind == "tools" else bus.ResourcesListChanged()
        return await self.notifications.publish(event)

    @property
    def notifications(self) -> Notifications:
        """The fan-out of change notifications (made on first use, with an in-process bus unless one was given)."""
        if self._notifications is None:
            from .protocol.listen import Notifications
            from .stores.bus import InMemorySubscriptionBus

            if self.subscription_bus is None:
                self.subscription_bus = InMemorySubscriptionBus()
            self._notifications = Notifications(self, self.subscription_bus)
        return self._notifications

    async def _listen(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        """`subscriptions/listen` (2026-07-28): a stream of the change notifications the client asked for."""
        return await self.notifications.listen(params, context)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; follow with `await mcp.notify_list_changed("tools")`."""
        if self._tools.pop(name, None) is None:
            raise KeyError(f"no tool named {name!r}")

    async def roots_changed(self) -> None:
        if self._roots_changed is not None:
            await self._roots_changed()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[MCPServer]:
        """Run the lifespan once however many transports or connections share this server."""
        if self._lifespan_users == 0 and self._lifespan is not None:
            self._lifespan_stack = self._lifespan(self)
            self.lifespan_context = await self._lifespan_stack.__aenter__()
        self._lifespan_users += 1
        try:
            yield self
        finally:
            self._lifespan_users -= 1
            if self._lifespan_users == 0 and self._task_runner is not None:
                await self._task_runner.shutdown()  # tasks running here stop, and their records say so
            if self._lifespan_users == 0 and self._lifespan_stack is not None:
                stack, self._lifespan_stack = self._lifespan_stack, None
                with anyio.CancelScope(shield=True):
                    await stack.__aexit__(None, None, None)
                self.lifespan_context = None
            if self._lifespan_users == 0 and self.redis is not None:
                with anyio.CancelScope(shield=True):  # this loop's Redis sockets close with it
                    await self.redis.aclose()

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
        level = log_level or self.log_level
        if transport == "stdio":
            from .transports.stdio import serve_stdio

            anyio.run(partial(serve_stdio, self, log_level=level))
        elif transport == "streamable-http":
            from .transports.http import serve_http

            serve_http(self, log_level=level, **options)
        else:
            raise ValueError(f"unknown transport {transport!r}: use 'stdio' or 'streamable-http'")

    def streamable_http_app(self, path: str = "/mcp", **options: Any) -> Any:
        """An ASGI app serving this server at `path`, to run with uvicorn or mount in Starlette/FastAPI."""
        from .transports.http import create_app

        app = create_app(self, path=path, **options)
        if self.debug:
            app.debug = True  # Starlette's: tracebacks in the error page of a crashed request
        return app

    # -- the method table ----------------------------------------------------------------
    def serves(self, method: str) -> bool:
        """Whether a request method has a handler here (the built-in ones and any added)."""
        return method in self._handlers

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

    def _page(self, items: Sequence[Any], params: dict[str, Any]) -> tuple[Sequence[Any], str | None]:
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            try:
                start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
            except (binascii.Error, ValueError, UnicodeDecodeError):
                raise MCPError(INVALID_PARAMS, "Invalid params: unknown cursor") from None
            if start < 0 or start > len(items):
                raise MCPError(INVALID_PARAMS, "Invalid params: unknown cursor")
        end = start + self.page_size
        next_cursor = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else None
        return items[start:end], next_cursor

    def _listing(self, key: str, definitions: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        page, next_cursor = self._page(definitions, params)
        result: dict[str, Any] = {key: list(page)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _list_tools(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        return self._listing("tools", [t.definition() for t in self._tools.values()], params)

    async def _call_tool(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise MCPError(INVALID_PARAMS, "Invalid params: tools/call needs a string 'name'")
        tool = self._tools.get(name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, unknown_name("tool", name, self._tools))
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        if tool.param_headers and context.is_modern and context.headers is not None:
            try:
                check_param_headers(tool.param_headers, arguments, context.headers)
            except ValueError as exc:
                raise MCPError(HEADER_MISMATCH, f"Header mismatch: {exc}") from None
        if tool.task_support is not None:
            from .tasks.methods import call_task_tool

            return await call_task_tool(self, tool, arguments, context)
        return await tool.call(arguments, context)

    async def _task_method(self, method: str, params: dict[str, Any], context: Context) -> dict[str, Any]:
        """`tasks/get`, `tasks/update`, `tasks/cancel` (the tasks extension, 2026-07-28)."""
        from .tasks.methods import serve_task_method

        return await serve_task_method(self, method, params, context)

    # -- direct calls (tests) ------------------------------------------------------------
    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool in this process, with no client and no transport: for unit tests.

        The official SDK's `MCPServer.call_tool`, same signature and outcomes, so a
        test suite moves across unchanged; `mcp_resolve.direct` says what it does.
        """
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(unknown_name("tool", name, self._tools))
        return await call_tool_directly(self, tool, arguments, context)

    async def _list_resources(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        return self._listing("resources", [r.definition() for r in self._resources.values()], params)

    async def _list_templates(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        return self._listing("resourceTemplates", [t.definition() for t in self._templates.values()], params)

    async def _read_resource(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "Invalid params: resources/read needs a string 'uri'")
        try:
            resource = self._resources.get(uri)
            if resource is not None:
                return await resource.read(context)
            for template in self._templates.values():
                variables = template.match(uri)
                if variables is not None:
                    return await template.read(uri, variables, context)
        except ArgumentError as exc:
            raise MCPError(INVALID_PARAMS, f"Invalid params for resource {uri}: {exc}") from None
        except UnsafeParameter as exc:
            # Answered exactly as an unknown URI: the client learns nothing of which check failed.
            self.log.info("resource read refused: %s", exc)
            raise self._not_found(uri, f"Resource not found: {uri}", context) from None
        except ResourceError as exc:
            if isinstance(exc, UnexpectedResourceError):
                self.log.error("resource %r raised an unexpected exception", uri, exc_info=exc.__cause__)
            else:
                self.log.info("resource %r failed: %r", uri, str(exc))
            if isinstance(exc, ResourceNotFoundError):
                raise self._not_found(uri, str(exc), context) from None
            raise MCPError(INTERNAL_ERROR, str(exc), {"uri": uri}) from None
        raise self._not_found(uri, f"Resource not found: {uri}", context)

    @staticmethod
    def _not_found(uri: str, message: str, context: Context) -> MCPError:
        """-32602 on 2026-07-28; -32002 on the handshake era, as 2025-11-25 asks (the official sends -32602)."""
        code = INVALID_PARAMS if context.is_modern else RESOURCE_NOT_FOUND_HANDSHAKE
        return MCPError(code, message, {"uri": uri})

    async def _list_prompts(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        return self._listing("prompts", [p.definition() for p in self._prompts.values()], params)

    async def _get_prompt(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        name = params.get("name")
        prompt = self._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise MCPError(INVALID_PARAMS, unknown_name("prompt", name, self._prompts))
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
        try:
            return await prompt.render(arguments, context)
        except ArgumentError as exc:
            raise MCPError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: {exc}") from None

    async def _complete(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        if self._completion is None:
            if not isinstance(params.get("ref"), dict) or not isinstance(params.get("argument"), dict):
                raise MCPError(
                    INVALID_PARAMS, "Invalid params: completion/complete needs 'ref' and 'argument'"
                )
            return {"completion": {"values": []}}
        return await self._completion.complete(params, context)
