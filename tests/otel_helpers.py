"""An OpenTelemetry SDK tracer and meter provider of a test's own, read in memory.

Nothing here sets the global tracer provider: the official SDK, loaded by other
tests in the same process, traces through the global one, and its spans are not
ours. Spans are read as `span_record` (tests/servers/traced_desk.py) writes them.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_resolve import MCPServer
from mcp_resolve.telemetry import instrument
from servers.traced_desk import span_record


class Otel:
    """An SDK tracer provider and meter provider of the test's own, read in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def instrument(self, server: MCPServer, **options: Any) -> None:
        instrument(
            server, tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options
        )

    def spans(self) -> list[dict[str, Any]]:
        return [span_record(span) for span in self.exporter.get_finished_spans()]

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found
