"""OpenTelemetry (issue 26): spans and metrics for requests, resolvers, questions and rounds.

Spans and metrics are read with the OpenTelemetry SDK's own in-memory exporter
and metric reader: in this process for the in-memory transport and for HTTP
(uvicorn in a thread), and through a JSON-lines file written by an
instrumented server for stdio (tests/servers/traced_desk.py). Nothing here
sets the global tracer provider: the official SDK, loaded by other tests in
this process, traces through the global one, and its spans are not ours.

Without OpenTelemetry, or with it but uninstrumented, nothing is imported and
nothing recorded: proved in fresh interpreters, one of which cannot import it.
"""

from __future__ import annotations

import ast
import gc
import json
import os
import subprocess
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind

from conftest import PYTHON, REFUND_DESK, ROOT, SERVERS, initialize_request, load_module
from http_helpers import http_server
from mcp_resolve import Client, MCPServer, RequestStateSecurity, Resolve
from mcp_resolve.sealing import MAX_CARRY_CHARS, StateBinding
from mcp_resolve.telemetry import uninstrument
from mcp_resolve.transports.memory import connect_in_memory
from otel_helpers import Otel
from servers.raw_stdio import RawStdio, modern_meta

pytestmark = pytest.mark.anyio

TRACED_DESK = SERVERS / "traced_desk.py"
traced = load_module(TRACED_DESK, "traced_desk_helpers")
MODERN, LEGACY = "2026-07-28", "legacy"
REFUND = {"order_id": "ORD-7002", "reason": "boots SECRET-REASON too small"}
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"


@pytest.fixture
def otel() -> Otel:
    return Otel()


def desk() -> MCPServer:
    """A fresh refund desk, with the four-resolver tool beside `refund_order`."""
    server: MCPServer = load_module(REFUND_DESK).mcp
    traced.add_four_lookups(server)
    return server


async def person(question: Any) -> dict[str, Any]:
    if question.message.startswith("Restock"):
        return {"action": "accept", "content": {"restock": True}}
    return {"action": "accept", "content": {"full": True}}


def calls(spans: list[dict[str, Any]], tool: str = "refund_order") -> list[dict[str, Any]]:
    return sorted((s for s in spans if s["name"] == f"tools/call {tool}"), key=lambda s: s["start"])


def children(spans: list[dict[str, Any]], parent: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in spans if s["parent"] == parent["span_id"] and s["trace_id"] == parent["trace_id"]]


def resolver(span: dict[str, Any]) -> str:
    """The short name of the resolver a span is about: `refund_scope` for `resolve mod:refund_scope`."""
    return str(span["attributes"]["mcp_resolve.resolver.name"]).rsplit(":", 1)[-1]


def check_refund_story(spans: list[dict[str, Any]], mode: str) -> None:
    """The refund of a two-line order, told by its spans: rounds, resolvers under them, questions under those."""
    story = calls(spans)
    assert all(s["kind"] == "SERVER" for s in story)
    for span in story:
        attributes = span["attributes"]
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == "refund_order"
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["mcp.protocol.version"] == (MODERN if mode == MODERN else "2025-11-25")
        assert "error.type" not in attributes
    if mode == MODERN:
        assert [s["attributes"]["mcp_resolve.round"] for s in story] == [1, 2, 3]
        assert [s["attributes"].get("mcp_resolve.result_type") for s in story] == [
            "input_required",
            "input_required",
            None,
        ]
        first = story[0]["span_id"]
        for later in story[1:]:  # each later round links to the first: one call, one story
            assert {"span_id": first, "kind": "first_round"} in later["links"]
    else:
        assert len(story) == 1
    for span in story:
        under = children(spans, span)
        assert under and all(s["name"].startswith("resolve ") for s in under)
        assert {resolver(s) for s in under} >= {"current_customer", "load_order", "refund_scope"}
    questions = [s for s in spans if "mcp_resolve.question.kind" in s["attributes"]]
    by_id = {s["span_id"]: s for s in spans}
    outcomes = []
    for question in questions:
        asker = by_id[question["parent"]]  # a question's parent is the resolver that asked it
        assert resolver(asker) in ("refund_scope", "ask_restock")
        assert asker["attributes"]["mcp_resolve.resolver.asked"] is True
        assert question["name"] == "elicitation/create"
        assert question["attributes"]["mcp_resolve.question.kind"] == "elicitation"
        assert question["kind"] == ("INTERNAL" if mode == MODERN else "CLIENT")
        outcomes.append((resolver(asker), question["attributes"]["mcp_resolve.question.outcome"]))
    if mode == MODERN:
        assert sorted(outcomes) == [
            ("ask_restock", "accept"),
            ("ask_restock", "pending"),
            ("refund_scope", "accept"),
            ("refund_scope", "pending"),
        ]
    else:
        assert sorted(outcomes) == [("ask_restock", "accept"), ("refund_scope", "accept")]


# -- spans on each transport, both eras --------------------------------------------------------


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_refund_desk_spans_in_memory(otel: Otel, mode: str) -> None:
    server = desk()
    otel.instrument(server)
    async with Client(server, mode=mode, elicitation_handler=person) as client:
        result = await client.call_tool("refund_order", REFUND)
    assert result.structured_content == {**REFUND, "cents": 4800, "restocked": True}
    spans = otel.spans()
    check_refund_story(spans, mode)
    opening = "server/discover" if mode == MODERN else "initialize"
    assert [s["name"] for s in spans if s["parent"] is None and not s["name"].startswith("tools/")] == [
        opening
    ]


@pytest.mark.slow
@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_refund_desk_spans_over_stdio_join_the_clients_trace(tmp_path: Path, mode: str) -> None:
    spans_file = tmp_path / "spans.jsonl"
    agent = TracerProvider().get_tracer("the agent")
    with agent.start_as_current_span("agent turn") as turn:
        async with Client(
            str(TRACED_DESK),
            mode=mode,
            env={"MCP_RESOLVE_TEST_SPANS": str(spans_file)},
            elicitation_handler=person,
        ) as client:
            result = await client.call_tool("refund_order", REFUND)
    assert result.structured_content == {**REFUND, "cents": 4800, "restocked": True}
    spans = [json.loads(line) for line in spans_file.read_text().splitlines()]
    check_refund_story(spans, mode)
    trace_id, span_id = f"{turn.get_span_context().trace_id:032x}", f"{turn.get_span_context().span_id:016x}"
    requests = [s for s in spans if s["kind"] == "SERVER"]
    assert len(requests) == (4 if mode == MODERN else 2)  # the opening, then each round
    for request in requests:  # our client put its trace context in _meta; the server's spans join it
        assert (request["trace_id"], request["parent"]) == (trace_id, span_id)


@pytest.mark.slow
@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_refund_desk_spans_over_http_join_the_clients_trace(otel: Otel, mode: str) -> None:
    server = desk()
    otel.instrument(server)
    agent = TracerProvider().get_tracer("the agent")
    async with http_server(server.streamable_http_app()) as base:
        with agent.start_as_current_span("agent turn") as turn:
            async with Client(f"{base}/mcp", mode=mode, elicitation_handler=person) as client:
                result = await client.call_tool("refund_order", REFUND)
    assert result.structured_content == {**REFUND, "cents": 4800, "restocked": True}
    spans = otel.spans()
    check_refund_story(spans, mode)
    context = turn.get_span_context()
    for request in (s for s in spans if s["kind"] == "SERVER"):
        assert (request["trace_id"], request["parent"]) == (
            f"{context.trace_id:032x}",
            f"{context.span_id:016x}",
        )
        assert request["attributes"]["network.transport"] == "tcp"
    if mode == LEGACY:  # the session id is recorded, as a digest: the id itself would let one speak in it
        (call,) = calls(spans)
        digest = call["attributes"]["mcp.session.id"]
        assert len(digest) == 16 and all(c in "0123456789abcdef" for c in digest)


@pytest.mark.slow
@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_four_concurrent_resolvers_are_overlapping_siblings(otel: Otel, mode: str) -> None:
    server = desk()
    otel.instrument(server)
    async with http_server(server.streamable_http_app()) as base, Client(f"{base}/mcp", mode=mode) as client:
        result = await client.call_tool("four_lookups", {})
    assert result.structured_content == {"result": 10}
    spans = otel.spans()
    (call,) = calls(spans, "four_lookups")
    lookups = children(spans, call)
    assert sorted(resolver(s) for s in lookups) == ["lookup_a", "lookup_b", "lookup_c", "lookup_d"]
    assert all(s["attributes"]["mcp_resolve.resolver.outcome"] == "ok" for s in lookups)
    assert all(s["attributes"]["mcp_resolve.resolver.asked"] is False for s in lookups)
    assert max(s["start"] for s in lookups) < min(s["end"] for s in lookups)  # all four open at once


# -- trace context from the client, and from clients that send garbage -----------------------------


def _modern_post(method: str, meta: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"_meta": meta}}


MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/list",
}

HOSTILE_META: list[dict[str, Any]] = [
    {"traceparent": 42},
    {"traceparent": {"HOSTILE": TRACEPARENT}},
    {"traceparent": "not a traceparent HOSTILE"},
    {"traceparent": "00-00000000000000000000000000000000-0000000000000000-01", "tracestate": "HOSTILE=1"},
    {"traceparent": f"ff-{CLIENT_TRACE}-{CLIENT_SPAN}-01", "baggage": "HOSTILE=1"},
    {"traceparent": f"{TRACEPARENT}-HOSTILE" + "x" * 200_000},
    {"traceparent": TRACEPARENT + "\n" * 1000 + "HOSTILE"},
    {"traceparent": TRACEPARENT + "\n" * 100 + "HOSTILE"},
    {"traceparent": f"{TRACEPARENT}-HOSTILE"},
    {"traceparent": "\u0000" + TRACEPARENT, "baggage": "HOSTILE=" + "%" * 100_000},
]


@pytest.mark.slow
async def test_http_traceparent_header_parents_a_request_without_meta_context(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)
    async with http_server(server.streamable_http_app()) as base, httpx.AsyncClient() as http:
        response = await http.post(
            f"{base}/mcp",
            json=_modern_post("tools/list", modern_meta()),
            headers={**MODERN_HEADERS, "traceparent": TRACEPARENT},
        )
        assert response.status_code == 200
        # _meta wins over the header: it travels with the MCP message, whatever carried it.
        other = f"00-{'1' * 32}-{'2' * 16}-01"
        response = await http.post(
            f"{base}/mcp",
            json=_modern_post("tools/list", modern_meta(traceparent=other)),
            headers={**MODERN_HEADERS, "traceparent": TRACEPARENT},
        )
        assert response.status_code == 200
    first, second = sorted((s for s in otel.spans() if s["name"] == "tools/list"), key=lambda s: s["start"])
    assert (first["parent_trace"], first["parent"]) == (CLIENT_TRACE, CLIENT_SPAN)
    assert (second["parent_trace"], second["parent"]) == ("1" * 32, "2" * 16)


def with_http_spans(app: Any, tracer_provider: TracerProvider) -> Any:
    """`app` behind what an ASGI instrumentation does: a SERVER span per HTTP request, current for the app."""
    tracer = tracer_provider.get_tracer("asgi instrumentation stand-in")

    async def traced_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        with tracer.start_as_current_span(f"{scope['method']} {scope['path']}", kind=SpanKind.SERVER):
            await app(scope, receive, send)

    return traced_app


@pytest.mark.slow
async def test_under_an_asgi_instrumentation_its_http_span_is_the_parent_or_a_link(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)
    app = with_http_spans(server.streamable_http_app(), otel.tracer_provider)
    async with http_server(app) as base, httpx.AsyncClient() as http:
        for meta in (modern_meta(), modern_meta(traceparent=TRACEPARENT)):
            response = await http.post(
                f"{base}/mcp", json=_modern_post("tools/list", meta), headers=MODERN_HEADERS
            )
            assert response.status_code == 200
    spans = sorted(otel.spans(), key=lambda s: s["start"])
    http_spans = [s for s in spans if s["name"] == "POST /mcp"]
    mcp_spans = [s for s in spans if s["name"] == "tools/list"]
    assert len(http_spans) == len(mcp_spans) == 2  # one transport span each, and it is not ours
    assert len(spans) == 4
    plain, propagated = mcp_spans
    assert plain["parent"] == http_spans[0]["span_id"]  # nothing in _meta: the HTTP span is the parent
    assert (propagated["parent_trace"], propagated["parent"]) == (CLIENT_TRACE, CLIENT_SPAN)
    assert propagated["links"] == [{"span_id": http_spans[1]["span_id"], "kind": "transport"}]


@pytest.mark.slow
async def test_hostile_trace_context_over_http_neither_breaks_a_call_nor_is_echoed(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)
    async with http_server(server.streamable_http_app()) as base, httpx.AsyncClient() as http:
        for hostile in HOSTILE_META:
            response = await http.post(
                f"{base}/mcp", json=_modern_post("tools/list", modern_meta(**hostile)), headers=MODERN_HEADERS
            )
            assert response.status_code == 200, hostile
            assert response.json()["result"]["tools"], hostile
            assert "HOSTILE" not in response.text
        for header in ("garbage HOSTILE", f"{TRACEPARENT}-HOSTILE" + "x" * 4000, "00-" + "z" * 51):
            response = await http.post(
                f"{base}/mcp",
                json=_modern_post("tools/list", modern_meta()),
                headers={**MODERN_HEADERS, "traceparent": header, "tracestate": "HOSTILE=" + "y" * 4000},
            )
            assert response.status_code == 200, header
            assert "HOSTILE" not in response.text
    spans = otel.spans()
    assert len(spans) == len(HOSTILE_META) + 3
    for span in spans:  # none took garbage for a parent, and none recorded it
        assert span["parent"] is None, span
        assert "HOSTILE" not in json.dumps(span)


@pytest.mark.slow
async def test_hostile_trace_context_over_stdio_neither_breaks_a_call_nor_is_echoed(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    peer = RawStdio(TRACED_DESK, env={"MCP_RESOLVE_TEST_SPANS": str(spans_file)})
    try:
        for hostile in HOSTILE_META:
            reply = peer.request("tools/list", {"_meta": modern_meta(**hostile)})
            assert reply["result"]["tools"], hostile
            assert "HOSTILE" not in json.dumps(reply)
        valid = peer.request("tools/list", {"_meta": modern_meta(traceparent=TRACEPARENT, tracestate="k=v")})
        assert "result" in valid
    finally:
        peer.close()
    spans = [json.loads(line) for line in spans_file.read_text().splitlines()]
    assert [s["parent"] for s in spans] == [None] * len(HOSTILE_META) + [CLIENT_SPAN]
    assert "HOSTILE" not in spans_file.read_text()


async def test_client_names_and_methods_never_become_span_names_or_metric_attributes(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)
    async with connect_in_memory(server) as pipe:
        for number, (method, params) in enumerate(
            [
                ("tools/call", {"name": "HOSTILE" * 5000, "_meta": modern_meta()}),
                ("prompts/get", {"name": "HOSTILE-prompt", "_meta": modern_meta()}),
                ("HOSTILE/method", {"_meta": modern_meta()}),
            ],
            start=1,
        ):
            await pipe.send({"jsonrpc": "2.0", "id": "HOSTILE-id" * 1000, "method": method, "params": params})
            reply = await pipe.receive()
            assert "error" in reply, number
        await pipe.send(
            {"jsonrpc": "2.0", "id": 10**30, "method": "tools/list", "params": {"_meta": modern_meta()}}
        )
        assert "result" in await pipe.receive()
    listed = [s for s in otel.spans() if s["name"] == "tools/list"]
    assert [s["attributes"]["jsonrpc.request.id"] for s in listed] == ["_OTHER"]
    failed = [s for s in otel.spans() if s["name"] != "tools/list"]
    assert sorted(s["name"] for s in failed) == ["_OTHER", "prompts/get", "tools/call"]
    for span in failed:
        for value in span["attributes"].values():
            assert len(str(value)) <= 256
        assert span["attributes"]["error.type"] == "-32602" or span["name"] == "_OTHER"
    for point in otel.points("mcp.server.operation.duration"):
        assert "HOSTILE" not in json.dumps(dict(point.attributes))


_STARTED: list[anyio.Event] = []


async def wait_forever() -> int:
    _STARTED[-1].set()
    await anyio.sleep_forever()
    return 0


async def stuck(value: Annotated[int, Resolve(wait_forever)]) -> int:
    return value


async def test_a_cancelled_request_ends_its_spans_as_cancelled(otel: Otel) -> None:
    server = desk()
    server.tool()(stuck)
    _STARTED.append(started := anyio.Event())
    otel.instrument(server)
    async with connect_in_memory(server) as pipe:
        await pipe.send(initialize_request({}))
        await pipe.receive()
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await pipe.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "stuck"}})
        await started.wait()
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
        await pipe.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        assert (await pipe.receive())["id"] == 6  # the cancelled request got no answer
    (call,) = calls(otel.spans(), "stuck")
    assert call["attributes"]["error.type"] == "cancelled"
    (waiting,) = children(otel.spans(), call)
    assert waiting["attributes"]["mcp_resolve.resolver.outcome"] == "cancelled"


# -- what is never recorded, and what an author may opt in to ----------------------------------


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_argument_values_answers_and_error_texts_are_not_recorded(otel: Otel, mode: str) -> None:
    server = desk()
    otel.instrument(server)

    async def typing_person(question: Any) -> dict[str, Any]:
        if question.message.startswith("Restock"):
            return {"action": "decline"}
        return {"action": "accept", "content": {"full": False, "sku": "SECRET-SKU"}}

    async with Client(server, mode=mode, elicitation_handler=typing_person) as client:
        refused = await client.call_tool(
            "refund_order", {"order_id": "ORD-SECRET", "reason": "SECRET-REASON"}
        )
        assert refused.is_error and "ORD-SECRET" in refused.content[0].text
        wrong_item = await client.call_tool("refund_order", REFUND)
        assert wrong_item.is_error and "SECRET-SKU" in wrong_item.content[0].text
    recorded = json.dumps(otel.spans())
    for secret in ("SECRET", "ORD-7002", "boots"):
        assert secret not in recorded
    failed = [s for s in otel.spans() if s["attributes"].get("mcp_resolve.resolver.outcome") == "error"]
    # refund_amount and ask_restock both check the typed SKU; whether ask_restock gets that far first
    # depends on the era's schedule, not on telemetry.
    assert {"load_order", "refund_amount"} <= {resolver(s) for s in failed}
    assert {resolver(s) for s in failed} <= {"load_order", "refund_amount", "ask_restock"}
    assert {s["attributes"]["error.type"] for s in failed} == {"ToolError"}
    assert {s["attributes"].get("error.type") for s in calls(otel.spans())} >= {"tool_error"}


async def test_an_author_opts_a_tool_in_to_recording_its_arguments(otel: Otel) -> None:
    server = desk()
    otel.instrument(server, record_arguments=["four_lookups", "refund_order"])
    async with Client(server, mode=MODERN, elicitation_handler=person) as client:
        await client.call_tool("refund_order", REFUND)
    for call in calls(otel.spans()):
        assert json.loads(call["attributes"]["gen_ai.tool.call.arguments"]) == REFUND


# -- metrics ---------------------------------------------------------------------------------------


async def test_metrics_for_requests_resolvers_rounds_and_questions(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)

    async def declining(question: Any) -> dict[str, Any]:
        if question.message.startswith("Restock"):
            return {"action": "decline"}
        return {"action": "accept", "content": {"full": True}}

    async with Client(server, mode=MODERN, elicitation_handler=declining) as client:
        await client.call_tool("refund_order", REFUND)  # scope asked, restock asked and declined: 3 rounds
        await client.call_tool("refund_order", {"order_id": "ORD-7001", "reason": "ebook"})  # no question: 1
        await client.call_tool("four_lookups", {})  # 1 round
    rounds = {p.attributes["gen_ai.tool.name"]: p for p in otel.points("mcp_resolve.call.rounds")}
    assert dict(rounds["refund_order"].attributes) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "refund_order",
    }
    assert (rounds["refund_order"].count, rounds["refund_order"].sum) == (2, 4)
    assert (rounds["four_lookups"].count, rounds["four_lookups"].sum) == (1, 1)
    questions = {
        (p.attributes["mcp_resolve.question.kind"], p.attributes["mcp_resolve.question.outcome"]): p.value
        for p in otel.points("mcp_resolve.questions")
    }
    assert questions == {
        ("elicitation", "pending"): 2,
        ("elicitation", "accept"): 1,
        ("elicitation", "decline"): 1,
    }
    durations = {
        (p.attributes["mcp.method.name"], p.attributes.get("gen_ai.tool.name")): p.count
        for p in otel.points("mcp.server.operation.duration")
    }
    assert durations[("tools/call", "refund_order")] == 4
    assert durations[("server/discover", None)] == 1
    resolvers = {
        (
            p.attributes["mcp_resolve.resolver.name"].rsplit(":", 1)[-1],
            p.attributes["mcp_resolve.resolver.outcome"],
        )
        for p in otel.points("mcp_resolve.resolver.duration")
    }
    assert {("refund_scope", "pending"), ("refund_scope", "ok"), ("ask_restock", "pending")} <= resolvers
    assert {("lookup_a", "ok"), ("lookup_d", "ok")} <= resolvers


async def test_active_sessions_counts_open_handshake_sessions(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)

    def active() -> int:
        (point,) = otel.points("mcp_resolve.server.active_sessions")
        return int(point.value)

    async with Client(server, mode=LEGACY) as first, Client(server, mode=LEGACY) as second:
        await first.list_tools()
        await second.list_tools()
        assert active() == 2
        async with Client(server, mode=MODERN) as stateless:  # 2026-07-28 opens no session
            await stateless.list_tools()
            assert active() == 2
    gc.collect()
    assert active() == 0


async def test_replay_store_and_tampering_rejections_are_counted(otel: Otel) -> None:
    server = desk()
    otel.instrument(server)
    meta = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}})

    async with connect_in_memory(server) as pipe:

        async def call(params: dict[str, Any]) -> dict[str, Any]:
            await pipe.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
            return await pipe.receive()

        base = {"name": "refund_order", "arguments": REFUND, "_meta": meta}
        first = (await call(base))["result"]
        (scope_key,) = first["inputRequests"]
        second = {**base, "requestState": first["requestState"]}
        second["inputResponses"] = {scope_key: {"action": "accept", "content": {"full": True}}}
        asked = (await call(second))["result"]
        (restock_key,) = asked["inputRequests"]
        final = {**base, "requestState": asked["requestState"]}
        final["inputResponses"] = {restock_key: {"action": "decline"}}
        assert (await call(final))["result"]["isError"] is False  # declined restock: refunded anyway
        assert (await call(final))["error"]["code"] == -32602  # the same final round again: replayed
        tampered = {**final, "requestState": first["requestState"][:-2] + "AA"}
        assert (await call(tampered))["error"]["code"] == -32602
    rejections = {
        p.attributes["mcp_resolve.rejection.reason"]: p.value
        for p in otel.points("mcp_resolve.request_state.rejections")
    }
    assert rejections == {"replayed": 1, "invalid": 1}


# -- the sealed carry, and the cost of not tracing ----------------------------------------------


def test_the_carry_rides_sealed_and_bounded() -> None:
    security = RequestStateSecurity.ephemeral()
    binding = StateBinding("tools/call", "t", "a", "aud")
    token = security.seal(b"payload", binding, carry="abc/2")
    assert security.unseal(token, binding).carried == "abc/2"
    assert security.unseal(security.seal(b"payload", binding), binding).carried is None
    with pytest.raises(ValueError):
        security.seal(b"payload", binding, carry="x" * (MAX_CARRY_CHARS + 1))


async def test_a_state_sealed_before_instrumenting_still_serves_its_round(otel: Otel) -> None:
    """A state sealed by an uninstrumented server (a worker without telemetry) still serves its round."""
    server = desk()

    async def instrumenting_person(question: Any) -> dict[str, Any]:
        if (
            server.telemetry is None or not server.telemetry.active
        ):  # first round unobserved, the next observed
            otel.instrument(server)
        return await person(question)

    async with Client(server, mode=MODERN, elicitation_handler=instrumenting_person) as client:
        result = await client.call_tool("refund_order", REFUND)
    assert not result.is_error
    story = calls(otel.spans())
    assert len(story) == 2
    assert "mcp_resolve.round" not in story[0]["attributes"]  # which round, nobody sealed
    assert not otel.points("mcp_resolve.call.rounds")
    uninstrument(server)
    assert server.telemetry is None


def test_the_resolver_engine_never_imports_telemetry() -> None:
    for path in sorted((ROOT / "src" / "mcp_resolve" / "resolve").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                )
                names += [a.name for a in node.names]
                assert not any("telemetry" in n or "opentelemetry" in n for n in names), path


SERVE_A_CALL = """
import anyio
from typing import Annotated
from pydantic import BaseModel
from mcp_resolve import Client, Elicit, MCPServer, Resolve

mcp = MCPServer("plain")

class Ok(BaseModel):
    ok: bool

async def confirm(n: int) -> Elicit[Ok]:
    return Elicit(f"ok {n}?", Ok)

@mcp.tool(task_support="optional")
async def act(n: int, confirmed: Annotated[Ok, Resolve(confirm)]) -> int:
    return n if confirmed.ok else 0

async def yes(question):
    return {"action": "accept", "content": {"ok": True}}

async def main():
    for mode in ("2026-07-28", "legacy"):
        async with Client(mcp, mode=mode, elicitation_handler=yes) as client:
            assert (await client.call_tool("act", {"n": 3})).structured_content == {"result": 3}
    async with Client(mcp, mode="2026-07-28", elicitation_handler=yes) as client:  # a task's rounds too
        handle = await client.call_tool_task("act", {"n": 4})
        assert (await handle.result()).structured_content == {"result": 4}

anyio.run(main)
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def _run_env(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **env}
    return subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=environment
    )


HIDE_OPENTELEMETRY = """
import sys

tried = []


class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            tried.append(name)
            raise ImportError(f"{name} is hidden by this test")
        return None


sys.meta_path.insert(0, NoOpenTelemetry())
"""

NOTHING_TRIED = """
assert tried == [], tried
assert not [m for m in sys.modules if m.startswith("opentelemetry")]
try:
    import mcp_resolve.telemetry
except ImportError as exc:
    assert "pip install 'mcp-resolve[otel]'" in str(exc), exc
else:
    raise AssertionError("mcp_resolve.telemetry imported without OpenTelemetry")
print("clean")
"""


@pytest.mark.slow
def test_without_opentelemetry_nothing_tries_to_import_it() -> None:
    done = _run(HIDE_OPENTELEMETRY + SERVE_A_CALL + NOTHING_TRIED)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


@pytest.mark.slow
def test_without_opentelemetry_in_sys_modules_a_server_still_serves() -> None:
    """Absent as a `sys.modules` blocker makes it (what an uninstalled package looks like to find_spec)."""
    done = _run(
        'import sys\nsys.modules["opentelemetry"] = None\n'
        + SERVE_A_CALL
        + """
assert mcp.telemetry is not None and mcp.telemetry.active is False  # on by default, and idle
assert "mcp_resolve.telemetry" not in sys.modules
assert [m for m in sys.modules if m.startswith("opentelemetry")] == ["opentelemetry"]  # the blocker
print("clean")
"""
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


@pytest.mark.slow
@pytest.mark.parametrize("switch", ["on by default", "argument", "setting"])
def test_installed_but_not_configured_or_turned_off_loads_nothing(switch: str) -> None:
    """On by default, a server imports nothing of OpenTelemetry until the process does (to configure it)."""
    code = (
        SERVE_A_CALL.replace('MCPServer("plain")', 'MCPServer("plain", telemetry=False)')
        if switch == "argument"
        else SERVE_A_CALL
    )
    done = _run_env(
        {"MCP_RESOLVE_TELEMETRY": "false"} if switch == "setting" else {},
        code
        + f"""
import sys
assert (mcp.telemetry is None) is {switch != "on by default"}
assert "mcp_resolve.telemetry" not in sys.modules
assert not [m for m in sys.modules if m.startswith("opentelemetry")]
import importlib.util
assert importlib.util.find_spec("opentelemetry.trace") is not None  # it is there, just not used
print("clean")
""",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"
