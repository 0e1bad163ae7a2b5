"""OpenTelemetry for tasks: each background round is a span under the request that created the task.

Read with the SDK's in-memory exporter (`test_telemetry.Otel`). A round's span
is a child of the creating `tools/call` span, found through the W3C context
the task record keeps, so a round on another worker (two servers sharing one
SQLite store here) hangs under it too; the `tasks/update` that started a round
is linked; the round's resolvers, questions and the tool's own spans nest
under it as under a direct call's request span. What the client sends as trace
context is only ever a parent after validation, never copied into the record.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from pydantic import BaseModel

from mcp_resolve import Client, MCPServer, Resolve
from mcp_resolve.resolve import Elicit
from mcp_resolve.stores import SqliteTaskStore
from mcp_resolve.tasks import TaskOptions
from mcp_resolve.tasks.runner import runner_of
from tasks_helpers import Raw, accept
from test_telemetry import CLIENT_SPAN, CLIENT_TRACE, TRACEPARENT, Otel, children, resolver

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


class Ok(BaseModel):
    ok: bool


async def lookup(n: int) -> int:
    return n * 100


async def confirm(cents: Annotated[int, Resolve(lookup)]) -> Elicit[Ok]:
    return Elicit(f"Pay {cents}?", Ok, key="ok")


def build(otel: Otel, **store: Any) -> MCPServer:
    mcp = MCPServer("traced-tasks", task_options=TaskOptions(poll_interval_ms=20), **store)
    tracer = otel.tracer_provider.get_tracer("the-tool-itself")

    @mcp.tool(task_support="optional")
    async def pay(n: int, cents: Annotated[int, Resolve(lookup)], ok: Annotated[Ok, Resolve(confirm)]) -> str:
        with tracer.start_as_current_span("provider call"):
            await anyio.sleep(0)
        return f"paid {cents}" if ok.ok else "not paid"

    @mcp.tool(task_support="required", resolve_before_task=True)
    async def later(n: int, cents: Annotated[int, Resolve(lookup)]) -> str:
        with tracer.start_as_current_span("slow part"):
            await anyio.sleep(0)
        return f"{cents} later"

    @mcp.tool(task_support="optional")
    async def sleepy() -> str:
        await anyio.sleep(30)
        return "slept"

    return mcp


def digest(task_id: str) -> str:
    return hashlib.sha256(task_id.encode()).hexdigest()[:16]


def named(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return sorted((s for s in spans if s["name"] == name), key=lambda s: s["start"])


def resolvers(spans: list[dict[str, Any]], parent: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {resolver(s): s for s in children(spans, parent) if s["name"].startswith("resolve ")}


async def pay_in_two_rounds(creator: Raw, answerer: Raw | None = None) -> str:
    """Create `pay` as a task, answer its question (from `answerer`, another worker if given), see it done."""
    answerer = answerer or creator
    task_id = str((await creator.call("pay", {"n": 3}, meta={"traceparent": TRACEPARENT}))["taskId"])
    await creator.until(task_id, "input_required")
    await answerer.update(task_id, {"ok": accept(ok=True)})
    done = await answerer.until(task_id, "completed")
    assert done["result"]["content"][0]["text"] == "paid 300"
    return task_id


async def test_each_round_is_a_span_under_the_creating_request_with_its_resolvers_under_it() -> None:
    otel = Otel()
    server = build(otel)
    otel.instrument(server)
    async with Client(server, mode=MODERN) as client:
        task_id = await pay_in_two_rounds(Raw(client))
        record = await runner_of(server).store.get(task_id)
    spans = otel.spans()

    (create,) = named(spans, "tools/call pay")
    assert (create["kind"], create["trace_id"], create["parent"]) == ("SERVER", CLIENT_TRACE, CLIENT_SPAN)
    assert create["attributes"]["mcp_resolve.result_type"] == "task"
    assert create["attributes"]["mcp_resolve.task.id"] == digest(task_id)
    # The record keeps the creating span's own context: the client's traceparent is a parent, never copied.
    assert record is not None and record.trace is not None
    assert record.trace["traceparent"] == f"00-{CLIENT_TRACE}-{create['span_id']}-01"
    assert "traceparent" not in record.meta

    first, second = named(spans, "execute_tool pay")
    (update,) = named(spans, "tasks/update")
    for number, round_span in enumerate((first, second), start=1):
        assert round_span["kind"] == "INTERNAL"
        assert (round_span["trace_id"], round_span["parent"]) == (CLIENT_TRACE, create["span_id"])
        attributes = round_span["attributes"]
        assert attributes["mcp_resolve.round"] == number
        assert (
            attributes["gen_ai.tool.name"] == "pay" and attributes["gen_ai.operation.name"] == "execute_tool"
        )
        assert attributes["mcp_resolve.task.id"] == digest(task_id)
    assert first["attributes"]["mcp_resolve.result_type"] == "input_required"
    assert "mcp_resolve.result_type" not in second["attributes"] and "error.type" not in second["attributes"]
    assert first["links"] == []  # started by the creating request, its parent
    assert second["links"] == [{"span_id": update["span_id"], "kind": "trigger"}]
    assert update["attributes"]["mcp_resolve.task.id"] == digest(task_id)

    asked = resolvers(spans, first)
    assert asked["lookup"]["attributes"]["mcp_resolve.resolver.outcome"] == "ok"
    assert asked["confirm"]["attributes"]["mcp_resolve.resolver.outcome"] == "pending"
    (question,) = children(spans, asked["confirm"])
    assert (question["name"], question["kind"]) == ("elicitation/create", "INTERNAL")
    assert question["attributes"]["mcp_resolve.question.outcome"] == "pending"
    answered = resolvers(spans, second)
    assert answered["confirm"]["attributes"]["mcp_resolve.resolver.outcome"] == "ok"
    (answer,) = children(spans, answered["confirm"])
    assert answer["attributes"]["mcp_resolve.question.outcome"] == "accept"
    (body,) = named(spans, "provider call")
    assert body["parent"] == second["span_id"]  # the tool's own spans nest under its round

    assert task_id not in json.dumps(spans)  # only its digest: the id is all it takes to read the task
    (rounds,) = otel.points("mcp_resolve.call.rounds")  # once, at the task's end, not at its creation
    assert (rounds.count, rounds.sum) == (1, 2)
    assert rounds.attributes["gen_ai.tool.name"] == "pay"


async def test_a_round_on_another_worker_hangs_under_the_same_span(tmp_path: Path) -> None:
    otel = Otel()
    path = tmp_path / "tasks.db"
    one, two = build(otel, task_store=SqliteTaskStore(path)), build(otel, task_store=SqliteTaskStore(path))
    otel.instrument(one)
    otel.instrument(two)
    async with Client(one, mode=MODERN) as first, Client(two, mode=MODERN) as second:
        await pay_in_two_rounds(Raw(first), Raw(second))
    spans = otel.spans()
    (create,) = named(spans, "tools/call pay")
    rounds = named(spans, "execute_tool pay")
    assert len(rounds) == 2
    assert all(s["parent"] == create["span_id"] and s["trace_id"] == CLIENT_TRACE for s in rounds)
    assert resolvers(spans, rounds[1])["confirm"]["attributes"]["mcp_resolve.resolver.asked"] is True


@pytest.mark.parametrize("how", ["created_before_instrumenting", "tampered_in_the_store"])
async def test_a_record_without_a_usable_trace_gets_a_root_span_linked_to_its_trigger(how: str) -> None:
    otel = Otel()
    server = build(otel)
    if how == "tampered_in_the_store":
        otel.instrument(server)
    async with Client(server, mode=MODERN) as client:
        raw = Raw(client)
        task_id = (await raw.call("pay", {"n": 3}))["taskId"]
        await raw.until(task_id, "input_required")
        store = runner_of(server).store
        if how == "tampered_in_the_store":
            record = await store.get(task_id)
            assert record is not None and record.trace is not None
            record.trace = {"traceparent": "00-" + "f" * 9000, "tracestate": 7}  # type: ignore[dict-item]
            assert await store.replace(record)
        else:
            otel.instrument(server)
        await raw.update(task_id, {"ok": accept(ok=True)})
        done = await raw.until(task_id, "completed")
    assert done["status"] == "completed"  # the round ran whatever the record said
    spans = otel.spans()
    (round_span,) = [s for s in named(spans, "execute_tool pay") if s["attributes"]["mcp_resolve.round"] == 2]
    (update,) = named(spans, "tasks/update")
    assert round_span["parent"] is None and round_span["trace_id"] != update["trace_id"]
    assert round_span["links"] == [{"span_id": update["span_id"], "kind": "trigger"}]
    assert set(resolvers(spans, round_span)) == {"lookup", "confirm"}


async def test_a_hostile_client_traceparent_never_reaches_the_record() -> None:
    otel = Otel()
    server = build(otel)
    otel.instrument(server)
    hostile = {"traceparent": f"00-{'0' * 32}-{'0' * 16}-01", "tracestate": "x" * 5000}
    async with Client(server, mode=MODERN) as client:
        raw = Raw(client)
        task_id = (await raw.call("pay", {"n": 3}, meta=hostile))["taskId"]
        await raw.until(task_id, "input_required")
        record = await runner_of(server).store.get(task_id)
    (create,) = named(otel.spans(), "tools/call pay")
    assert create["parent"] is None  # an invalid context parents nothing
    assert record is not None and record.trace is not None and set(record.trace) == {"traceparent"}
    assert record.trace["traceparent"].startswith(f"00-{create['trace_id']}-{create['span_id']}-")
    assert "x" * 100 not in json.dumps(record.trace) + json.dumps(record.meta)
    (round_span,) = named(otel.spans(), "execute_tool pay")
    assert round_span["parent"] == create["span_id"]


async def test_resolving_before_the_task_traces_the_resolvers_in_the_request() -> None:
    otel = Otel()
    server = build(otel)
    otel.instrument(server)
    async with Client(server, mode=MODERN) as client:
        handle = await client.call_tool_task("later", {"n": 2})
        assert (await handle.result()).content[0].text == "200 later"  # type: ignore[union-attr]
    spans = otel.spans()
    (create,) = named(spans, "tools/call later")
    assert set(resolvers(spans, create)) == {"lookup"}
    (body,) = named(spans, "slow part")
    assert body["trace_id"] == create["trace_id"]


async def test_a_cancelled_round_ends_its_span_as_cancelled() -> None:
    otel = Otel()
    server = build(otel)
    otel.instrument(server)
    async with Client(server, mode=MODERN) as client:
        raw = Raw(client)
        task_id = (await raw.call("sleepy"))["taskId"]
        with anyio.fail_after(10):
            while not named(otel.spans(), "tasks/get"):  # the round is under way once the task is polled
                await raw.get(task_id)
        await raw.cancel(task_id)
        assert (await raw.until(task_id, "cancelled"))["status"] == "cancelled"
        with anyio.fail_after(10):
            while not named(otel.spans(), "execute_tool sleepy"):
                await anyio.sleep(0.01)
    (round_span,) = named(otel.spans(), "execute_tool sleepy")
    assert round_span["attributes"]["error.type"] == "cancelled"
    assert not otel.points("mcp_resolve.call.rounds")  # a cancelled call has no round count
