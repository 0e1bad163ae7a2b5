"""The W1 server of `servers/ours.py` in a process that configured the OpenTelemetry SDK: every request traced.

As a service that traces would run it: a global `TracerProvider` whose spans
go through a `BatchSpanProcessor` to an exporter that drops them (no
collector to wait on), and a global `MeterProvider` with a reader that is
never collected. No `instrument()` call: the server's default telemetry picks
the providers up. The tracing row of `make bench` (README.md, "Tracing").

Run `python -m benchmarks.servers.ours_sdk http PORT`.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ._common import serve_from_argv
from .ours import mcp


class Dropped(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(Dropped()))
trace.set_tracer_provider(tracer_provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
assert mcp.telemetry is not None and mcp.telemetry.active

if __name__ == "__main__":
    serve_from_argv(mcp.run, mcp.streamable_http_app)
