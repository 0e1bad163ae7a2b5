"""Which clients we did not write can drive our tasks (SEP-2663), against the slow refund over HTTP.

* The official `mcp` 2.3.0 client has no tasks support of its own, but its
  `ClientExtension` API is made for it: a claim on `resultType: "task"` that
  polls `tasks/get` and answers with `tasks/update`. The small one below
  drives our tasks to the receipt, through our `Mcp-Name` checks. Without an
  extension it never declares tasks, so an optional task tool is a plain call.
* FastMCP 4's `Client` drives tasks only with the separate `fastmcp-tasks`
  package (an extension of the same kind, plus Docket and Redis for its
  server side; not a dependency here); without it, it is the official client
  without an extension: plain calls.
* pydantic-ai's `MCPToolset.direct_call_tool(use_task=True)` needs that same
  package and says so; without `use_task` it calls the tool plainly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

import anyio
import mcp_types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.elicitation import ElicitResult
from mcp.client import Client as OfficialClient
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError as OfficialError
from pydantic import Field
from pydantic_ai.mcp import MCPToolset

from conftest import EXAMPLES, load_module
from http_helpers import http_server
from mcp_resolve import MCPServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TASKS = "io.modelcontextprotocol/tasks"
REFUND = {"order_id": "ORD-7002", "reason": "wrong size"}


class TaskCreated(mcp_types.Result):
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str
    status: str


class TaskState(mcp_types.Result):
    task_id: str
    status: str
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TaskParams(mcp_types.RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any]


class GetTask(mcp_types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class UpdateTask(mcp_types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class Tasks(ClientExtension):
    """A minimal tasks driver for the official client: poll, answer forms with `answer`, return the result."""

    identifier = TASKS

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.asked: list[str] = []
        self.statuses: list[str] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.drive)]

    async def drive(self, created: TaskCreated, ctx: ClaimContext) -> mcp_types.CallToolResult:
        answered: set[str] = set()
        while True:
            state = await ctx.session.send_request(
                GetTask(params=TaskParams(task_id=created.task_id)), TaskState
            )
            self.statuses.append(state.status)
            if state.status == "completed":
                return mcp_types.CallToolResult.model_validate(state.result)
            if state.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {state.status}: {state.error}")
            fresh = {k: v for k, v in (state.input_requests or {}).items() if k not in answered}
            if fresh:
                self.asked += [request["params"]["message"] for request in fresh.values()]
                answered.update(fresh)
                update = UpdateParams(
                    task_id=created.task_id, input_responses=dict.fromkeys(fresh, self.answer)
                )
                await ctx.session.send_request(UpdateTask(params=update), mcp_types.Result)
            await anyio.sleep((state.poll_interval_ms or 1000) / 1000)


@pytest.fixture
async def url() -> AsyncIterator[str]:
    server = load_module(EXAMPLES / "slow_refund" / "server.py")
    async with http_server(server.build(poll_interval_ms=20).streamable_http_app()) as base:
        yield f"{base}/mcp"


async def test_the_official_client_drives_tasks_through_a_client_extension(url: str) -> None:
    tasks = Tasks({"action": "accept", "content": {"ok": True}})

    async def never(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        raise AssertionError("inside a task, the extension answers")  # declared, so forms may be asked

    async with OfficialClient(url, mode="auto", extensions=[tasks], elicitation_callback=never) as client:
        result = await client.call_tool("refund_order", REFUND)
    assert result.structured_content == {**REFUND, "cents": 4800, "reference": "RF-7002"}
    assert tasks.asked == ["Refund 48.00 for ORD-7002?"]
    assert "input_required" in tasks.statuses and tasks.statuses[-1] == "completed"


async def test_without_an_extension_the_official_client_makes_plain_calls(url: str) -> None:
    async def confirm(context: Any, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content={"ok": True})

    async with OfficialClient(url, mode="auto", elicitation_callback=confirm) as client:
        result = await client.call_tool("refund_order", REFUND)  # an input_required round, no task
    assert result.structured_content is not None and result.structured_content["cents"] == 4800


async def test_fastmcp_without_its_tasks_package_makes_plain_calls(url: str) -> None:
    async def confirm(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    async with FastMCPClient(url, elicitation_handler=confirm) as client:
        result = await client.call_tool("refund_order", REFUND)
    assert result.structured_content is not None and result.structured_content["cents"] == 4800


async def test_pydantic_ai_use_task_needs_fastmcp_tasks(url: str) -> None:
    async def confirm(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return ElicitResult(action="accept", content={"ok": True})

    with pytest.warns(UserWarning, match="will never be called"):
        toolset = MCPToolset(url, elicitation_handler=confirm)
        async with toolset:
            with pytest.raises(ImportError, match="fastmcp-tasks"):
                await toolset.direct_call_tool("refund_order", REFUND, use_task=True)
            receipt = await toolset.direct_call_tool("refund_order", REFUND)
    assert receipt["cents"] == 4800


async def test_a_required_task_tool_refuses_a_client_that_cannot_take_a_task() -> None:
    mcp = MCPServer("required")

    @mcp.tool(task_support="required")
    async def job() -> str:
        return "done"

    async with (
        http_server(mcp.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode="auto") as client,
    ):
        with pytest.raises(OfficialError) as refused:
            await client.call_tool("job", {})
    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
