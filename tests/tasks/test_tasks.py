"""Tools as tasks, in one process: the lifecycle, and resolvers whose questions become `input_required`.

Each test builds a small server and drives it with raw requests through the
in-memory transport (`tasks_helpers.Raw`), so what is checked is the wire:
the shapes the extension prescribes, the answers taken by `tasks/update`,
what cancellation does to a task waiting for an answer or working, and that
generator resolvers are cleaned up however a task ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel

from mcp_resolve import Client, Context, Elicit, ElicitationResult, MCPError, MCPServer, Resolve, ToolError
from mcp_resolve.errors import INTERNAL_ERROR
from mcp_resolve.tasks import TASKS_EXTENSION, TaskOptions
from mcp_resolve.tasks.runner import runner_of
from tasks_helpers import Raw, accept

pytestmark = pytest.mark.anyio


class Ok(BaseModel):
    ok: bool


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


events: list[str] = []


async def ask_ok(n: int) -> Elicit[Ok]:
    return Elicit(f"Go ahead with {n}?", Ok, key="ok")


async def ask_name() -> Elicit[Name]:
    return Elicit("Name?", Name, key="name")


async def ask_color(person: Annotated[Name, Resolve(ask_name)]) -> Elicit[Color]:
    return Elicit(f"Favourite colour, {person.name}?", Color, key="color")


async def session() -> AsyncIterator[str]:
    events.append("open")
    try:
        yield "db"
    finally:
        events.append("close")


def build(**options: Any) -> MCPServer:
    mcp = MCPServer("tasks-test", task_options=TaskOptions(poll_interval_ms=20, **options))

    @mcp.tool()
    def plain() -> str:
        return "plain"

    @mcp.tool(task_support="optional")
    async def go(n: int, ok: Annotated[Ok, Resolve(ask_ok)], db: Annotated[str, Resolve(session)]) -> str:
        events.append(f"body {n}")
        return f"went {n}" if ok.ok else f"stayed {n}"

    @mcp.tool(task_support="required")
    async def two(
        person: Annotated[Name, Resolve(ask_name)], ok: Annotated[Ok, Resolve(ask_ok)], n: int = 0
    ) -> str:
        return f"{person.name}: {ok.ok}"

    @mcp.tool(task_support="optional")
    async def chain(color: Annotated[Color, Resolve(ask_color)]) -> str:
        return color.color

    @mcp.tool(task_support="optional")
    async def branch(answer: Annotated[ElicitationResult[Ok], Resolve(ask_ok)], n: int = 0) -> str:
        return f"answered {answer.action}"

    @mcp.tool(task_support="optional")
    async def sleepy(ctx: Context, db: Annotated[str, Resolve(session)], seconds: float = 30) -> str:
        await ctx.report_progress(1, 2, "half way")
        await ctx.info("a log message has nowhere to go in a task")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            events.append("body cancelled")
            raise
        return "slept"

    @mcp.tool(task_support="optional")
    async def broken(db: Annotated[str, Resolve(session)], protocol: bool = False) -> str:
        if protocol:
            raise MCPError(INTERNAL_ERROR, "backend down")
        raise ToolError("no luck")

    @mcp.tool(task_support="required", resolve_before_task=True)
    async def first(person: Annotated[Name, Resolve(ask_name)], db: Annotated[str, Resolve(session)]) -> str:
        await anyio.sleep(0.05)
        events.append("first body")
        return f"Hello, {person.name}"

    return mcp


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    events.clear()
    async with Client(build(), mode="2026-07-28") as client:
        yield Raw(client)


async def test_without_the_extension_optional_runs_plainly_and_required_is_refused(raw: Raw) -> None:
    no_extension = {"elicitation": {}}
    result = await raw("tools/call", {"name": "go", "arguments": {"n": 1}}, caps=no_extension)
    assert result["resultType"] == "input_required" and "taskId" not in result  # an ordinary round
    with pytest.raises(MCPError) as refused:
        await raw("tools/call", {"name": "two", "arguments": {}}, caps=no_extension)
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        with pytest.raises(MCPError) as gated:
            await raw(method, {"taskId": "x", "inputResponses": {}}, caps=no_extension)
        assert gated.value.code == -32021
    assert (await raw.call("plain"))["content"][0]["text"] == "plain"  # a plain tool is never a task


async def test_the_call_returns_a_flat_task_at_once(raw: Raw) -> None:
    task = await raw.call("sleepy", {"seconds": 0.01})
    assert task["resultType"] == "task" and task["status"] == "working"
    assert set(task) >= {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    assert not set(task) & {"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"}
    assert task["pollIntervalMs"] == 20 and task["ttlMs"] == 3_600_000
    assert task["createdAt"].endswith("Z") and len(task["taskId"]) >= 32
    done = await raw.until(task["taskId"], "completed")
    assert done["resultType"] == "complete" and done["result"]["content"][0]["text"] == "slept"
    assert done["ttlMs"] >= task["ttlMs"]


async def test_a_resolvers_question_is_the_tasks_input_required(raw: Raw) -> None:
    task = await raw.call("go", {"n": 7})
    waiting = await raw.until(task["taskId"], "input_required")
    assert waiting["inputRequests"] == {
        "ok": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Go ahead with 7?",
                "requestedSchema": {
                    "type": "object",
                    "title": "Ok",  # the model's name, as the official SDK sends it
                    "properties": {"ok": {"title": "Ok", "type": "boolean"}},
                    "required": ["ok"],
                },
            },
        }
    }
    assert "requestState" not in waiting
    ack = await raw.update(task["taskId"], {"ok": accept(ok=True)})
    assert set(ack) <= {"resultType", "_meta"} and ack["resultType"] == "complete"
    done = await raw.until(task["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "went 7"
    assert events == ["open", "close", "open", "body 7", "close"]  # each round opens and closes its session


async def test_a_partial_answer_leaves_only_the_rest_pending(raw: Raw) -> None:
    task = await raw.call("two")
    waiting = await raw.until(task["taskId"], "input_required")
    assert set(waiting["inputRequests"]) == {"name", "ok"}
    await raw.update(task["taskId"], {"name": accept(name="Ann"), "unknown": accept(x=1)})
    still = await raw.get(task["taskId"])
    assert still["status"] == "input_required" and set(still["inputRequests"]) == {"ok"}
    await raw.update(task["taskId"], {"name": accept(name="Bob")})  # answered already: ignored
    await raw.update(task["taskId"], {"ok": accept(ok=True)})
    assert (await raw.until(task["taskId"], "completed"))["result"]["content"][0]["text"] == "Ann: True"


async def test_a_question_that_needs_an_answer_comes_in_a_later_round(raw: Raw) -> None:
    task = await raw.call("chain")
    first = await raw.until(task["taskId"], "input_required")
    assert set(first["inputRequests"]) == {"name"}
    await raw.update(task["taskId"], {"name": accept(name="Ann")})
    second = await raw.until(task["taskId"], "input_required")
    assert set(second["inputRequests"]) == {"color"}
    assert second["inputRequests"]["color"]["params"]["message"] == "Favourite colour, Ann?"
    await raw.update(task["taskId"], {"color": accept(color="teal")})
    assert (await raw.until(task["taskId"], "completed"))["result"]["content"][0]["text"] == "teal"


asked: list[int] = []


async def changing() -> Elicit[Ok]:
    """Words its question one way the first time, another way after (a price that moved, say)."""
    asked.append(1)
    return Elicit("first wording" if len(asked) == 1 else "second wording", Ok, key="ok")


async def test_a_key_names_one_request_for_the_whole_task() -> None:
    mcp = MCPServer("reworded", task_options=TaskOptions(poll_interval_ms=20))
    asked.clear()

    @mcp.tool(task_support="optional")
    async def reworded(ok: Annotated[Ok, Resolve(changing)]) -> str:
        return str(ok.ok)

    async with Client(mcp, mode="2026-07-28") as client:
        raw = Raw(client)
        task_id = (await raw.call("reworded"))["taskId"]
        assert set((await raw.until(task_id, "input_required"))["inputRequests"]) == {"ok"}
        await raw.update(task_id, {"ok": accept(ok=False)})
        again = await raw.until(task_id, "input_required")
        # The same resolver asked something else: a new request, so a new key, never "ok" again.
        assert set(again["inputRequests"]) == {"ok~2"}
        assert again["inputRequests"]["ok~2"]["params"]["message"] == "second wording"
        await raw.update(task_id, {"ok": accept(ok=True)})  # an answer under the old key is ignored
        assert (await raw.get(task_id))["status"] == "input_required"
        await raw.update(task_id, {"ok~2": accept(ok=True)})
        assert (await raw.until(task_id, "completed"))["result"]["content"][0]["text"] == "True"


async def test_decline_ends_a_task_as_it_ends_a_plain_call(raw: Raw) -> None:
    unwrapped = await raw.call("go", {"n": 1})
    await raw.until(unwrapped["taskId"], "input_required")
    await raw.update(unwrapped["taskId"], {"ok": {"action": "decline"}})
    done = await raw.until(unwrapped["taskId"], "completed")
    assert done["result"]["isError"] is True
    assert done["result"]["content"][0]["text"] == (
        "Error executing tool go: Resolver for parameter 'ok' could not resolve: elicitation was decline"
    )
    branched = await raw.call("branch")
    await raw.until(branched["taskId"], "input_required")
    await raw.update(branched["taskId"], {"ok": {"action": "cancel"}})
    branched_done = await raw.until(branched["taskId"], "completed")
    assert branched_done["result"]["content"][0]["text"] == "answered cancel"


async def test_a_tool_error_completes_and_a_protocol_error_fails(raw: Raw) -> None:
    tool_error = await raw.until((await raw.call("broken"))["taskId"], "completed")
    assert tool_error["status"] == "completed" and tool_error["result"]["isError"] is True
    assert "error" not in tool_error
    failed = await raw.until((await raw.call("broken", {"protocol": True}))["taskId"], "failed")
    assert failed["status"] == "failed" and failed["error"] == {
        "code": INTERNAL_ERROR,
        "message": "backend down",
    }
    assert "result" not in failed and failed["statusMessage"] == "backend down"
    assert events == ["open", "close", "open", "close"]  # generator resolvers cleaned up either way


async def test_a_question_the_client_cannot_answer_fails_the_task_with_32021(raw: Raw) -> None:
    task = await raw(
        "tools/call", {"name": "go", "arguments": {"n": 1}}, caps={"extensions": {TASKS_EXTENSION: {}}}
    )
    failed = await raw.until(task["taskId"], "failed")
    assert failed["error"]["code"] == -32021
    assert failed["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_cancel_while_a_resolver_waits_for_its_answer(raw: Raw) -> None:
    task_id = (await raw.call("go", {"n": 3}))["taskId"]
    await raw.until(task_id, "input_required")
    ack = await raw.cancel(task_id)
    assert ack["resultType"] == "complete" and "status" not in ack
    cancelled = await raw.get(task_id)
    assert cancelled["status"] == "cancelled" and "inputRequests" not in cancelled
    await raw.update(task_id, {"ok": accept(ok=True)})  # too late: ignored, nothing runs
    await raw.cancel(task_id)  # idempotent on a finished task
    await anyio.sleep(0.1)
    assert (await raw.get(task_id))["status"] == "cancelled"
    assert events == ["open", "close"]  # the body never ran; the round's session was closed


async def test_cancel_stops_a_working_task_and_its_cleanup_runs(raw: Raw) -> None:
    task_id = (await raw.call("sleepy"))["taskId"]
    with anyio.fail_after(5):
        while (await raw.get(task_id)).get("statusMessage") != "half way":
            await anyio.sleep(0.02)
    await raw.cancel(task_id)
    cancelled = await raw.until(task_id, "cancelled")
    assert cancelled["status"] == "cancelled"
    assert events == ["open", "body cancelled", "close"]


async def test_progress_is_the_status_message(raw: Raw) -> None:
    task_id = (await raw.call("sleepy", {"seconds": 0.3}))["taskId"]
    seen = set()
    with anyio.fail_after(5):
        while (task := await raw.get(task_id))["status"] == "working":
            seen.add(task.get("statusMessage"))
            await anyio.sleep(0.02)
    assert "half way" in seen and task["status"] == "completed"


async def test_resolve_before_task_asks_in_the_request_and_runs_only_the_body_as_a_task(raw: Raw) -> None:
    first = await raw.call("first")
    assert first["resultType"] == "input_required" and "taskId" not in first
    assert set(first["inputRequests"]) == {"name"} and isinstance(first["requestState"], str)
    events.clear()
    task = await raw.call(
        "first", inputResponses={"name": accept(name="Ann")}, requestState=first["requestState"]
    )
    assert task["resultType"] == "task" and "requestState" not in task and "inputRequests" not in task
    assert events == ["open"]  # resolved in the request; the body waits for the task
    done = await raw.until(task["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Hello, Ann"
    # The session outlived the request that resolved it, and closed after the body.
    assert events == ["open", "first body", "close"]


async def test_unknown_tasks_and_removed_methods(raw: Raw) -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        with pytest.raises(MCPError) as unknown:
            await raw(method, {"taskId": "no-such-task", "inputResponses": {}})
        assert (unknown.value.code, unknown.value.message) == (
            -32602,
            "Failed to retrieve task: Task not found",
        )
    for method in ("tasks/result", "tasks/list"):
        with pytest.raises(MCPError) as removed:
            await raw(method, {"taskId": "x"})
        assert removed.value.code == -32601


async def test_the_extension_is_advertised_only_by_a_server_with_task_tools() -> None:
    async with Client(build(), mode="2026-07-28") as client:
        assert client.server_capabilities["extensions"] == {TASKS_EXTENSION: {}}
        assert "tasks" not in client.server_capabilities
    async with Client(MCPServer("none"), mode="2026-07-28") as client:
        assert "extensions" not in client.server_capabilities
    async with Client(build(), mode="legacy") as client:
        assert "extensions" not in client.server_capabilities


async def test_on_the_handshake_era_a_task_tool_is_a_plain_tool() -> None:
    async def person(question: Any) -> dict[str, Any]:
        return accept(ok=True)

    async with Client(build(), mode="legacy", elicitation_handler=person) as client:
        assert (await client.call_tool("go", {"n": 2})).content[0].text == "went 2"
        with pytest.raises(MCPError) as refused:
            await client.call_tool("two")
        assert refused.value.code == -32021
        with pytest.raises(MCPError) as unknown:
            await client.request("tasks/get", {"taskId": "x"})
        assert unknown.value.code == -32601


async def test_an_expired_task_is_gone_and_purged() -> None:
    # TTL 1.5 s: the check at 0.2 s must not race the expiry on a loaded host.
    mcp = build(ttl_ms=1500, purge_interval=0.05, lease_seconds=0.15)
    async with Client(mcp, mode="2026-07-28") as client:
        raw = Raw(client)
        task_id = (await raw.call("sleepy", {"seconds": 0.01}))["taskId"]
        done = await raw.until(task_id, "completed")
        assert done["ttlMs"] >= 1500
        await anyio.sleep(0.2)
        assert (await raw.get(task_id))["status"] == "completed"  # never before its TTL
        await anyio.sleep(1.4)
        with pytest.raises(MCPError) as expired:
            await raw.get(task_id)
        assert expired.value.message in (
            "Failed to retrieve task: Task has expired",
            "Failed to retrieve task: Task not found",
        )
        store = runner_of(mcp).store
        with anyio.fail_after(5):
            while await store.get(task_id) is not None:
                await anyio.sleep(0.05)
