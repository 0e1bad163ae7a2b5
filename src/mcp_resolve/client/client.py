"""Client: connect to a server on any transport, speak whichever era it does, answer its questions.

The same handlers answer a handshake-era server's mid-call requests and a
2026-07-28 server's `inputRequests`; on the modern era `call_tool`,
`get_prompt` and `read_resource` run the input-required loop themselves and
return only the final result.

This module is the public face; the parts live beside it: `connection`
(opening the transport), `negotiation` (agreeing on the era), `meta` (what a
request carries), `rounds` (the input-required loop), `handlers` (what the
server asks) and `tasks` (tool calls run as tasks).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, Literal

from mcp_types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    ReadResourceResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import MISSING_REQUIRED_CLIENT_CAPABILITY, MCPError
from .connection import check_options, http_auth, open_pipe, open_session
from .extensions import ExtensionSettings, declared_extensions
from .handlers import (
    ElicitationHandler,
    Roots,
    SamplingHandler,
    answer,
    declared,
    hear,
)
from .listing import list_items
from .meta import callers_meta, era_meta
from .negotiation import Mode, check_mode, negotiate
from .pipes import StdioServerParameters
from .rounds import run_rounds
from .session import ClientSession, NotificationHandler
from .url_elicitation import (
    BrowserUrlElicitation,
    UrlElicitationHandler,
    UrlElicitations,
    url_elicitation_error,
)

if TYPE_CHECKING:
    import ssl

    import httpx

    from ..server import MCPServer
    from .tasks import TaskHandle

__all__ = ["Client"]


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
        target: MCPServer | str | Sequence[str] | StdioServerParameters,
        *,
        mode: Mode = "auto",
        elicitation_handler: ElicitationHandler | None = None,
        url_elicitation_handler: UrlElicitationHandler | Literal["browser"] | None = None,
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
        if isinstance(target, StdioServerParameters):  # the official SDK's way to name a stdio server
            env = {**target.env, **(env or {})} if target.env else env
            cwd = target.cwd if cwd is None else cwd
            target = [target.command, *target.args]
        check_options(target, auth=auth, http_client=http_client, verify=verify, cwd=cwd)
        check_mode(mode)
        self.target = target
        """Where the server is: an `MCPServer`, an `http(s)://` URL, or a stdio command or script path."""
        self.mode = mode
        """The era asked for: `"auto"`, `"legacy"` or a modern version; `protocol_version` is the one negotiated."""
        self.elicitation_handler = elicitation_handler
        """Answers the server's forms (`elicitation/create`); while None, the client does not declare elicitation."""
        self.url_elicitation_handler: UrlElicitationHandler | None = (
            BrowserUrlElicitation() if url_elicitation_handler == "browser" else url_elicitation_handler  # type: ignore[assignment]
        )
        """Answers the server's URL-mode questions (`elicitation/create` with `mode: "url"`).

        `"browser"` is `BrowserUrlElicitation()`: the full URL shown and the
        person asked on the terminal, then the system browser opened. While
        None, the client does not declare URL elicitation.
        """
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
        self.auth = http_auth(auth)
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
        self._url_elicitations = UrlElicitations()

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
            pipe = open_pipe(
                self.target,
                headers=self.headers,
                auth=self.auth,
                verify=self.verify,
                http_client=self.http_client,
                env=self.env,
                cwd=self.cwd,
            )
            self._session = await stack.enter_async_context(open_session(pipe, self._answer, self._notified))
            hello = await negotiate(
                self._session,
                self.mode,
                meta=self._meta,
                capabilities=self.capabilities,
                client_info=self.client_info,
                timeout=self.init_timeout,
                probe_timeout=self.probe_timeout,
                clock=getattr(self.auth, "time_with_person", None),
            )
        except BaseException:
            await stack.aclose()
            raise
        self.protocol_version = hello.protocol_version
        self.server_capabilities = hello.capabilities
        self.server_info = hello.info
        self.instructions = hello.instructions
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def capabilities(self) -> dict[str, Any]:
        """The capabilities the client declares: one per handler it has, and its `extensions`.

        Read afresh for every request on 2026-07-28, so a handler set after
        connecting counts from the next request; the handshake era declares
        them once, in `initialize`.
        """
        return declared(self)

    def _meta(self, version: str) -> dict[str, Any]:
        return era_meta(version, self.capabilities(), self.client_info, self.log_level)

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
        try:
            return await self._require_session().request(method, params)
        except MCPError as exc:
            typed = url_elicitation_error(exc)
            if typed is exc:
                raise
            raise typed from None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send one notification, as it is (no `_meta` is added on either era); there is no answer.

        For instance `notifications/cancelled` with the `requestId` of a
        request the server should stop (a `subscriptions/listen` stream over
        stdio), or `notifications/roots/list_changed` after the roots change.
        """
        await self._require_session().notify(method, params)

    async def _interactive(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request, retried through input-required rounds until a final result (modern era)."""
        return await run_rounds(self.request, self._answer, method, params, self.max_rounds)

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """All tools (every page), or one page when `cursor` is given."""
        return await list_items(self.request, "tools", cursor)  # type: ignore[no-any-return]

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """All concrete resources (every page), or one page when `cursor` is given.

        Templated resources (`books://{id}`) are listed by `list_resource_templates`.
        """
        return await list_items(self.request, "resources", cursor)  # type: ignore[no-any-return]

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        """All resource templates (every page), or one page when `cursor` is given.

        Fill a template's URI and pass it to `read_resource`.
        """
        return await list_items(self.request, "resourceTemplates", cursor)  # type: ignore[no-any-return]

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """All prompts (every page), or one page when `cursor` is given."""
        return await list_items(self.request, "prompts", cursor)  # type: ignore[no-any-return]

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
            params["_meta"] = callers_meta(meta)
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
        """A request from the server (mid-call, in a round or from a task), answered by the handlers."""
        return await answer(self, method, params)

    async def wait_for_elicitation(self, elicitation_id: str) -> None:
        """Until the server says the URL elicitation `elicitation_id` is complete (2025-11-25).

        Returns at once if its `notifications/elicitation/complete` already
        came. Bound it with `anyio.fail_after`: a person may never finish.
        On 2026-07-28 there is no such notification (the retried request
        says whether the page was completed), so it raises RuntimeError.
        """
        if self.is_modern:
            raise RuntimeError(
                "2026-07-28 has no elicitation/complete notification: retry the request instead"
            )
        await self._url_elicitations.wait(elicitation_id)

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/elicitation/complete":
            self._url_elicitations.completed(params.get("elicitationId"))
        await hear(self, method, params)
