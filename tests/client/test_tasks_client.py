"""Our client's side of tasks: `call_tool(task=...)`, the `TaskHandle`, answers, progress and outcomes."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import pytest
from mcp_types import ElicitRequestFormParams, ProgressNotificationParams
from pydantic import BaseModel

from mcp_resolve import Client, Context, Elicit, MCPError, MCPServer, Resolve, ToolError
from mcp_resolve.client.tasks import TaskCancelled
from mcp_resolve.errors import INTERNAL_ERROR
from mcp_resolve.tasks import TaskOptions

pytestmark = pytest.mark.anyio


class Ok(BaseModel):
    ok: bool


async def ask_ok() -> Elicit[Ok]:
    return Elicit("Go?", Ok, key="ok")


def build() -> MCPServer:
    mcp = MCPServer("client-side", task_options=TaskOptions(poll_interval_ms=10))

    @mcp.tool()
    def plain() -> str:
        return "plain"

    @mcp.tool(task_support="required")
    async def job(ctx: Context, ok: Annotated[Ok, Resolve(ask_ok)]) -> str:
        for step in range(3):
            await ctx.report_progress(step, 3, f"step {step + 1}")
            await anyio.sleep(0.05)
        return f"job {ok.ok}"

    @mcp.tool(task_support="optional")
    async def crash(protocol: bool = True) -> str:
        if protocol:
            raise MCPError(INTERNAL_ERROR, "backend down", {"retry": False})
        raise ToolError("nope")

    @mcp.tool(task_support="optional")
    async def forever() -> str:
        await anyio.sleep(60)
        return "never"

    return mcp


async def yes(question: ElicitRequestFormParams) -> dict[str, Any]:
    return {"action": "accept", "content": {"ok": True}}


async def test_a_required_task_tool_is_driven_even_by_a_plain_call_tool() -> None:
    messages: list[tuple[float, str | None]] = []

    async def progress(update: ProgressNotificationParams) -> None:
        messages.append((update.progress, update.message))

    async with Client(build(), elicitation_handler=yes, progress_handler=progress) as client:
        assert (await client.call_tool("job")).content[0].text == "job True"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("job", task=False)
        assert refused.value.code == -32021
    numbers = [number for number, _message in messages]
    assert numbers == sorted(numbers) and numbers[0] == 1  # one per new status message, in order
    assert {message for _number, message in messages} <= {"step 1", "step 2", "step 3"}


async def test_task_true_on_a_tool_that_answers_at_once() -> None:
    async with Client(build()) as client:
        handle = await client.call_tool_task("plain")
        assert handle.task_id is None
        assert (await handle.status()).status == "completed"
        assert (await handle.result()).content[0].text == "plain"  # type: ignore[union-attr]
        assert (await client.call_tool("plain", task=True)).content[0].text == "plain"  # type: ignore[union-attr]


async def test_outcomes_are_a_result_an_error_or_cancelled() -> None:
    async with Client(build(), elicitation_handler=yes) as client:
        tool_error = await client.call_tool("crash", {"protocol": False}, task=True)
        assert tool_error.is_error and "nope" in tool_error.content[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError) as failed:
            await client.call_tool("crash", task=True)
        assert (failed.value.code, failed.value.message, failed.value.data) == (
            INTERNAL_ERROR,
            "backend down",
            {"retry": False},
        )
        handle = await client.call_tool_task("forever")
        async with anyio.create_task_group() as group:

            async def cancel_soon() -> None:
                await anyio.sleep(0.1)
                await handle.cancel()

            group.start_soon(cancel_soon)
            with pytest.raises(TaskCancelled):
                await handle.result()


async def test_a_handler_that_fails_cancels_the_task_before_raising() -> None:
    async def broken(question: ElicitRequestFormParams) -> dict[str, Any]:
        raise RuntimeError("the person walked away")

    async with Client(build(), elicitation_handler=broken) as client:
        handle = await client.call_tool_task("job")
        with pytest.raises(RuntimeError, match="walked away"):
            await handle.result()
        assert (await handle.status()).status == "cancelled"


async def test_tasks_need_the_modern_protocol() -> None:
    async with Client(build(), mode="legacy", elicitation_handler=yes) as client:
        with pytest.raises(RuntimeError, match="2026-07-28"):
            await client.call_tool_task("job")
        with pytest.raises(MCPError) as refused:  # no retry as a task on the handshake era
            await client.call_tool("job")
        assert refused.value.code == -32021
