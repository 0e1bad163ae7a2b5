"""A process that configures OpenTelemetry globally, as a service would, and serves with no `instrument()` call.

Run by tests/telemetry/test_telemetry_default.py in a child process, since a
global provider can be set only once per process (and the official SDK,
loaded by other tests, would trace through it). The server is built before
the SDK is configured, as a module-level `mcp = MCPServer(...)` is. It serves
one call on each era in memory, then one over HTTP (uvicorn on loopback,
the session ended by the client's DELETE), and prints what the SDK's
in-memory exporter and reader got, as JSON. `MCP_RESOLVE_TEST_TELEMETRY=off`
builds it with `telemetry=False`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for http_helpers
from http_helpers import http_server
from mcp_resolve import Client, MCPServer

mcp = (
    MCPServer("plain", telemetry=False)
    if os.environ.get("MCP_RESOLVE_TEST_TELEMETRY") == "off"
    else MCPServer("plain")
)


@mcp.tool()
def add(a: int, b: int) -> int:
    return a + b


exporter = InMemorySpanExporter()
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(tracer_provider)
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))


async def main() -> None:
    for mode in ("2026-07-28", "legacy"):
        async with Client(mcp, mode=mode) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
    async with http_server(mcp.streamable_http_app()) as base, Client(f"{base}/mcp", mode="legacy") as client:
        assert (await client.call_tool("add", {"a": 2, "b": 2})).structured_content == {"result": 4}


def spans() -> list[dict[str, Any]]:
    return [
        {
            "name": span.name,
            "kind": span.kind.name,
            "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
            "trace_id": f"{span.context.trace_id:032x}",
            "span_id": f"{span.context.span_id:016x}",
            "parent": None if span.parent is None else f"{span.parent.span_id:016x}",
            "attributes": dict(span.attributes or {}),
        }
        for span in exporter.get_finished_spans()
        if span.context is not None
    ]


def points() -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(
                    {"count": getattr(point, "count", None), "attributes": dict(point.attributes or {})}
                    for point in metric.data.data_points
                )
    return found


anyio.run(main)
print(json.dumps({"spans": spans(), "points": points()}))
