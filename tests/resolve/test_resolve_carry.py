"""`Resolve(fn, carry=True)`: a resolver's value computed once per call, carried between 2026-07-28 rounds.

The refund in tests/servers/carry_desk.py takes three rounds; its price lookup
is a generator resolver that opens a real database connection, and an events
file records every open, close and run. Carried, the lookup opens once per
call on every transport; not carried, once per round (the documented default);
on the handshake era, once per call either way. The carried value rides only
inside the sealed state: tampering with it is refused like any tampered state,
and refusals at registration say what to change.
"""

# No `from __future__ import annotations`: tools below are local functions whose annotations name
# local resolvers.

import base64
import json
import logging
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
from mcp.client import Client as OfficialClient
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, ElicitResult
from pydantic import BaseModel

from conftest import PYTHON, SERVERS
from http_helpers import http_server
from mcp_resolve import Client, Elicit, InvalidSignature, MCPServer, RequestStateSecurity, Resolve
from mcp_resolve.cli import check, graph_mermaid, graph_text
from mcp_resolve.resolve import build_resolver_plans, find_resolved_parameters
from mcp_resolve.resolve.carry import MAX_CARRIED_BYTES, restore_values
from mcp_resolve.resolve.state import StateRecord
from mcp_resolve.transports.memory import connect_in_memory
from servers.carry_desk import Quote, build
from servers.state_server import HmacCodec
from tasks_helpers import Raw, accept

pytestmark = pytest.mark.anyio

CARRY_DESK = SERVERS / "carry_desk.py"
ARGUMENTS = {"order_id": "ORD-1"}
RECEIPT = {"order_id": "ORD-1", "cents": 4800, "fee": 0, "restocked": True}
FROZEN = {"code": -32602, "message": "Invalid or expired requestState"}
META = {
    PROTOCOL_VERSION_META_KEY: "2026-07-28",
    CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}},
}

# What runs, call by call. On 2026-07-28 a round's generator cleanup runs when the round ends; on the
# handshake era the call is one request and the cleanup runs after the body.
CARRIED_2026 = ["open", "scope", "close", "scope", "fee", "scope", "refund"]
FRESH_2026 = ["open", "scope", "close", "open", "scope", "close", "open", "scope", "refund", "close"]
CARRIED_HANDSHAKE = ["open", "scope", "fee", "refund", "close"]
FRESH_HANDSHAKE = ["open", "scope", "refund", "close"]
EXPECTED = {
    ("refund", "2026-07-28"): CARRIED_2026,
    ("refund_fresh", "2026-07-28"): FRESH_2026,
    ("refund", "legacy"): CARRIED_HANDSHAKE,
    ("refund_fresh", "legacy"): FRESH_HANDSHAKE,
}


class Person:
    """Answers the scope and restock questions, and notes each question it is asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def content(self, message: str) -> dict[str, Any]:
        self.asked.append(message)
        return {"restock": True} if "stock" in message else {"full": True}

    async def ours(self, params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": self.content(params.message)}

    async def official(self, _context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content=self.content(params.message))


def events(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


async def refund_over(client: Any, tool: str) -> dict[str, Any]:
    result = await client.call_tool(tool, ARGUMENTS)
    assert result.is_error is False, result
    content: dict[str, Any] = result.structured_content
    return content


# -- once per call, over real transports --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("tool", ["refund", "refund_fresh"])
async def test_lookup_runs_per_call_when_carried_and_per_round_when_not_over_stdio(
    tmp_path: Path, tool: str, mode: str
) -> None:
    log = tmp_path / "events"
    person = Person()
    server = [PYTHON, str(CARRY_DESK)]
    async with Client(
        server, mode=mode, env={"CARRY_DESK_EVENTS": str(log)}, elicitation_handler=person.ours
    ) as client:
        receipt = await refund_over(client, tool)
    assert receipt == {**RECEIPT}
    assert events(log) == EXPECTED[tool, mode]
    assert person.asked == ["Refund all of ORD-1 (4800 cents)?", "Put the items back into stock?"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("tool", ["refund", "refund_fresh"])
async def test_lookup_runs_per_call_when_carried_and_per_round_when_not_over_http(
    tmp_path: Path, tool: str, mode: str
) -> None:
    log = tmp_path / "events"
    person = Person()
    async with (
        http_server(build(str(log)).streamable_http_app()) as base,
        Client(f"{base}/mcp", mode=mode, elicitation_handler=person.ours) as client,
    ):
        assert await refund_over(client, tool) == RECEIPT
    assert events(log) == EXPECTED[tool, mode]


@pytest.mark.slow
async def test_the_official_client_gets_one_lookup_per_call_over_http(tmp_path: Path) -> None:
    log = tmp_path / "events"
    person = Person()
    async with (
        http_server(build(str(log)).streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode="auto", elicitation_callback=person.official) as client,
    ):
        assert client.protocol_version == "2026-07-28"
        for _ in range(2):  # a second call looks the price up again: carry is per call, never a cache
            assert await refund_over(client, "refund") == RECEIPT
    assert events(log) == CARRIED_2026 * 2


# -- the sealed state ---------------------------------------------------------------------------------


@asynccontextmanager
async def raw_wire(mcp: MCPServer) -> AsyncIterator[Any]:
    """Send tools/call requests byte for byte; returns each response message."""
    async with connect_in_memory(mcp) as pipe:
        ids = iter(range(1, 1000))

        async def call(extra: dict[str, Any]) -> dict[str, Any]:
            params = {"name": "refund", "arguments": ARGUMENTS, "_meta": META, **extra}
            request_id = next(ids)
            await pipe.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
            response: dict[str, Any] = await pipe.receive()
            assert response["id"] == request_id
            return response

        yield call


SCOPE_ANSWER = {"action": "accept", "content": {"full": True}}


def answers(result: dict[str, Any]) -> dict[str, Any]:
    return {key: SCOPE_ANSWER for key in result["inputRequests"]}


async def test_default_sealing_hides_the_carried_value_and_refuses_a_tampered_one(tmp_path: Path) -> None:
    log = tmp_path / "events"
    async with raw_wire(build(str(log))) as call:
        first = (await call({}))["result"]
        state = first["requestState"]
        raw = base64.urlsafe_b64decode(state + "=" * (-len(state) % 4))
        assert b"cents" not in raw and b"ORD-1" not in raw  # AES-GCM: the client cannot read it
        for position in (len(state) // 2, len(state) - 3):  # a byte in the middle, one in the tag
            flipped = state[:position] + ("A" if state[position] != "A" else "B") + state[position + 1 :]
            refused = await call({"requestState": flipped, "inputResponses": answers(first)})
            assert refused["error"] == FROZEN
        assert events(log) == ["open", "scope", "close"]  # a refused state ran nothing
        second = (await call({"requestState": state, "inputResponses": answers(first)}))["result"]
        assert second["resultType"] == "input_required"  # the untouched state still works
    assert events(log) == ["open", "scope", "close", "scope", "fee"]


async def test_a_sign_only_codec_shows_the_carried_value_but_refuses_an_edited_one(tmp_path: Path) -> None:
    """The documented caveat: with a codec that only authenticates, the client can read what is carried."""
    log = tmp_path / "events"
    security = RequestStateSecurity(codec=HmacCodec(b"k" * 32))
    async with raw_wire(build(str(log), security)) as call:
        first = (await call({}))["result"]
        body, mac = first["requestState"].split(".")
        envelope = json.loads(base64.urlsafe_b64decode(body))
        record = json.loads(base64.b64decode(envelope["p"]))
        (carried,) = record["carried"].values()
        assert carried == {"order_id": "ORD-1", "cents": 4800}  # readable: this codec does not encrypt
        (key,) = record["carried"]
        record["carried"][key]["cents"] = 1
        envelope["p"] = base64.b64encode(json.dumps(record).encode()).decode()
        edited = base64.urlsafe_b64encode(json.dumps(envelope, separators=(",", ":")).encode()).decode()
        refused = await call({"requestState": f"{edited}.{mac}", "inputResponses": answers(first)})
        assert refused["error"] == FROZEN
    assert events(log) == ["open", "scope", "close"]


async def test_a_client_cannot_hand_in_a_carried_value(tmp_path: Path) -> None:
    """Carried values come only out of a state this server sealed: plaintext and answers are not read as one."""
    log = tmp_path / "events"
    mcp = build(str(log))
    lookup_key = next(
        plan.wire_key
        for plan in mcp.registry.tools["refund"].signature.plans().values()
        if plan.name.endswith("price_lookup")
    )
    forged = StateRecord(carried={lookup_key: {"order_id": "ORD-1", "cents": 1}}).encode().decode()
    async with raw_wire(mcp) as call:
        refused = await call({"requestState": forged})
        assert refused["error"] == FROZEN
        assert events(log) == []
        guessed = await call({"inputResponses": {lookup_key: {"order_id": "ORD-1", "cents": 1}}})
        assert guessed["result"]["resultType"] == "input_required"
    assert events(log) == ["open", "scope", "close"]  # the lookup ran: the "answer" was no value


# -- what runs in later rounds ------------------------------------------------------------------------


class Scope(BaseModel):
    full: bool


async def two_rounds(mcp: MCPServer, tool: str, mode: str = "2026-07-28") -> Any:
    async def accept(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"full": True}}

    async with Client(mcp, mode=mode, elicitation_handler=accept) as client:
        return await client.call_tool(tool, {"order_id": "A"})


def connect_and_total(runs: list[str]) -> tuple[Any, Any, Any]:
    async def connect(order_id: str) -> str:
        runs.append("connect")
        return f"db:{order_id}"

    async def total(connection: Annotated[str, Resolve(connect)]) -> int:
        runs.append("total")
        return 4800

    async def ask(order_id: str) -> Scope | Elicit[Scope]:
        return Elicit(f"Refund all of {order_id}?", Scope)

    return connect, total, ask


async def test_a_dependency_only_the_carried_resolver_needs_runs_once() -> None:
    runs: list[str] = []
    _connect, total, ask = connect_and_total(runs)
    mcp = MCPServer("Deps")

    @mcp.tool()
    async def refund(
        order_id: str,
        cents: Annotated[int, Resolve(total, carry=True)],
        scope: Annotated[Scope, Resolve(ask)],
    ) -> int:
        return cents

    result = await two_rounds(mcp, "refund")
    assert result.structured_content == {"result": 4800}
    assert runs == ["connect", "total"]


async def test_a_dependency_something_else_needs_still_runs_every_round() -> None:
    runs: list[str] = []
    connect, total, ask = connect_and_total(runs)
    mcp = MCPServer("Deps")

    @mcp.tool()
    async def refund(
        order_id: str,
        cents: Annotated[int, Resolve(total, carry=True)],
        connection: Annotated[str, Resolve(connect)],
        scope: Annotated[Scope, Resolve(ask)],
    ) -> str:
        return f"{cents} via {connection}"

    result = await two_rounds(mcp, "refund")
    assert result.structured_content == {"result": "4800 via db:A"}
    assert runs == ["connect", "total", "connect"]


async def test_a_dependency_override_stands_in_with_the_written_resolvers_type() -> None:
    runs: list[str] = []
    _connect, total, ask = connect_and_total(runs)
    mcp = MCPServer("Overrides")

    @mcp.tool()
    async def refund(
        order_id: str,
        cents: Annotated[int, Resolve(total, carry=True)],
        scope: Annotated[Scope, Resolve(ask)],
    ) -> int:
        return cents

    def fake_total() -> int:  # an unannotated stand-in would do too: the written resolver's type counts
        runs.append("fake")
        return 1

    mcp.dependency_overrides[total] = lambda: fake_total()
    result = await two_rounds(mcp, "refund")
    assert result.structured_content == {"result": 1}
    assert runs == ["fake"]


# -- refused at run time ------------------------------------------------------------------------------


def asking_tool(mcp: MCPServer, value: Any, annotation: Any) -> None:
    async def pricey() -> Any:
        return value

    pricey.__annotations__["return"] = annotation

    async def ask(order_id: str) -> Scope | Elicit[Scope]:
        return Elicit(f"Refund all of {order_id}?", Scope)

    @mcp.tool()
    async def refund(
        order_id: str,
        cents: Annotated[Any, Resolve(pricey, carry=True)],
        scope: Annotated[Scope, Resolve(ask)],
    ) -> str:
        return f"{len(str(cents))} characters"


async def test_a_value_its_annotation_does_not_describe_fails_the_round_without_quoting_it() -> None:
    mcp = MCPServer("Wrong")
    asking_tool(mcp, "s3cret-token", int)
    result = await two_rounds(mcp, "refund")
    assert result.is_error is True
    text = result.content[0].text
    assert (
        "pricey returned a str, which cannot be carried to the next round as its declared return type int"
        in text
    )
    assert "s3cret" not in text


async def test_a_carried_value_over_the_size_cap_fails_the_round_clearly() -> None:
    mcp = MCPServer("Big")
    asking_tool(mcp, "x" * MAX_CARRIED_BYTES, str)
    result = await two_rounds(mcp, "refund")
    assert result.is_error is True
    text = result.content[0].text
    assert re.search(
        rf"take \d+ bytes of JSON, over the limit of {MAX_CARRIED_BYTES}: carry a small value", text
    )
    assert "pricey" in text and "xxxx" not in text
    # The handshake era has no later round: nothing is carried, nothing is measured.
    handshake = await two_rounds(mcp, "refund", mode="legacy")
    assert handshake.structured_content == {"result": f"{MAX_CARRIED_BYTES} characters"}


async def test_a_carried_value_that_no_longer_fits_its_type_is_computed_again(caplog: Any) -> None:
    """A state sealed before a deploy changed the type: the resolver runs, nothing fails."""

    async def total(order_id: str) -> int:
        return 1

    async def tool(order_id: str, cents: Annotated[int, Resolve(total, carry=True)]) -> int:
        return cents

    plans = build_resolver_plans(find_resolved_parameters(tool), {"order_id"})
    (plan,) = plans.values()
    with caplog.at_level(logging.WARNING, logger="mcp_resolve.resolve"):
        assert restore_values([plan], {plan.wire_key: "not a number"}) == {}
        assert restore_values([plan], {plan.wire_key: 7}) == {total: 7}
    assert "no longer fits its type; running it again" in caplog.text
    assert "not a number" not in caplog.text


# -- refused at registration --------------------------------------------------------------------------


def register(resolver: Any, *, carry_default: bool = False) -> None:
    mcp = MCPServer("Refused")

    @mcp.tool()
    async def refund(order_id: str, value: Annotated[Any, Resolve(resolver, carry=True)]) -> str:
        return "never"


def no_annotation(order_id: str):  # type: ignore[no-untyped-def]
    return 1


def anything(order_id: str) -> Any:
    return 1


def connection(order_id: str) -> sqlite3.Connection:
    return sqlite3.connect(":memory:")


def badly_annotated_generator(order_id: str) -> Quote:  # type: ignore[misc]
    yield Quote(order_id=order_id, cents=1)


async def yields_a_connection(order_id: str) -> AsyncIterator[sqlite3.Connection]:
    yield sqlite3.connect(":memory:")


async def asks(order_id: str) -> Scope | Elicit[Scope]:
    return Elicit("Which?", Scope)


@pytest.mark.parametrize(
    ("resolver", "message"),
    [
        (no_annotation, "carry=True needs a return annotation, the type its value is read back as"),
        (anything, "carry=True needs a concrete return type, not Any"),
        (connection, "needs a return type that can be written as JSON and read back, and Connection cannot"),
        (badly_annotated_generator, "on a generator resolver needs its return annotated with what it yields"),
        (yields_a_connection, "Connection cannot"),
        (asks, "carry=True is for resolvers that compute a value; this one may ask a question"),
    ],
    ids=["no-annotation", "any", "connection", "generator-annotation", "yields-connection", "asks"],
)
def test_what_cannot_be_carried_is_refused_at_registration(resolver: Any, message: str) -> None:
    with pytest.raises(InvalidSignature) as caught:
        register(resolver)
    assert message in str(caught.value)
    assert resolver.__qualname__ in str(caught.value)


def test_a_generator_yielding_a_model_can_be_carried() -> None:
    def lookup(order_id: str) -> Iterator[Quote]:
        yield Quote(order_id=order_id, cents=1)

    async def alookup(order_id: str) -> AsyncIterator[list[Quote]]:
        yield [Quote(order_id=order_id, cents=1)]

    register(lookup)
    register(alookup)


def test_markers_of_one_resolver_must_agree_on_carry() -> None:
    async def total(order_id: str) -> int:
        return 1

    async def fee(amount: Annotated[int, Resolve(total)]) -> int:
        return amount // 10

    mcp = MCPServer("Disagree")
    with pytest.raises(InvalidSignature, match="mark every Resolve of it alike") as caught:

        @mcp.tool()
        async def refund(
            order_id: str,
            cents: Annotated[int, Resolve(total, carry=True)],
            fee: Annotated[int, Resolve(fee)],
        ) -> int:
            return cents - fee

    assert "has carry=True filling parameter 'cents' but not filling parameter 'amount' of" in str(
        caught.value
    )
    with pytest.raises(InvalidSignature, match="names two resolvers"):

        @mcp.tool()
        async def refund_twice(
            order_id: str, cents: Annotated[int, Resolve(total, carry=True)] = Resolve(total)
        ) -> int:
            return cents


def test_carry_takes_a_bool() -> None:
    with pytest.raises(TypeError, match="takes True or False"):
        Resolve(len, carry="yes")  # type: ignore[arg-type]
    assert repr(Resolve(len, carry=True)) == "Resolve('len', carry=True)"


# -- the state record, check and graph ----------------------------------------------------------------


def test_a_record_without_carried_values_is_unchanged() -> None:
    plain = StateRecord(asked={"k": "d"})
    assert b"carried" not in plain.encode()
    carrying = StateRecord(asked={"k": "d"}, carried={"m:price": {"cents": 1}})
    assert StateRecord.decode(carrying.encode()).carried == {"m:price": {"cents": 1}}
    assert StateRecord.decode(b'{"v":1,"carried":[1]}').carried == {}


def test_check_and_graph_say_what_is_carried() -> None:
    mcp = build(None)
    assert (
        check(mcp)
        == "OK Carry Desk: 2 tools, 0 prompts, 0 resources, 0 templates, 6 resolvers (2 carried across rounds)"
    )
    text = graph_text([mcp.registry.tools["refund"]])
    assert "price_lookup(order_id)" in text
    lines = {line.split("(")[0].strip().rpartition(".")[2]: line for line in text.splitlines() if "(" in line}
    assert lines["price_lookup"].endswith("carried across rounds as Quote; cleans up after the body")
    assert lines["handling_fee"].endswith("carried across rounds as int")
    assert "carried" not in lines["ask_scope"]
    assert "carried" not in graph_text([mcp.registry.tools["refund_fresh"]])
    assert "price_lookup<br/>carried across rounds as Quote" in graph_mermaid([mcp.registry.tools["refund"]])


async def test_a_task_carries_its_value_between_rounds_in_the_task_record(tmp_path: Path) -> None:
    """A task's rounds carry through the plaintext record the task store keeps (never sent to the client)."""
    log = tmp_path / "events"
    mcp = build(str(log))
    mcp.add_tool(mcp.registry.tools["refund"].fn, name="refund_task", task_support="required")
    async with Client(mcp, mode="2026-07-28") as client:
        raw = Raw(client)
        task = await raw.call("refund_task", ARGUMENTS)
        for content in ({"full": True}, {"restock": True}):
            asked = await raw.until(task["taskId"], "input_required")
            await raw.update(task["taskId"], {key: accept(**content) for key in asked["inputRequests"]})
        done = await raw.until(task["taskId"], "completed")
    assert done["result"]["structuredContent"] == RECEIPT
    assert events(log) == CARRIED_2026
