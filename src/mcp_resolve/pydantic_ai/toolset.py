"""`MCPToolset`: pydantic-ai's MCP toolset, with the constructor and behaviour it documents, on our Client.

An agent given this toolset sees the server's tools (only what the model may
fill: resolved parameters are not in the schema) and calls them through our
Client, which speaks either protocol era and runs the 2026-07-28 rounds
itself, so a resolver's question reaches the toolset's handlers however the
server is reached. A tool error reaches the model as a retry carrying the
server's text (`tool_error_behavior="retry"`), or propagates (`"error"`).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import httpx
import mcp_types
import pydantic
import pydantic_core
from pydantic_ai import messages, models
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from typing_extensions import Self

from ..client import Client
from ..client.auth.errors import AuthorizationError
from ..errors import MCPError as ProtocolError
from ..errors import ToolError
from .building import UNSET, ClientOptions, MCPToolsetClient, Mode, client_for
from .calls import ProcessToolCallback, call_tool
from .connection import ToolsetClient
from .handlers import (
    ElicitationHandler,
    HandlerContext,
    LogHandler,
    MessageHandler,
    ProgressHandler,
    RootsHandler,
    RootsList,
    SamplingHandler,
    sampling_adapter,
)
from .listing import CHANGED, ChangeListener, Kind, ListCache, fetch_list
from .models import (
    MCPError,
    Prompt,
    PromptMessage,
    PromptResult,
    Resource,
    ResourceTemplate,
    ServerCapabilities,
)
from .results import map_prompt_content, map_resource_contents, map_tool_result, tool_error_text
from .sampling import sampling_handler_for

__all__ = ["MCPToolset"]

logger = logging.getLogger("mcp_resolve.pydantic_ai")

LISTEN_READY_SECONDS = 5.0
"""How long entering waits for the server to acknowledge the change stream (so no change goes unheard)."""
_ARGUMENTS = pydantic_core.SchemaValidator(
    pydantic_core.core_schema.dict_schema(
        pydantic_core.core_schema.str_schema(), pydantic_core.core_schema.any_schema()
    )
)
"""Arguments are checked by the server against the tool's schema; the toolset only needs an object."""


class MCPToolset(AbstractToolset[AgentDepsT]):
    """The tools (and resources and prompts) of one MCP server, for a pydantic-ai `Agent`.

    `client` is where the server is: an `http(s)://` URL, a script path or
    command (stdio), an in-process `MCPServer`, or a pre-built
    `mcp_resolve.Client`. The other arguments are pydantic-ai's `MCPToolset`
    arguments, with its handler shapes, plus `mode=` ("auto", "legacy" or
    "2026-07-28", as on our Client) to choose the protocol era.
    """

    def __init__(
        self,
        client: MCPToolsetClient,
        *,
        id: str | None = None,
        max_retries: int | None = None,
        tool_error_behavior: Literal["retry", "error"] = "retry",
        process_tool_call: ProcessToolCallback | None = None,
        cache_tools: bool = True,
        cache_resources: bool = True,
        cache_prompts: bool = True,
        include_instructions: bool = False,
        include_return_schema: bool | None = None,
        sampling_model: models.Model | None = None,
        sampling_handler: SamplingHandler | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        log_handler: LogHandler | None = None,
        log_level: mcp_types.LoggingLevel | None = None,
        progress_handler: ProgressHandler | None = None,
        message_handler: MessageHandler | None = None,
        client_info: mcp_types.Implementation | None = None,
        init_timeout: float | None = UNSET,
        read_timeout: float | None = UNSET,
        roots: RootsList | RootsHandler | None = None,
        auth: httpx.Auth | Literal["oauth"] | str | None = None,
        verify: ssl.SSLContext | bool | str | None = None,
        headers: dict[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        mode: Mode | None = None,
    ) -> None:
        if tool_error_behavior not in ("retry", "error"):
            raise ValueError(f"tool_error_behavior must be 'retry' or 'error', not {tool_error_behavior!r}")
        self.sampling_model = sampling_model
        options = ClientOptions(
            mode=mode,
            sampling_model=sampling_model,
            sampling_handler=sampling_handler,
            elicitation_handler=elicitation_handler,
            log_handler=log_handler,
            progress_handler=progress_handler,
            message_handler=message_handler,
            client_info=client_info,
            init_timeout=init_timeout,
            read_timeout=read_timeout,
            roots=roots,
            auth=auth,
            verify=verify,
            headers=headers,
            http_client=http_client,
            log_level=log_level,
        )
        self.client: Client = client_for(client, options, self)
        if isinstance(self.client, ToolsetClient):
            # A Client of ours tells the toolset every notification; a plain pre-built one cannot
            # (its lists are then dropped only on exit, or when their ttlMs runs out).
            self.client.notification_handler = self._heard
        self._id = id
        self.max_retries = max_retries
        self.tool_error_behavior = tool_error_behavior
        self.process_tool_call = process_tool_call
        self.cache_tools = cache_tools
        self.cache_resources = cache_resources
        self.cache_prompts = cache_prompts
        self.include_instructions = include_instructions
        self.include_return_schema = include_return_schema
        self.log_level = log_level
        self.message_handler = message_handler
        self._lists = ListCache()
        self._running_count = 0
        self._enter_lock: anyio.Lock | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._capabilities: ServerCapabilities | None = None
        self._listener: ChangeListener | None = None

    # -- identity ------------------------------------------------------------------------
    @property
    def id(self) -> str | None:
        """The `id` given (durable execution names the toolset's activities after it), or None."""
        return self._id

    @property
    def tool_name_conflict_hint(self) -> str:
        return 'Wrap the toolset with `.prefixed("...")` to tell the tools of several MCP servers apart.'

    def __repr__(self) -> str:
        shown = f"client={self.client.target!r}" + (f", id={self._id!r}" if self._id else "")
        return f"{type(self).__name__}({shown})"

    # -- what the server said when we connected ------------------------------------------
    @property
    def server_info(self) -> mcp_types.Implementation:
        """The server's name and version. AttributeError before entering, or when the server sent none."""
        self._require_entered("server_info")
        if self.client.server_info is None:
            raise AttributeError(
                f"`{type(self).__name__}.server_info`: this server sent no implementation info"
            )
        return mcp_types.Implementation.model_validate(self.client.server_info)

    @property
    def capabilities(self) -> ServerCapabilities:
        """What the server can do. AttributeError before the toolset is entered."""
        return self._require_entered("capabilities")

    @property
    def instructions(self) -> str | None:
        """The server's instructions. AttributeError before the toolset is entered."""
        self._require_entered("instructions")
        return self.client.instructions

    @property
    def is_running(self) -> bool:
        """Whether the toolset is entered (its connection to the server open)."""
        return self._running_count > 0

    def _require_entered(self, name: str) -> ServerCapabilities:
        if self._capabilities is None:
            raise AttributeError(f"`{type(self).__name__}.{name}` is only available after initialization.")
        return self._capabilities

    def set_sampling_model(self, model: models.Model) -> None:
        """Let `model` answer the server's sampling questions from now on (replacing any sampling handler).

        On 2026-07-28 the next request already declares the capability; a
        handshake-era session declared its capabilities when it opened, so
        there it applies from the next connection.
        """
        self.sampling_model = model
        context = HandlerContext(self, "sampling/createMessage")
        self.client.sampling_handler = sampling_adapter(sampling_handler_for(model), context)

    # -- the connection ------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        if self._enter_lock is None:
            self._enter_lock = anyio.Lock()
        async with self._enter_lock:
            if self._running_count == 0:
                try:
                    async with AsyncExitStack() as stack:
                        await stack.enter_async_context(self.client)
                        capabilities = ServerCapabilities.from_mcp_sdk(
                            mcp_types.ServerCapabilities.model_validate(self.client.server_capabilities)
                        )
                        if self.log_level is not None and capabilities.logging and not self.client.is_modern:
                            # 2026-07-28 sends the level with every request instead.
                            await self.client.request("logging/setLevel", {"level": self.log_level})
                        await self._listen(stack, capabilities)
                        self._exit_stack = stack.pop_all()
                except BaseException:
                    self._listener = None
                    raise
                self._capabilities = capabilities
            self._running_count += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._enter_lock is None:
            self._enter_lock = anyio.Lock()
        async with self._enter_lock:
            if self._running_count == 0:
                raise ValueError(f"`{type(self).__name__}.__aexit__` called more times than `__aenter__`")
            self._running_count -= 1
            if self._running_count == 0 and self._exit_stack is not None:
                stack, self._exit_stack = self._exit_stack, None
                try:
                    await stack.aclose()
                finally:
                    self._capabilities = None
                    self._listener = None
                    self._lists.invalidate()
        return None

    async def _listen(self, stack: AsyncExitStack, capabilities: ServerCapabilities) -> None:
        """On 2026-07-28, hold a change stream open for the cached lists the server says can change."""
        wanted: list[tuple[Kind, bool, bool]] = [
            ("tools", self.cache_tools, capabilities.tools_list_changed),
            ("resources", self.cache_resources, capabilities.resources_list_changed),
            ("prompts", self.cache_prompts, capabilities.prompts_list_changed),
        ]
        kinds = [kind for kind, cached, announced in wanted if cached and announced]
        if not kinds or not self.client.is_modern or not isinstance(self.client, ToolsetClient):
            return  # the handshake era hears changes on the session's own channel
        listener = self._listener = ChangeListener(self.client, kinds, self._lists.invalidate)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        stack.push_async_callback(listener.stop)
        group.start_soon(listener.run)
        with anyio.move_on_after(LISTEN_READY_SECONDS):
            await listener.ready.wait()

    async def _heard(self, method: str, params: dict[str, Any]) -> None:
        kind = CHANGED.get(method)
        if kind is not None:
            self._lists.invalidate(kind)
        if self._listener is not None:
            self._listener.heard(method, params)
        if self.message_handler is not None:
            try:
                notification = mcp_types.server_notification_adapter.validate_python(
                    {"method": method, "params": params}
                )
            except pydantic.ValidationError:
                logger.debug("not passing on a notification no MCP model describes: %s", method)
                return
            try:
                await self.message_handler(notification)
            except Exception:  # the connection outlives a failing handler, as it does a failing person
                logger.exception("message_handler failed on %s", method)

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[None]:
        """Entered for one direct call when no agent run (or `async with`) holds the connection open."""
        async with self:
            yield

    # -- tools ---------------------------------------------------------------------------
    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> messages.InstructionPart | None:
        """The server's instructions for the agent, when `include_instructions` is set."""
        if not self.include_instructions or self._capabilities is None or not self.client.instructions:
            return None
        if self._id is None:
            return messages.InstructionPart(content=self.client.instructions)
        return messages.InstructionPart(content=self.client.instructions, on_change="append")

    async def list_tools(self) -> list[mcp_types.Tool]:
        """The server's tools, cached (see `cache_tools`)."""
        found = await self._list("tools", "tools/list", self.cache_tools)
        return [mcp_types.Tool.model_validate(tool) for tool in found]

    async def _list(self, kind: Kind, method: str, cache: bool) -> list[dict[str, Any]]:
        cached = self._lists.get(kind) if cache else None
        if cached is not None:
            return cached
        async with self._connected(), _as_mcp_errors():
            changes = self._lists.changes(kind)
            items, ttl_ms = await fetch_list(self.client, method, kind)
            if cache:
                self._lists.put(kind, items, ttl_ms, changes)
        return items

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        tools: dict[str, ToolsetTool[AgentDepsT]] = {}
        for tool in await self.list_tools():
            if not _for_model(tool):
                continue
            definition = ToolDefinition(
                name=tool.name,
                description=tool.description,
                parameters_json_schema=tool.input_schema,
                metadata={
                    "meta": tool.meta,
                    "annotations": tool.annotations.model_dump(by_alias=True) if tool.annotations else None,
                },
                return_schema=tool.output_schema or None,
                include_return_schema=self.include_return_schema,
            )
            tools[tool.name] = self._tool(definition, ctx)
        return tools

    async def get_tool_for_tool_def(
        self, tool_def: ToolDefinition, ctx: RunContext[AgentDepsT]
    ) -> ToolsetTool[AgentDepsT]:
        return self._tool(tool_def, ctx)  # the definition says all there is: no need to list again

    def _tool(self, definition: ToolDefinition, ctx: RunContext[AgentDepsT]) -> ToolsetTool[AgentDepsT]:
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        return ToolsetTool(toolset=self, tool_def=definition, max_retries=retries, args_validator=_ARGUMENTS)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        if self.process_tool_call is not None:
            return await self.process_tool_call(ctx, self.direct_call_tool, name, tool_args)
        return await self.direct_call_tool(name, tool_args)

    async def direct_call_tool(
        self, name: str, args: dict[str, Any], metadata: dict[str, Any] | None = None, use_task: bool = False
    ) -> Any:
        """Call a tool: its result as the model would see it.

        `metadata` is sent as the request's `_meta`. `use_task=True` runs the
        call as a task (2026-07-28, the tasks extension; the tool must support
        it), polled to its end, its questions answered by the same handlers.
        A failed tool or refused call raises `ModelRetry` with the server's
        text (`tool_error_behavior="retry"`), or propagates as `ToolError` /
        `mcp_resolve.MCPError` (`"error"`).
        """
        async with self._connected():
            try:
                result = await call_tool(self.client, name, args, metadata, use_task)
            except AuthorizationError:
                raise  # a login that failed is the developer's to see, not the model's to retry
            except ProtocolError as exc:
                if self.tool_error_behavior == "error":
                    raise
                raise ModelRetry(exc.message) from exc
        if result.is_error:
            text = tool_error_text(name, result)
            if self.tool_error_behavior == "error":
                raise ToolError(text)
            raise ModelRetry(text)
        return map_tool_result(result)

    # -- prompts and resources -----------------------------------------------------------
    async def list_prompts(self) -> list[Prompt]:
        """The server's prompts, cached (see `cache_prompts`); [] when it offers none."""
        async with self._connected():
            if not self.capabilities.prompts:
                return []
            found = await self._list("prompts", "prompts/list", self.cache_prompts)
        return [Prompt.from_mcp_sdk(mcp_types.Prompt.model_validate(prompt)) for prompt in found]

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> PromptResult:
        """One prompt, filled with `arguments` (and whatever the server's resolvers add)."""
        async with self._connected():
            if not self.capabilities.prompts:
                raise MCPError(f"The server offers no prompts; cannot get prompt {name!r}.", -32601)
            async with _as_mcp_errors():
                result = await self.client.get_prompt(name, arguments)
        return PromptResult(
            description=result.description,
            metadata=result.meta,
            messages=[
                PromptMessage(role=m.role, content=map_prompt_content(m.content)) for m in result.messages
            ],
        )

    async def list_resources(self) -> list[Resource]:
        """The server's resources, cached (see `cache_resources`); [] when it offers none."""
        async with self._connected():
            if not self.capabilities.resources:
                return []
            found = await self._list("resources", "resources/list", self.cache_resources)
        return [Resource.from_mcp_sdk(mcp_types.Resource.model_validate(resource)) for resource in found]

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """The server's resource templates (not cached); [] when it offers no resources."""
        async with self._connected():
            if not self.capabilities.resources:
                return []
            async with _as_mcp_errors():
                found = await self.client.list_resource_templates()
        return [ResourceTemplate.from_mcp_sdk(template) for template in found.resource_templates]

    async def read_resource(
        self, uri: str | Resource
    ) -> str | messages.BinaryContent | list[str | messages.BinaryContent]:
        """A resource's content: text as `str`, a blob as `BinaryContent`; a list when it has several parts."""
        target = uri if isinstance(uri, str) else uri.uri
        async with self._connected(), _as_mcp_errors():
            result = await self.client.read_resource(target)
        contents = [map_resource_contents(part) for part in result.contents]
        return contents[0] if len(contents) == 1 else contents


@asynccontextmanager
async def _as_mcp_errors() -> AsyncIterator[None]:
    """Error answers as the toolset's `MCPError` (message first, as pydantic-ai's), keeping the cause."""
    try:
        yield
    except (MCPError, AuthorizationError):
        raise  # already the toolset's, or a failed login whose type says why
    except ProtocolError as exc:
        raise MCPError(exc.message, exc.code, exc.data) from exc


def _for_model(tool: mcp_types.Tool) -> bool:
    """False for an MCP Apps tool only its view may call (`_meta.ui.visibility` without "model").

    The spec leaves hiding those from the model to the host, and here the agent is the host.
    """
    ui = (tool.meta or {}).get("ui")
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    return not isinstance(visibility, list) or "model" in visibility
