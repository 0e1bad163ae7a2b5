"""The refund desk over stdio, instrumented, writing each finished span to a JSON-lines file.

The span file is `MCP_RESOLVE_TEST_SPANS`. Spans are written as they end
(SimpleSpanProcessor), and a request's span ends before its answer is
written to stdout, so a client holding an answer finds its spans on disk.
`add_four_lookups` gives a server a tool with four independent 50 ms
resolvers; tests/telemetry/test_telemetry.py uses it and `span_record` in process too.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from mcp_resolve import MCPServer, Resolve


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """A span as the tests read it: ids in hex, attributes and links as plain JSON."""
    assert span.context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "parent": None if span.parent is None else f"{span.parent.span_id:016x}",
        "parent_trace": None if span.parent is None else f"{span.parent.trace_id:032x}",
        "start": span.start_time,
        "end": span.end_time,
        "attributes": dict(span.attributes or {}),
        "links": [
            {
                "span_id": f"{link.context.span_id:016x}",
                "kind": (link.attributes or {}).get("mcp_resolve.link.kind"),
            }
            for link in span.links
        ],
    }


class FileExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(span_record(span)) + "\n")
        return SpanExportResult.SUCCESS


async def lookup_a() -> int:
    await asyncio.sleep(0.05)
    return 1


async def lookup_b() -> int:
    await asyncio.sleep(0.05)
    return 2


async def lookup_c() -> int:
    await asyncio.sleep(0.05)
    return 3


async def lookup_d() -> int:
    await asyncio.sleep(0.05)
    return 4


async def four_lookups(
    a: Annotated[int, Resolve(lookup_a)],
    b: Annotated[int, Resolve(lookup_b)],
    c: Annotated[int, Resolve(lookup_c)],
    d: Annotated[int, Resolve(lookup_d)],
) -> int:
    """Four independent resolvers: they run at once."""
    return a + b + c + d


def add_four_lookups(mcp: MCPServer) -> None:
    mcp.tool()(four_lookups)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "refund_desk"))
    import server as desk  # the example, from its folder

    from mcp_resolve.telemetry import instrument

    add_four_lookups(desk.mcp)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(os.environ["MCP_RESOLVE_TEST_SPANS"])))
    instrument(desk.mcp, tracer_provider=provider)
    desk.mcp.run()
