"""What a question said, on its span: only when the author opts in (`instrument(record_questions=True)`).

The wording of an `Elicit` message or a `Sample` prompt is the server's, but it
often quotes what the call is about (an order, a name, an amount), so it is off
by default. Read with the OpenTelemetry SDK's in-memory exporter, on both eras.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from mcp_types import CreateMessageResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conftest import REFUND_DESK, load_module
from mcp_resolve import Client, MCPServer, Resolve, Sample
from mcp_resolve.telemetry import instrument
from mcp_resolve.telemetry.attributes import MAX_QUESTION_TEXT, question_text

pytestmark = pytest.mark.anyio

TEXT = "mcp_resolve.question.text"
REFUND = {"order_id": "ORD-7002", "reason": "too small"}
SCOPE_QUESTION = "Order ORD-7002 has several items (trail-boots, wool-socks). Refund the whole order?"
RESTOCK_QUESTION = "Restock trail-boots, wool-socks?"


def traced(server: MCPServer, **options: Any) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(server, tracer_provider=provider, **options)
    return exporter


def questions(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    spans = exporter.get_finished_spans()
    return sorted(
        (s for s in spans if (s.attributes or {}).get("mcp_resolve.question.kind")),
        key=lambda s: s.start_time or 0,
    )


async def person(question: Any) -> dict[str, Any]:
    if question.message.startswith("Restock"):
        return {"action": "accept", "content": {"restock": True}}
    return {"action": "accept", "content": {"full": True}}


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_the_refund_desks_questions_are_on_their_spans_when_asked_for(mode: str) -> None:
    server: MCPServer = load_module(REFUND_DESK).mcp
    exporter = traced(server, record_questions=True)
    async with Client(server, mode=mode, elicitation_handler=person) as client:
        result = await client.call_tool("refund_order", REFUND)
    assert result.structured_content == {**REFUND, "cents": 4800, "restocked": True}
    asked = [(s.attributes or {}).get(TEXT) for s in questions(exporter)]
    if mode == "legacy":  # one request: each question asked once, mid-call
        assert asked == [SCOPE_QUESTION, RESTOCK_QUESTION]
    else:  # rounds: each question going out (pending), then its answer coming back
        assert asked == [SCOPE_QUESTION, SCOPE_QUESTION, RESTOCK_QUESTION, RESTOCK_QUESTION]


async def test_by_default_no_question_text_is_recorded() -> None:
    server: MCPServer = load_module(REFUND_DESK).mcp
    exporter = traced(server)
    async with Client(server, mode="2026-07-28", elicitation_handler=person) as client:
        await client.call_tool("refund_order", REFUND)
    asked = questions(exporter)
    assert len(asked) == 4
    assert all(TEXT not in (s.attributes or {}) for s in asked)
    assert not any("ORD-7002" in str(value) for s in asked for value in (s.attributes or {}).values())


async def headline(topic: str) -> Sample:
    return Sample(f"Write a one-line headline about {topic}.", system_prompt="You write headlines.")


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_sampling_prompt_is_recorded_with_its_system_prompt(mode: str) -> None:
    server = MCPServer("notes")

    @server.tool()
    async def summarize(topic: str, sampled: Annotated[CreateMessageResult, Resolve(headline)]) -> str:
        return sampled.content.text  # type: ignore[union-attr]

    async def model(params: Any) -> dict[str, Any]:
        return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Refunds made simple"}}

    exporter = traced(server, record_questions=True)
    async with Client(server, mode=mode, sampling_handler=model) as client:
        result = await client.call_tool("summarize", {"topic": "refunds"})
    assert result.content[0].text == "Refunds made simple"  # type: ignore[union-attr]
    texts = {(s.attributes or {}).get(TEXT) for s in questions(exporter)}
    assert texts == {"You write headlines.\nWrite a one-line headline about refunds."}


def test_question_text_is_bounded_and_only_for_what_has_words() -> None:
    long = {"method": "elicitation/create", "params": {"message": "x" * 10_000}}
    assert len(question_text(long) or "") == MAX_QUESTION_TEXT
    assert question_text({"method": "roots/list", "params": {}}) is None
    assert question_text({"method": "elicitation/create", "params": {"message": 7}}) is None
    assert question_text({"method": "elicitation/create"}) is None
    blocks = {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}]
        },
    }
    assert question_text(blocks) == "a"
