"""Driving a tool call that the server runs as a task (the `io.modelcontextprotocol/tasks` extension).

`await client.call_tool(name, args, task=True)` declares the extension on the
call, and if the server answers with a task, polls it to the end and returns
the `CallToolResult` a plain call would have. `await client.call_tool_task(...)`
returns the `TaskHandle` itself, for callers that want the task's id (to
resume later, `client.task(task_id)`), its status, or to cancel it.

Polling follows the server's `pollIntervalMs`. A task waiting for input is
answered through the client's own elicitation and sampling handlers and roots,
each request once (keys are never reused within a task), with `tasks/update`.
The task's status message is progress: each new one goes to the client's
`progress_handler`, numbered in order, with the message as its text.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CallToolResult, ProgressNotificationParams
from pydantic import BaseModel, ConfigDict, Field

from ..errors import MCPError

if TYPE_CHECKING:
    from .client import Client

__all__ = ["TASKS_EXTENSION", "TaskCancelled", "TaskHandle", "TaskInfo"]

logger = logging.getLogger("mcp_resolve.client")

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
MIN_POLL_SECONDS = 0.01


class TaskCancelled(Exception):
    """The task ended `cancelled` (by this client or another holding its id); there is no result."""


class TaskInfo(BaseModel):
    """One `tasks/get` answer: the task's state, and what that state carries."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId")
    status: Literal["working", "input_required", "completed", "failed", "cancelled"]
    status_message: str | None = Field(None, alias="statusMessage")
    created_at: str | None = Field(None, alias="createdAt")
    last_updated_at: str | None = Field(None, alias="lastUpdatedAt")
    ttl_ms: int | None = Field(None, alias="ttlMs")
    poll_interval_ms: int | None = Field(None, alias="pollIntervalMs")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(None, alias="inputRequests")

    @property
    def done(self) -> bool:
        """Whether the task has ended: `completed`, `failed` or `cancelled`."""
        return self.status in ("completed", "failed", "cancelled")


def task_meta(client: Client) -> dict[str, Any]:
    """The `_meta` that declares the extension on one request (declared per request, never per session).

    The client's own extensions stay declared next to it.
    """
    capabilities = client.capabilities()
    capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}
    return {CLIENT_CAPABILITIES_META_KEY: capabilities}


def wants_tasks(exc: MCPError) -> bool:
    """Whether a -32021 refusal names the tasks extension (a tool that runs only as a task)."""
    required = exc.data.get("requiredCapabilities") if isinstance(exc.data, dict) else None
    extensions = required.get("extensions") if isinstance(required, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


class TaskHandle:
    """A task the server runs for a tool call (or the call's result, if the server answered at once)."""

    def __init__(
        self, client: Client, task_id: str | None, *, immediate: dict[str, Any] | None = None
    ) -> None:
        self.client = client
        self.task_id = task_id
        """None when the server chose to answer the call at once; `result()` then returns that answer."""
        self._immediate = immediate
        self._answered: set[str] = set()
        self._messages = 0
        self._last_message: str | None = None
        self.last: TaskInfo | None = None
        """The latest status seen."""

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if not self.client.is_modern:
            raise RuntimeError(
                f"tasks need protocol 2026-07-28; this client speaks {self.client.protocol_version}"
            )
        return await self.client.request(method, {**params, "_meta": task_meta(self.client)})

    async def status(self) -> TaskInfo:
        """The task's state now (`tasks/get`)."""
        if self.task_id is None:
            return TaskInfo.model_validate({"taskId": "", "status": "completed", "result": self._immediate})
        info = TaskInfo.model_validate(await self._request("tasks/get", {"taskId": self.task_id}))
        self.last = info
        await self._report(info)
        return info

    async def cancel(self) -> None:
        """Ask the server to cancel (`tasks/cancel`); the task may still finish if the work was done."""
        if self.task_id is not None:
            await self._request("tasks/cancel", {"taskId": self.task_id})

    async def update(self, responses: dict[str, Any]) -> None:
        """Answer outstanding requests by key (`tasks/update`); `result()` does this with the client's handlers."""
        if self.task_id is None:
            raise RuntimeError("this call was answered at once; it has no task to update")
        await self._request("tasks/update", {"taskId": self.task_id, "inputResponses": responses})
        self._answered.update(responses)

    async def result(self) -> CallToolResult:
        """Poll until the task ends; answer what it asks on the way. Its `CallToolResult` (tool errors included).

        Raises `MCPError` with the task's error if it failed, `TaskCancelled`
        if it was cancelled. If answering a question fails (no handler for it),
        the task is cancelled before the error is raised, so it does not wait forever.
        """
        if self.task_id is None:
            return CallToolResult.model_validate(self._immediate)
        while True:
            info = await self.status()
            if info.status == "completed":
                return CallToolResult.model_validate(info.result or {"content": []})
            if info.status == "failed":
                error = info.error or {}
                code = error.get("code")
                raise MCPError(
                    code if isinstance(code, int) else -32603,
                    str(error.get("message") or "task failed"),
                    error.get("data"),
                )
            if info.status == "cancelled":
                raise TaskCancelled(f"task {self.task_id} was cancelled")
            if info.status == "input_required":
                await self._answer(info.input_requests or {})
            await anyio.sleep(max(MIN_POLL_SECONDS, (info.poll_interval_ms or 1000) / 1000))

    async def _answer(self, requests: dict[str, Any]) -> None:
        responses: dict[str, Any] = {}
        for key, request in requests.items():
            if key in self._answered or not isinstance(request, dict):
                continue
            try:
                responses[key] = await self.client._answer(
                    str(request.get("method", "")), request.get("params") or {}
                )
            except BaseException:
                with anyio.move_on_after(5, shield=True):
                    try:
                        await self.cancel()
                    except Exception:  # the original failure is the one to report
                        logger.debug("could not cancel task %s", self.task_id, exc_info=True)
                raise
        if responses:
            await self.update(responses)

    async def _report(self, info: TaskInfo) -> None:
        handler = self.client.progress_handler
        message = info.status_message
        if handler is None or info.status != "working" or message is None or message == self._last_message:
            return
        self._last_message = message
        self._messages += 1
        await handler(
            ProgressNotificationParams.model_validate(
                {"progressToken": info.task_id, "progress": self._messages, "message": message}
            )
        )


async def start_task(client: Client, call: dict[str, Any]) -> TaskHandle:
    """Make the `tools/call` with params `call` declaring the extension, through any rounds before the task exists."""
    if not client.is_modern:
        raise RuntimeError(f"tasks need protocol 2026-07-28; this client speaks {client.protocol_version}")
    params = {**call, "_meta": {**(call.get("_meta") or {}), **task_meta(client)}}
    result = await client._interactive("tools/call", params)
    if result.get("resultType") == "task":
        return TaskHandle(client, str(result["taskId"]))
    return TaskHandle(client, None, immediate=result)
