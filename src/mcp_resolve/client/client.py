"""Client: connect to a server on any transport, speak whichever era it does, answer its questions.

The same handlers answer a handshake-era server's mid-call requests and a
2026-07-28 server's `inputRequests`; on the modern era `call_tool`,
`get_prompt` and `read_resource` run the input-required loop themselves and
return only the final result.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    CallToolResult,
    CompleteResult,
    CreateMessageRequestParams,
    ElicitRequestFormParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    ReadResourceResult,
    Root,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from ..errors import (
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    MCPError,
)
from .auth.errors import AuthorizationError
from .extensions import ExtensionSettings, declared_extensions
from .pipes import MessagePipe, open_stdio, stdio_command
from .session import ClientSession

if TYPE_CHECKING:
    import ssl

    import httpx

    from ..server import MCPServer
    from .tasks import TaskHandle

__all__ = ["Client"]

ModelT = TypeVar("ModelT", bound=BaseModel)
T = TypeVar("T")
Mode = Literal["auto", "legacy", "2026-07-28"]
ElicitationHandler = Callable[[ElicitRequestFormParams], Awaitable[Any]]
SamplingHandler = Callable[[CreateMessageRequestParams], Awaitable[Any]]
Roots = Sequence[str | Root] | Callable[[], Awaitable[Sequence[str | Root]]]
NotificationHandler = Callable[[str, dict[str, Any]], Awaitable[None]]
"""`async (method, params) -> None`: every notification the server sends, as it arrived."""

logger = logging.getLogger("mcp_resolve.client")

_ERA_META_KEYS = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY})
"""The `_meta` keys the client sets itself on 2026-07-28; a caller's `meta=` cannot replace them."""

_TRACING = "opentelemetry.trace"
"""Loaded only in a process that traces (or whose libraries do): then requests carry its trace context."""

_LIST_METHODS: dict[str, tuple[str, type[BaseModel]]] = {
    "tools": ("tools/list", ListToolsResult),
    "resources": ("resources/list", ListResourcesResult),
    "resourceTemplates": ("resources/templates/list", ListResourceTemplatesResult),
    "prompts": ("prompts/list", ListPromptsResult),
}


def _dump(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(value, dict):
        raise TypeError(f"a handler must return a result model or dict, got {type(value).__name__}")
    value.pop("resultType", None)
    return value


class _Session(ClientSession):
    """The session, raising an `AuthorizationError` (not a bare MCPError) when the OAuth flow gave up."""

    async def request(
        self, method: str, params: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        try:
            return await super().request(method, params, timeout=timeout)
        except MCPError as exc:
            typed = AuthorizationError.from_data(exc.message, exc.data)
            if typed is None:
                raise
            raise typed from None


def _http_auth(auth: httpx.Auth | str | None) -> httpx.Auth | None:
    """What `auth=` stands for: "oauth" is the full flow with its defaults, any other string a bearer token."""
    import httpx  # here, not at the top: a client without auth (or over stdio) need not load it

    if auth is None or isinstance(auth, httpx.Auth):
        return auth
    if not isinstance(auth, str):
        raise TypeError(f"auth must be an httpx.Auth, a bearer token or 'oauth', not {type(auth).__name__}")
    if auth == "oauth":
        try:
            from .auth.flow import OAuth
        except ImportError as exc:
            raise ImportError(f"{exc}; auth='oauth' needs: pip install 'mcp-resolve[auth]'") from None
        return OAuth()
    from .auth.bearer import BearerToken

    return BearerToken(auth)


class Client:
    """An MCP client. `async with Client(target) as client: await client.call_tool(...)`.

    `target` is an `MCPServer` (in memory), an `http(s)://` URL, or a command
    or script path (stdio; a list of arguments also works).

    `mode` picks the protocol era: `"auto"` probes with `server/discover` and
    falls back to the `initialize` handshake, `"2026-07-28"` or `"legacy"`
    insist on one. The handlers (`elicitation_handler`, `sampling_handler`,
    `roots`) answer what the server asks, on either era; the client declares
    exactly the capabilities it has handlers for, and the `extensions` it is
    given (`{"com.example/search": {}}`, identifier to settings).

    Connection options: `headers` go on every HTTP request; `auth` (HTTP only)
    signs every request: an `httpx.Auth`, a bearer token string, `"oauth"`
    for the MCP authorization flow with its defaults (the system browser,
    tokens in memory), or an `OAuth(...)` / `ClientCredentials(...)` from
    `mcp_resolve.client.auth` to choose them; the same object keeps its tokens
    across `async with` blocks. `http_client` is an `httpx.AsyncClient` of
    yours to send through (proxies, certificates; it is never closed here),
    `verify` the TLS check of the one the client builds otherwise (`False`, a
    CA bundle path or an `ssl.SSLContext`). A stdio server gets `env` on top
    of this process's environment and runs in `cwd`.

    `init_timeout` bounds connecting (the era negotiation), not counting the
    minutes a person spends logging in; `probe_timeout` bounds only the
    `server/discover` probe of `mode="auto"`, after which a silent server is
    taken for a handshake-era one.
    """

    def __init__(
        self,
        target: MCPServer | str | Sequence[str],
        *,
        mode: Mode = "auto",
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
        sampling_tools: bool = False,
        roots: Roots | None = None,
        log_handler: Callable[[LoggingMessageNotificationParams], Awaitable[None]] | None = None,
        progress_handler: Callable[[ProgressNotificationParams], Awaitable[None]] | None = None,
        notification_handler: NotificationHandler | None = None,
        log_level: str | None = None,
        client_info: dict[str, Any] | None = None,
        extensions: ExtensionSettings | None = None,
        max_rounds: int = 10,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        probe_timeout: float = 10.0,
        init_timeout: float | None = None,
        auth: httpx.Auth | str | None = None,
        http_client: httpx.AsyncClient | None = None,
        verify: ssl.SSLContext | bool | str | None = None,
    ) -> None:
        is_http = isinstance(target, str) and target.startswith(("http://", "https://"))
        if auth is not None and not is_http:
            raise ValueError(
                "auth= applies to http(s):// targets; a stdio server takes credentials from env="
            )
        if (http_client is not None or verify is not None) and not is_http:
            raise ValueError("http_client= and verify= apply to http(s):// targets")
        if http_client is not None and verify is not None:
            raise ValueError("pass verify= or http_client=, not both: set verify on your http_client")
        if cwd is not None and (is_http or not isinstance(target, str | list | tuple)):
            raise ValueError("cwd= applies to a stdio server (a command or script path)")
        if mode not in ("auto", "legacy", *MODERN_PROTOCOL_VERSIONS):
            raise ValueError(
                f"mode must be 'auto', 'legacy' or one of {list(MODERN_PROTOCOL_VERSIONS)}, got {mode!r}"
            )
        self.target = target
        """Where the server is: an `MCPServer`, an `http(s)://` URL, or a stdio command or script path."""
        self.mode = mode
        """The era asked for: `"auto"`, `"legacy"` or a modern version; `protocol_version` is the one negotiated."""
        self.elicitation_handler = elicitation_handler
        """Answers the server's forms (`elicitation/create`); while None, the client does not declare elicitation."""
        self.sampling_handler = sampling_handler
        """Answers the server's LLM requests (`sampling/createMessage`); while None, no sampling capability."""
        self.sampling_tools = sampling_tools
        """Whether the sampling capability says the handler can take `tools` (tool use in sampling)."""
        self.roots = roots
        """The roots the client offers (`roots/list`): a list, or an async function returning one."""
        self.log_handler = log_handler
        """Receives the server's log messages (`notifications/message`)."""
        self.progress_handler = progress_handler
        """Receives progress of tool calls, reads and prompts; with it set, those requests carry a progress token.

        A task's status messages reach it too, as numbered progress.
        """
        self.notification_handler = notification_handler
        """Receives every notification the server sends, as `(method, params)`, after the log and progress handlers.

        The hook for what the typed handlers do not cover: list changes
        (`notifications/tools/list_changed`, ...), resource updates, or an
        extension's own notifications. On 2026-07-28 list changes arrive
        only on a `subscriptions/listen` request, which `request` can hold
        open. A handler that raises is logged and the connection goes on.
        """
        self.log_level = log_level or ("debug" if log_handler else None)
        """The lowest log level the client asks for ("debug" when a `log_handler` is given).

        On 2026-07-28 it travels with every request; on the handshake era a
        server takes it through `request("logging/setLevel", {"level": ...})`.
        """
        self.client_info = client_info or {"name": "mcp-resolve-client", "version": "0.1.0"}
        """The client's name and version, as sent to the server (`clientInfo`)."""
        self.extensions = declared_extensions(extensions)
        """The client extensions declared (SEP-2133), identifier to settings, as `capabilities.extensions`.

        Checked and copied at construction: an identifier must be
        `vendor-prefix/name` with a reverse-DNS prefix and settings a JSON
        object. Declared on both eras, as the official client does: in
        `initialize` on the handshake era, on every request on 2026-07-28.
        """
        self.max_rounds = max_rounds
        """How many input-required rounds (2026-07-28) one call may take before it gives up."""
        self.headers = headers
        """Headers added to every HTTP request."""
        self.env = env
        """Environment variables for a stdio server, on top of this process's own."""
        self.cwd = cwd
        """The working directory of a stdio server (None: this process's)."""
        self.probe_timeout = probe_timeout
        """Seconds `mode="auto"` waits for the `server/discover` probe before it tries `initialize`."""
        self.init_timeout = init_timeout
        """Seconds connecting may take in all (None: no limit); a person's time on a login page does not count."""
        self.auth = _http_auth(auth)
        """The `httpx.Auth` that signs each HTTP request (what `auth=` stood for), or None."""
        self.http_client = http_client
        """The caller's `httpx.AsyncClient` that HTTP requests go through, or None for one of the client's own."""
        self.verify = verify
        """The TLS check of the client's own HTTP client (None: the system's trusted CAs)."""
        self.protocol_version: str | None = None
        """The negotiated protocol version once connected (`"2026-07-28"`, `"2025-11-25"`, ...), else None."""
        self.server_info: dict[str, Any] | None = None
        """The server's `name`, `version` and other implementation details, when it sent them."""
        self.server_capabilities: dict[str, Any] = {}
        """What the server said it can do (`tools`, `resources`, `prompts`, `logging`, `extensions`, ...)."""
        self.instructions: str | None = None
        """The server's instructions for whoever uses it (an agent's system prompt, say), when it gave any."""
        self._session: ClientSession | None = None
        self._stack: AsyncExitStack | None = None
        self._progress_tokens = 0

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def is_modern(self) -> bool:
        """Whether the session speaks 2026-07-28 (stateless requests, input-required rounds, tasks).

        False on the handshake era, and before connecting.
        """
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            pipe = await stack.enter_async_context(self._open_pipe())
            session = _Session(pipe, self._answer, self._notified)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(session.run, group)
            self._session = session
            await self._within(self._negotiate(), self.init_timeout)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    @asynccontextmanager
    async def _open_pipe(self) -> AsyncIterator[MessagePipe]:
        from ..server import MCPServer

        if isinstance(self.target, MCPServer):
            from ..transports.memory import connect_in_memory

            async with connect_in_memory(self.target) as memory_pipe:
                yield memory_pipe
        elif isinstance(self.target, str) and self.target.startswith(("http://", "https://")):
            from .http import open_http

            async with open_http(
                self.target,
                headers=self.headers,
                auth=self.auth,
                verify=self.verify,
                http_client=self.http_client,
            ) as http_pipe:
                yield http_pipe
        else:
            cwd = None if self.cwd is None else os.fspath(self.cwd)
            async with open_stdio(stdio_command(self.target), env=self.env, cwd=cwd) as stdio_pipe:
                yield stdio_pipe

    def capabilities(self) -> dict[str, Any]:
        """The capabilities the client declares: one per handler it has, and its `extensions`.

        Read afresh for every request on 2026-07-28, so a handler set after
        connecting counts from the next request; the handshake era declares
        them once, in `initialize`.
        """
        capabilities: dict[str, Any] = {}
        if self.elicitation_handler is not None:
            capabilities["elicitation"] = {"form": {}}
        if self.sampling_handler is not None:
            capabilities["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        if self.extensions:
            capabilities["extensions"] = {key: dict(value) for key, value in self.extensions.items()}
        return capabilities

    def _meta(self, version: str) -> dict[str, Any]:
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_META_KEY: version,
            CLIENT_CAPABILITIES_META_KEY: self.capabilities(),
            CLIENT_INFO_META_KEY: self.client_info,
        }
        if self.log_level is not None:
            meta[LOG_LEVEL_META_KEY] = self.log_level
        return meta

    async def _discover(self, version: str, timeout: float | None = None) -> dict[str, Any]:
        """`server/discover` at `version`; a refusal naming versions we speak is retried once with the newest.

        The retry happens even when that is the version just sent: the server
        said which versions it takes, and its word is the one to follow.
        """
        session = self._require_session()
        try:
            return await self._within(
                session.request("server/discover", _traced({"_meta": self._meta(version)})), timeout
            )
        except MCPError as exc:
            offered = exc.data.get("supported") if isinstance(exc.data, dict) else None
            common = [v for v in MODERN_PROTOCOL_VERSIONS if isinstance(offered, list) and v in offered]
            if exc.code != UNSUPPORTED_PROTOCOL_VERSION or not common:
                raise
        return await self._within(
            session.request("server/discover", _traced({"_meta": self._meta(common[-1])})), timeout
        )

    async def _within(self, operation: Awaitable[T], timeout: float | None) -> T:
        """`operation` within `timeout` seconds, not counting the time a person spends logging in.

        The probe's timeout is for servers that never answer; a 401 that
        opens a browser must not make a modern server look like a legacy one.
        """
        clock: Callable[[], float] | None = getattr(self.auth, "time_with_person", None)
        if timeout is None or clock is None:
            with anyio.fail_after(timeout):
                return await operation
        started, waited = anyio.current_time(), clock()
        with anyio.CancelScope(deadline=started + timeout) as scope:
            async with anyio.create_task_group() as group:

                async def extend() -> None:
                    while True:
                        scope.deadline = started + timeout + (clock() - waited)
                        await anyio.sleep(0.2)

                group.start_soon(extend)
                try:
                    result = await operation
                except Exception as exc:  # raised as itself below, not wrapped in an ExceptionGroup
                    failure: Exception | None = exc
                else:
                    failure = None
                group.cancel_scope.cancel()
            if failure is not None:
                raise failure
            return result
        raise TimeoutError

    async def _negotiate(self) -> None:
        if self.mode in MODERN_PROTOCOL_VERSIONS:
            await self._adopt_modern(await self._discover(self.mode))
            return
        if self.mode == "auto":
            try:
                result = await self._discover(MODERN_PROTOCOL_VERSIONS[-1], timeout=self.probe_timeout)
            except AuthorizationError:
                raise  # no login: the server's era is beside the point
            except MCPError as exc:
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                    raise MCPError(
                        exc.code, f"the server supports none of our modern versions: {exc.message}", exc.data
                    ) from None
            except TimeoutError:
                pass
            else:
                await self._adopt_modern(result)
                return
        await self._initialize()

    async def _adopt_modern(self, discover: dict[str, Any]) -> None:
        supported = discover.get("supportedVersions") or []
        common = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
        if not common:
            raise MCPError(
                UNSUPPORTED_PROTOCOL_VERSION, f"no common protocol version (server offers {supported})"
            )
        self.protocol_version = common[-1]
        self.server_capabilities = discover.get("capabilities") or {}
        self.server_info = (discover.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
        self.instructions = discover.get("instructions")

    async def _initialize(self) -> None:
        session = self._require_session()
        result = await session.request(
            "initialize",
            _traced(
                {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": self.capabilities(),
                    "clientInfo": self.client_info,
                }
            ),
        )
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_PROTOCOL_VERSIONS:
            raise MCPError(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"the server chose protocol version {version!r}, which we do not speak",
            )
        self.protocol_version = version
        self.server_capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo")
        self.instructions = result.get("instructions")
        await session.notify("notifications/initialized")

    def _require_session(self) -> ClientSession:
        if self._session is None:
            raise RuntimeError("use the Client inside 'async with'")
        return self._session

    # -- requests ------------------------------------------------------------------------
    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return its raw result (a dict), as the negotiated era wants it sent.

        On 2026-07-28 the client adds its `_meta` (protocol version, client
        info, capabilities, log level) under any `_meta` in `params`; on the
        handshake era `params` go as they are. No input-required rounds run
        here: a 2026-07-28 `input_required` result comes back as it is. Use it
        for methods without a method of their own (`logging/setLevel`,
        `subscriptions/listen`, an extension's method) or to drive the rounds
        yourself. An error answer raises `MCPError`.
        """
        params = dict(params or {})
        if self.is_modern:
            assert self.protocol_version is not None
            params["_meta"] = {**self._meta(self.protocol_version), **(params.get("_meta") or {})}
        if self.progress_handler is not None and method in ("tools/call", "resources/read", "prompts/get"):
            self._progress_tokens += 1
            params.setdefault("_meta", {})["progressToken"] = f"p{self._progress_tokens}"
        return await self._require_session().request(method, _traced(params))

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send one notification, as it is (no `_meta` is added on either era); there is no answer.

        For instance `notifications/cancelled` with the `requestId` of a
        request the server should stop (a `subscriptions/listen` stream over
        stdio), or `notifications/roots/list_changed` after the roots change.
        """
        await self._require_session().notify(method, params)

    async def _interactive(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request, retried through input-required rounds until a final result (modern era)."""
        request_params = dict(params)
        for _round in range(self.max_rounds):
            result = await self.request(method, request_params)
            if result.get("resultType") != "input_required":
                return result
            input_requests = result.get("inputRequests") or {}
            responses = {
                key: await self._answer(q.get("method", ""), q.get("params") or {})
                for key, q in input_requests.items()
            }
            request_params = dict(params)
            if responses:
                request_params["inputResponses"] = responses
            if result.get("requestState") is not None:
                request_params["requestState"] = result["requestState"]
        raise RuntimeError(f"{method} did not complete within {self.max_rounds} input-required rounds")

    async def _list(self, key: str, cursor: str | None) -> Any:
        method, model = _LIST_METHODS[key]
        if cursor is not None:
            return model.model_validate(await self.request(method, {"cursor": cursor}))
        items: list[Any] = []
        next_cursor: str | None = None
        while True:
            page = await self.request(method, {"cursor": next_cursor} if next_cursor else {})
            items.extend(page.get(key) or [])
            next_cursor = page.get("nextCursor")
            if not next_cursor:
                break
        return model.model_validate({key: items})

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """All tools (every page), or one page when `cursor` is given."""
        return await self._list("tools", cursor)  # type: ignore[no-any-return]

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """All concrete resources (every page), or one page when `cursor` is given.

        Templated resources (`books://{id}`) are listed by `list_resource_templates`.
        """
        return await self._list("resources", cursor)  # type: ignore[no-any-return]

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        """All resource templates (every page), or one page when `cursor` is given.

        Fill a template's URI and pass it to `read_resource`.
        """
        return await self._list("resourceTemplates", cursor)  # type: ignore[no-any-return]

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """All prompts (every page), or one page when `cursor` is given."""
        return await self._list("prompts", cursor)  # type: ignore[no-any-return]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        task: bool | None = None,
        meta: dict[str, Any] | None = None,
    ) -> CallToolResult:
        """Call a tool and return its result, through any rounds of questions.

        A tool that fails is a result with `is_error=True` (its text is for
        the model); a refused call raises `MCPError`. The server's questions
        are answered by the client's handlers: mid-call on the handshake era,
        in input-required rounds (at most `max_rounds`) on 2026-07-28.

        `task=True` lets the server run the call as a task (2026-07-28, the
        tasks extension): it is polled to the end and its questions answered
        by the same handlers. By default (`None`) a call is plain, unless the
        server refuses it because the tool runs only as a task; `False` never
        makes a task. `call_tool_task` gives the task itself.

        `meta` goes in the request's `_meta` (a trace id, a caller's
        context for the server's middleware); the keys the client sets
        itself on 2026-07-28 (protocol version, client info, capabilities)
        stay the client's.
        """
        if task:
            return await (await self.call_tool_task(name, arguments, meta=meta)).result()
        try:
            result = await self._interactive("tools/call", self._tool_call(name, arguments, meta))
            return CallToolResult.model_validate(result)
        except MCPError as exc:
            from .tasks import wants_tasks

            if task is False or exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY or not self.is_modern:
                raise
            if not wants_tasks(exc):
                raise
        return await (await self.call_tool_task(name, arguments, meta=meta)).result()

    def _tool_call(
        self, name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The params of a `tools/call`, the caller's `meta` without the keys the client owns."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = {key: value for key, value in meta.items() if key not in _ERA_META_KEYS}
        return params

    async def call_tool_task(
        self, name: str, arguments: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None
    ) -> TaskHandle:
        """Call a tool declaring the tasks extension; a handle on the task (`status`, `result`, `cancel`).

        2026-07-28 only (a RuntimeError on the handshake era). Questions asked
        before the task exists (a tool that resolves first) are answered here;
        if the server answers at once instead of making a task, the handle's
        `task_id` is None and `result()` is that answer. `meta` is as for
        `call_tool`.
        """
        from .tasks import start_task

        return await start_task(self, self._tool_call(name, arguments, meta))

    def task(self, task_id: str) -> TaskHandle:
        """A handle on a task this client's caller started earlier (its id kept, say, across a restart)."""
        from .tasks import TaskHandle

        return TaskHandle(self, task_id)

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """Read the resource at `uri` (a listed one, or a template's URI filled in): its contents.

        On 2026-07-28 a resource whose resolvers ask questions goes through
        input-required rounds, answered by the client's handlers.
        """
        return ReadResourceResult.model_validate(await self._interactive("resources/read", {"uri": uri}))

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        """The prompt `name` filled with `arguments`: its messages, ready for a model.

        Prompt arguments are strings, as the protocol has them. On 2026-07-28
        a prompt whose resolvers ask questions goes through input-required
        rounds, answered by the client's handlers.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return GetPromptResult.model_validate(await self._interactive("prompts/get", params))

    async def complete(
        self, ref: dict[str, Any], argument: dict[str, str], context_arguments: dict[str, str] | None = None
    ) -> CompleteResult:
        """Suggestions for one argument as it is being typed (`completion/complete`).

        `ref` names what is being filled: `{"type": "ref/prompt", "name": ...}`
        or `{"type": "ref/resource", "uri": template}`; `argument` is
        `{"name": ..., "value": typed_so_far}`; `context_arguments` are the
        arguments already filled, for completions that depend on them. Only
        servers that declare the `completions` capability answer.
        """
        params: dict[str, Any] = {"ref": ref, "argument": argument}
        if context_arguments:
            params["context"] = {"arguments": context_arguments}
        return CompleteResult.model_validate(await self.request("completion/complete", params))

    async def ping(self) -> None:
        """Check that the server answers (`ping`); raises if the connection is gone or the server refuses."""
        await self.request("ping")

    # -- what the server asks ------------------------------------------------------------
    async def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "elicitation/create" and self.elicitation_handler is not None:
            return _dump(
                await _maybe_await(self.elicitation_handler(ElicitRequestFormParams.model_validate(params)))
            )
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return _dump(
                await _maybe_await(self.sampling_handler(CreateMessageRequestParams.model_validate(params)))
            )
        if method == "roots/list" and self.roots is not None:
            roots = self.roots() if callable(self.roots) else self.roots
            if inspect.isawaitable(roots):
                roots = await roots
            return {"roots": [_dump(r) if isinstance(r, Root) else {"uri": r} for r in roots]}
        if method == "ping":
            return {}
        raise MCPError(METHOD_NOT_FOUND, f"this client does not handle {method}")

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message" and self.log_handler is not None:
            await self.log_handler(LoggingMessageNotificationParams.model_validate(params))
        elif method == "notifications/progress" and self.progress_handler is not None:
            await self.progress_handler(ProgressNotificationParams.model_validate(params))
        if self.notification_handler is not None:
            try:
                await self.notification_handler(method, params)
            except Exception:  # the connection outlives a failing handler: it reads on
                logger.exception("notification_handler failed on %s", method)


def _traced(params: dict[str, Any]) -> dict[str, Any]:
    """`params`, with the caller's trace context (W3C `traceparent`, `tracestate`, `baggage`) in `_meta`.

    Only a caller that traces has loaded OpenTelemetry; its context travels in
    `_meta`, where MCP's semantic conventions put it, to parent the server's
    span. A caller that does not pays one lookup, and nothing is imported.
    """
    if _TRACING not in sys.modules:
        return params
    try:
        from ..telemetry import inject_trace_context
    except ImportError:  # OpenTelemetry half there (its trace module, not its API): nothing to send
        return params
    inject_trace_context(params)
    return params


async def _maybe_await(value: Any) -> Any:
    """A handler may be a plain function as well as a coroutine function: both answer the same way."""
    return await value if inspect.isawaitable(value) else value
