"""Raw tasks-extension requests for tests: in memory through our client, or as raw HTTP POSTs."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from mcp_resolve import Client
from mcp_resolve.tasks import TASKS_EXTENSION, TaskRecord

EXTENSION = {"extensions": {TASKS_EXTENSION: {}}}
ALL_CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {"listChanged": True}, **EXTENSION}
TERMINAL = ("completed", "failed", "cancelled")
MODERN = "2026-07-28"


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


class Raw:
    """One client's raw 2026-07-28 requests, declaring `caps` (the extension, by default) on each."""

    def __init__(self, client: Client, caps: dict[str, Any] | None = None) -> None:
        self.client = client
        self.caps = ALL_CAPS if caps is None else caps

    async def __call__(
        self,
        method: str,
        params: dict[str, Any],
        *,
        caps: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        """`method` with `params`; `meta`: more `_meta` keys beside the declared capabilities."""
        sent = {**(meta or {}), CLIENT_CAPABILITIES_META_KEY: self.caps if caps is None else caps}
        return await self.client.request(method, {**params, "_meta": sent})

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        caps: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        **params: Any,
    ) -> Any:
        call = {"name": name, "arguments": arguments or {}, **params}
        return await self("tools/call", call, caps=caps, meta=meta)

    async def get(self, task_id: str) -> Any:
        return await self("tasks/get", {"taskId": task_id})

    async def update(self, task_id: str, responses: Any, *, meta: dict[str, Any] | None = None) -> Any:
        return await self("tasks/update", {"taskId": task_id, "inputResponses": responses}, meta=meta)

    async def cancel(self, task_id: str) -> Any:
        return await self("tasks/cancel", {"taskId": task_id})

    async def until(self, task_id: str, *statuses: str, timeout: float = 10.0) -> Any:
        """Poll until the task reaches one of `statuses` or ends; the last `tasks/get` answer."""
        with anyio.fail_after(timeout):
            while True:
                task = await self.get(task_id)
                if task["status"] in statuses or task["status"] in TERMINAL:
                    return task
                await anyio.sleep(0.02)


def post(
    url: str,
    method: str,
    params: dict[str, Any],
    *,
    user: str | None = "alice",
    headers: dict[str, str] | None = None,
    caps: dict[str, Any] | None = None,
    client: httpx.Client | None = None,
) -> tuple[int, dict[str, Any]]:
    """One raw POST; `client`: an httpx client of the test's (one bound to another loopback address)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": ALL_CAPS if caps is None else caps,
    }
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    name = params.get("taskId") if method.startswith("tasks/") else params.get("name")
    if isinstance(name, str):
        sent["Mcp-Name"] = name
    if user is not None:
        sent["X-User"] = user
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": meta}}
    send = httpx.post if client is None else client.post
    response = send(url, content=json.dumps(body), headers={**sent, **(headers or {})}, timeout=10)
    for line in response.text.splitlines():
        payload = line.removeprefix("data:").strip()
        if payload.startswith("{") and json.loads(payload).get("id") == 9:
            return response.status_code, json.loads(payload)
    raise AssertionError(f"no response in {response.status_code} {response.text!r}")


def result(url: str, method: str, params: dict[str, Any], **options: Any) -> dict[str, Any]:
    status, response = post(url, method, params, **options)
    assert status == 200 and "result" in response, response
    return response["result"]  # type: ignore[no-any-return]


def error(url: str, method: str, params: dict[str, Any], **options: Any) -> tuple[int, str]:
    _status, response = post(url, method, params, **options)
    assert "error" in response, response
    return response["error"]["code"], response["error"]["message"]


def record(task_id: str = "t1", principal: str | None = None, *, expires_at: float = 2000.0) -> TaskRecord:
    """A working task; its holder is its principal's (None when it has none)."""
    return TaskRecord(
        task_id=task_id,
        principal=principal,
        holder=None if principal is None else f"principal {principal}",
        tool="slow",
        arguments={"n": 1},
        client={"protocolVersion": "2026-07-28", "capabilities": {}, "info": None},
        created_at=1000.0,
        updated_at=1000.0,
        expires_at=expires_at,
        poll_interval_ms=100,
    )
