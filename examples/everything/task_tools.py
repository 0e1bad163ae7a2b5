"""The everything server's long-running tools: the fixtures of the harness's tasks scenarios (SEP-2663).

With the `io.modelcontextprotocol/tasks` extension in a request's client
capabilities, a `task_support` tool answers with a task at once and runs in
the background; its resolvers' questions become the task's `input_required`
status, answered with `tasks/update`. Without the extension an optional tool
runs as usual and a required one is refused with -32021. Names, arguments and
texts are the harness's.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from pydantic import BaseModel, Field
from questions import Name, ask_name

from mcp_resolve import Context, Elicit, MCPError, MCPServer, Resolve, ToolError
from mcp_resolve.errors import INTERNAL_ERROR


class DeleteConfirmation(BaseModel):
    confirm: bool = Field(description="Delete the file?")


class Proceed(BaseModel):
    confirm: bool = Field(description="Go ahead?")


async def ask_delete(filename: str) -> Elicit[DeleteConfirmation]:
    return Elicit(f"Delete {filename}?", DeleteConfirmation, key="confirm_delete")


async def ask_who() -> Elicit[Name]:
    return Elicit("Who is asking?", Name, key="who")


async def ask_proceed() -> Elicit[Proceed]:
    return Elicit("Proceed with the job?", Proceed, key="proceed")


def register(mcp: MCPServer) -> None:
    """Add the tasks fixtures to `mcp` (after the other tools: `test_simple_text` stays first)."""

    @mcp.tool()
    def greet(name: str) -> str:
        """Greets by name; never a task."""
        return f"Hello, {name}!"

    @mcp.tool(task_support="optional")
    async def slow_compute(ctx: Context, seconds: float = 1.0, label: str = "") -> str:
        """Works for `seconds` seconds, reporting progress; a task when the client declares the extension."""
        steps = max(1, round(seconds * 4))
        for step in range(steps):
            await ctx.report_progress(step, steps, f"computing {label}: step {step + 1} of {steps}")
            await anyio.sleep(seconds / steps)
        return f"Computed {label or 'the result'} in {seconds:g} s"

    @mcp.tool(task_support="required")
    async def failing_job() -> str:
        """Runs only as a task, and fails like a tool does (a tool error) after about a second."""
        await anyio.sleep(1.0)
        raise ToolError("the job failed: the payment provider is unreachable")

    @mcp.tool(task_support="optional")
    async def protocol_error_job() -> str:
        """Fails with a JSON-RPC error (a protocol fault, not a tool error): the task is `failed`."""
        await anyio.sleep(0.1)
        raise MCPError(INTERNAL_ERROR, "the job's backend crashed")

    @mcp.tool(task_support="optional")
    async def confirm_delete(
        filename: str, answer: Annotated[DeleteConfirmation, Resolve(ask_delete)]
    ) -> str:
        """Asks before deleting a file; inside a task the question is the task's `input_required`."""
        return f"Deleted {filename}" if answer.confirm else f"Kept {filename}"

    @mcp.tool(task_support="optional")
    async def multi_input(
        person: Annotated[Name, Resolve(ask_who)], proceed: Annotated[Proceed, Resolve(ask_proceed)]
    ) -> str:
        """Asks two independent questions at once: two requests outstanding, answerable one at a time."""
        return f"{person.name} {'went ahead' if proceed.confirm else 'stopped'}"

    @mcp.tool(task_support="required", resolve_before_task=True)
    async def test_tool_with_task(person: Annotated[Name, Resolve(ask_name)]) -> str:
        """Asks the name in the request itself (an `input_required` round), then runs the rest as a task."""
        await anyio.sleep(0.5)
        return f"Hello, {person.name}! Your task is done."
