"""One tool call as the toolset makes it: plain or as a task, with or without request `_meta`; and its hook.

These are `Client.call_tool(..., task=..., meta=...)`: the Client sends the
`metadata` as the request's `_meta`, runs the input-required rounds, and
drives a task to its result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp_types import CallToolResult
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import RunContext

from ..client import Client
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
    return await client.call_tool(name, arguments, task=True if use_task else None, meta=metadata or None)
