"""One tool call as the toolset makes it: plain or as a task, with or without request `_meta`; and its hook.

Without `metadata` these are `Client.call_tool(..., task=...)`. With it, the
`_meta` has to reach the request itself, which `Client.call_tool` does not
take yet, so the call goes through the Client's input-required loop directly
(the same loop `call_tool` uses), and a task it starts is driven by the same
`TaskHandle`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp_types import CallToolResult
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import RunContext

from ..client import Client
from ..client.tasks import TaskHandle, task_meta, wants_tasks
from ..errors import MISSING_REQUIRED_CLIENT_CAPABILITY, MCPError
from .results import ToolResult

__all__ = ["CallToolFunc", "ProcessToolCallback", "call_tool"]


class CallToolFunc(Protocol):
    """How a `process_tool_call` hook calls the tool: `await call_tool(name, args, metadata=...)`."""

    async def __call__(
        self, name: str, args: dict[str, Any], *, metadata: dict[str, Any] | None = None
    ) -> ToolResult: ...


ProcessToolCallback = Callable[[RunContext[Any], CallToolFunc, str, dict[str, Any]], Awaitable[ToolResult]]
"""`(ctx, call_tool, name, args)`: wrap each tool call, e.g. to add request `_meta` from the run's deps."""


async def call_tool(
    client: Client, name: str, arguments: dict[str, Any], metadata: dict[str, Any] | None, use_task: bool
) -> CallToolResult:
    """Call `name`; with `use_task`, as a task of the tasks extension, polled to its result.

    Without `use_task`, a tool the server runs only as a task is still called
    (our Client retries it as one); `use_task` asks for a task where it is optional.
    """
    if use_task and not client.is_modern:
        raise UserError(
            "use_task=True needs protocol 2026-07-28 (the tasks extension); "
            f"this session speaks {client.protocol_version}"
        )
    if not metadata:
        return await client.call_tool(name, arguments, task=True if use_task else None)
    try:
        return await _call_with_meta(client, name, arguments, metadata, use_task)
    except MCPError as exc:
        if use_task or not client.is_modern or exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY:
            raise
        if not wants_tasks(exc):
            raise
    return await _call_with_meta(client, name, arguments, metadata, True)  # it runs only as a task


async def _call_with_meta(
    client: Client, name: str, arguments: dict[str, Any], metadata: dict[str, Any], as_task: bool
) -> CallToolResult:
    params: dict[str, Any] = {"name": name, "arguments": arguments, "_meta": dict(metadata)}
    if as_task:
        params["_meta"].update(task_meta(client))
    result = await client._interactive("tools/call", params)
    if result.get("resultType") == "task":
        return await TaskHandle(client, str(result["taskId"])).result()
    return CallToolResult.model_validate(result)
