"""Concurrency that cannot change the answer: resolvers overlap, failures report as a sequential run would.

Nothing here is timed. Overlap is shown by counting bodies in flight, and the
waits carry a generous deadline only so a broken engine fails instead of hanging.
"""

import threading
from typing import Annotated, Any

import anyio
import pytest
from mcp_types import ElicitRequestFormParams
from pydantic import BaseModel

from conftest import initialize_request
from mcp_resolve import Client, Elicit, MCPServer, Resolve, ToolError
from mcp_resolve._concurrency import _GroupTaskSet
from mcp_resolve.resolve import run as engine
from mcp_resolve.transports.memory import connect_in_memory

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True, params=["asyncio tasks", "anyio task group"])
def task_set(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both task sets: plain asyncio tasks, and the task group trio gets."""
    if request.param == "anyio task group":
        monkeypatch.setattr(engine, "open_task_set", _GroupTaskSet)
    return str(request.param)


MODES = ["2026-07-28", "legacy"]
DEADLINE = 10  # seconds; only reached when the engine is broken


def text_of(result: Any) -> str:
    return str(result.content[0].text)


class Ok(BaseModel):
    ok: bool


@pytest.mark.parametrize("mode", MODES)
async def test_four_independent_resolvers_are_all_in_flight_at_once(mode: str) -> None:
    server = MCPServer("overlap")
    in_flight = {"now": 0, "peak": 0}
    everyone_started = anyio.Event()

    def waiter(label: str) -> Any:
        async def wait_for_the_others() -> str:
            in_flight["now"] += 1
            in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
            if in_flight["now"] == 4:
                everyone_started.set()
            with anyio.fail_after(DEADLINE):
                await everyone_started.wait()
            in_flight["now"] -= 1
            return label

        return wait_for_the_others

    @server.tool()
    async def gather(
        a: Annotated[str, Resolve(waiter("a"))],
        b: Annotated[str, Resolve(waiter("b"))],
        c: Annotated[str, Resolve(waiter("c"))],
        d: Annotated[str, Resolve(waiter("d"))],
    ) -> str:
        return a + b + c + d

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("gather", {})
    assert text_of(result) == "abcd"
    assert in_flight["peak"] == 4


@pytest.mark.parametrize("mode", MODES)
async def test_a_body_starts_only_when_its_dependencies_are_resolved(mode: str) -> None:
    server = MCPServer("order")
    log: list[str] = []

    async def base() -> int:
        log.append("base")
        await anyio.lowlevel.checkpoint()
        log.append("base done")
        return 1

    async def derived(b: Annotated[int, Resolve(base)]) -> int:
        log.append("derived")
        return b + 1

    @server.tool()
    async def chain(d: Annotated[int, Resolve(derived)], b: Annotated[int, Resolve(base)]) -> str:
        return str(d + b)

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("chain", {})
    assert text_of(result) == "3"
    assert log == ["base", "base done", "derived"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_resolver_cancels_a_later_sibling_still_waiting(mode: str) -> None:
    server = MCPServer("cancel")
    sibling: list[str] = []
    sibling_started = anyio.Event()
    never = anyio.Event()

    async def fails() -> int:
        with anyio.fail_after(DEADLINE):
            await sibling_started.wait()
        raise ToolError("the lookup failed")

    async def waits_forever() -> int:
        sibling_started.set()
        try:
            with anyio.fail_after(DEADLINE):
                await never.wait()
        except anyio.get_cancelled_exc_class():
            sibling.append("cancelled")
            raise
        sibling.append("finished")
        return 0

    @server.tool()
    async def lookup(
        first: Annotated[int, Resolve(fails)], second: Annotated[int, Resolve(waits_forever)]
    ) -> str:
        return "unreachable"

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("lookup", {})
    assert result.is_error is True
    assert text_of(result) == "Error executing tool lookup: the lookup failed"
    assert sibling == ["cancelled"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("first_to_fail", ["earlier", "later"])
async def test_the_error_reported_is_the_earlier_one_in_signature_order(
    mode: str, first_to_fail: str
) -> None:
    server = MCPServer("determinism")
    earlier_may_fail = anyio.Event()
    later_may_fail = anyio.Event()
    seen: list[str] = []

    async def earlier() -> int:
        if first_to_fail == "later":
            with anyio.fail_after(DEADLINE):
                await earlier_may_fail.wait()
        seen.append("earlier fails")
        later_may_fail.set()
        raise ToolError("earlier failed")

    async def later() -> int:
        if first_to_fail == "earlier":
            with anyio.fail_after(DEADLINE):
                await later_may_fail.wait()
        seen.append("later fails")
        earlier_may_fail.set()
        raise ToolError("later failed")

    @server.tool()
    async def both(x: Annotated[int, Resolve(earlier)], y: Annotated[int, Resolve(later)]) -> str:
        return "unreachable"

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("both", {})
    assert text_of(result) == "Error executing tool both: earlier failed"
    # Whichever failed first in time, the earlier one ran to its own failure.
    expected = ["earlier fails"] if first_to_fail == "earlier" else ["later fails", "earlier fails"]
    assert seen == expected


@pytest.mark.parametrize("mode", MODES)
async def test_sync_resolvers_run_off_the_event_loop(mode: str) -> None:
    server = MCPServer("threads")
    gate = threading.Event()
    loop_thread: list[int] = []

    def blocks_until_opened() -> str:
        # On the event loop this would block the sibling that opens the gate: the wait would time out.
        return "opened" if gate.wait(timeout=DEADLINE) else "stuck"

    def thread_of_sync() -> int:
        return threading.get_ident()

    async def opens_the_gate() -> int:
        loop_thread.append(threading.get_ident())
        gate.set()
        return 1

    @server.tool()
    async def wait(
        status: Annotated[str, Resolve(blocks_until_opened)],
        sync_thread: Annotated[int, Resolve(thread_of_sync)],
        opened: Annotated[int, Resolve(opens_the_gate)],
    ) -> str:
        return f"{status} {sync_thread != loop_thread[0]}"

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("wait", {})
    assert text_of(result) == "opened True"


@pytest.mark.parametrize("mode", MODES)
async def test_a_resolver_runs_once_however_many_consumers(mode: str) -> None:
    server = MCPServer("once")
    runs: list[str] = []

    class Catalogue:
        def __init__(self, name: str) -> None:
            self.name = name

        async def entry(self) -> str:
            runs.append(self.name)
            return self.name

    shelf = Catalogue("shelf")

    async def describe(e: Annotated[str, Resolve(shelf.entry)]) -> str:
        return f"<{e}>"

    @server.tool()
    async def show(
        a: Annotated[str, Resolve(shelf.entry)],
        b: Annotated[str, Resolve(shelf.entry)],
        c: Annotated[str, Resolve(describe)],
    ) -> str:
        return a + b + c

    async with Client(server, mode=mode) as client:
        first = await client.call_tool("show", {})
        second = await client.call_tool("show", {})
    assert text_of(first) == text_of(second) == "shelfshelf<shelf>"
    assert runs == ["shelf", "shelf"]  # once per call (bound methods of one object are one resolver)


async def test_handshake_era_asks_one_question_at_a_time_per_call() -> None:
    server = MCPServer("one form at a time")
    ready = {"count": 0}
    both_ready = anyio.Event()

    def asker(topic: str) -> Any:
        async def ask() -> Elicit[Ok]:
            ready["count"] += 1
            if ready["count"] == 2:
                both_ready.set()
            with anyio.fail_after(DEADLINE):
                await both_ready.wait()  # both questions are ready to go at the same moment
            return Elicit(f"{topic}?", Ok)

        return ask

    @server.tool()
    async def two_questions(
        first: Annotated[Ok, Resolve(asker("first"))], second: Annotated[Ok, Resolve(asker("second"))]
    ) -> str:
        return f"{first.ok} {second.ok}"

    open_forms = {"now": 0, "peak": 0}
    asked: list[str] = []

    async def person(params: ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        open_forms["now"] += 1
        open_forms["peak"] = max(open_forms["peak"], open_forms["now"])
        for _ in range(50):  # give a second form every chance to arrive while this one is open
            await anyio.lowlevel.checkpoint()
        open_forms["now"] -= 1
        return {"action": "accept", "content": {"ok": True}}

    async with Client(server, mode="legacy", elicitation_handler=person) as client:
        result = await client.call_tool("two_questions", {})
    assert text_of(result) == "True True"
    assert sorted(asked) == ["first?", "second?"]
    assert open_forms["peak"] == 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ["decline", "accept"])
async def test_an_earlier_question_is_answered_before_a_later_failure_is_reported(
    mode: str, answer: str
) -> None:
    """A sequential run asks the first question before it meets the failing lookup, on either era."""
    server = MCPServer("question first")

    async def confirm() -> Elicit[Ok]:
        return Elicit("Go ahead?", Ok)

    async def lookup() -> int:
        raise ToolError("no such record")

    @server.tool()
    async def act(go: Annotated[Ok, Resolve(confirm)], record: Annotated[int, Resolve(lookup)]) -> str:
        return "unreachable"

    asked: list[str] = []

    async def person(params: ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": answer, "content": {"ok": True}} if answer == "accept" else {"action": answer}

    async with Client(server, mode=mode, elicitation_handler=person) as client:
        result = await client.call_tool("act", {})
    assert asked == ["Go ahead?"]
    expected = (
        "Resolver for parameter 'go' could not resolve: elicitation was decline"
        if answer == "decline"
        else "no such record"
    )
    assert text_of(result) == f"Error executing tool act: {expected}"


def abandoning_server(question_is_out: anyio.Event) -> MCPServer:
    """`abandon` asks a question, then fails in an earlier resolver once `question_is_out` is set."""
    server = MCPServer("withdraw")

    async def fails_once_the_question_is_out() -> int:
        with anyio.fail_after(DEADLINE):
            await question_is_out.wait()
        raise ToolError("too late")

    async def asks() -> Elicit[Ok]:
        return Elicit("Still there?", Ok)

    @server.tool()
    async def abandon(
        first: Annotated[int, Resolve(fails_once_the_question_is_out)], second: Annotated[Ok, Resolve(asks)]
    ) -> str:
        return "unreachable"

    return server


async def test_a_mid_call_question_abandoned_by_a_failure_is_withdrawn_from_the_client() -> None:
    question_is_out = anyio.Event()
    server = abandoning_server(question_is_out)

    async with connect_in_memory(server) as pipe:
        await pipe.send(initialize_request({"elicitation": {"form": {}}}))
        assert (await pipe.receive())["id"] == 1
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "abandon"}})
        question = await pipe.receive()
        assert question["method"] == "elicitation/create"
        question_is_out.set()
        with anyio.fail_after(DEADLINE):
            following = [await pipe.receive(), await pipe.receive()]
    withdrawn = [m for m in following if m.get("method") == "notifications/cancelled"]
    (response,) = [m for m in following if m.get("id") == 2]
    assert [m["params"]["requestId"] for m in withdrawn] == [question["id"]]
    assert response["result"]["content"][0]["text"] == "Error executing tool abandon: too late"


async def test_our_client_stops_answering_a_question_the_server_withdrew() -> None:
    """The person's form closes: the handler of a withdrawn question is cancelled and sends no answer."""
    question_is_out = anyio.Event()
    handler_cancelled = anyio.Event()
    server = abandoning_server(question_is_out)

    async def person(params: ElicitRequestFormParams) -> dict[str, Any]:
        question_is_out.set()
        try:
            await anyio.sleep_forever()
        finally:
            handler_cancelled.set()
        raise AssertionError("unreachable")

    async with Client(server, mode="legacy", elicitation_handler=person) as client:
        result = await client.call_tool("abandon", {})
        with anyio.fail_after(DEADLINE):
            await handler_cancelled.wait()
    assert text_of(result) == "Error executing tool abandon: too late"
