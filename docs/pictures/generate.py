"""The pictures in docs/, drawn by Graphviz from the code so they stay true.

Each picture is a DOT source made here from the code (`NAME.dot`) and the SVG
that Graphviz's `dot` draws from it (`NAME.svg`), both committed:

* `refund-desk-graph`: the refund desk's resolver graph, as
  `mcp-resolve graph examples/refund_desk/server.py --format dot` prints it;
* `refund-trace`: the spans of a real refund at that desk on 2026-07-28
  (three rounds), recorded by the OpenTelemetry SDK's in-memory exporter;
* `task-states`: a task's states, read from `TaskRecord.status`, and what
  moves a task from one to the next;
* `fleet`: nginx, the workers and Redis, read from docs/deploy/ (the nginx
  config and the compose file a fleet is deployed with).

Run `make pictures` (or `python docs/pictures/generate.py`; it needs `dot`,
Debian's `graphviz`) after changing any of those, and commit what changed.
tests/docs/test_docs_pictures.py makes the DOT sources again and fails when a
committed one differs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args, get_type_hints

PICTURES = Path(__file__).resolve().parent
ROOT = PICTURES.parent.parent
REFUND_DESK = ROOT / "examples" / "refund_desk" / "server.py"
DEPLOY = ROOT / "docs" / "deploy"
FONT = 'fontname="Helvetica"'


def _quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, each newline a centred line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _head(name: str, rankdir: str) -> list[str]:
    return [
        f"digraph {name} {{",
        f"  rankdir={rankdir};",
        f"  graph [{FONT}, fontsize=12];",
        f"  node [{FONT}, fontsize=11, shape=box, style=rounded];",
        f"  edge [{FONT}, fontsize=9];",
    ]


# -- the refund desk's resolver graph --------------------------------------------------------------
def refund_desk_graph() -> str:
    from mcp_resolve.cli import graph_dot, load_server

    return graph_dot(load_server(str(REFUND_DESK)).components())


# -- a task's states -------------------------------------------------------------------------------
TASK_MOVES = [
    ("created", "working", "tools/call\nas a task"),
    ("working", "input_required", "a round asks"),
    ("input_required", "working", "tasks/update answers\nthe last question"),
    ("working", "completed", "the round returns a result\n(an error result too)"),
    ("working", "failed", "an MCP error, a crash,\nor its worker is gone"),
    ("working", "cancelled", "tasks/cancel"),
    ("input_required", "cancelled", "tasks/cancel"),
]
"""What moves a task: the tasks extension's methods and the runner (tasks/methods.py, tasks/runner.py)."""


def task_states() -> str:
    from mcp_resolve.tasks import TaskRecord

    states = get_args(get_type_hints(TaskRecord)["status"])
    terminal = {state for state in states if not TaskRecord.live.fget(SimpleNamespace(status=state))}  # type: ignore[attr-defined]
    moved = {state for move in TASK_MOVES for state in move[:2]} - {"created"}
    if moved != set(states):
        raise SystemExit(f"TASK_MOVES names {sorted(moved)}, TaskRecord.status has {sorted(states)}")
    if any(source in terminal for source, _target, _label in TASK_MOVES):
        raise SystemExit("a terminal status has a move out of it")
    out = _head("task_states", "LR")
    out.append('  created [label="", shape=circle, style=filled, fillcolor=black, width=0.2];')
    for state in states:
        shape = ", peripheries=2" if state in terminal else ""
        out.append(f"  {state} [label={_quote(state)}{shape}];")
    out.extend(f"  {source} -> {target} [label={_quote(label)}];" for source, target, label in TASK_MOVES)
    out.append("  { rank=same; " + " ".join(sorted(terminal)) + "; }")
    out.append("}")
    return "\n".join(out) + "\n"


# -- the fleet -------------------------------------------------------------------------------------
def fleet() -> str:
    nginx = (DEPLOY / "nginx.conf").read_text()
    compose = (DEPLOY / "compose.yaml").read_text()
    upstream = re.search(r"upstream\s+\w+\s*\{(.*?)\}", nginx, re.DOTALL)
    listen = re.search(r"^\s*listen\s+(?:\S*:)?(\d+)\b", nginx, re.MULTILINE)
    redis = re.search(r"MCP_RESOLVE_REDIS_URL:\s*redis://([\w.-]+):(\d+)", compose)
    if upstream is None or listen is None or redis is None:
        raise SystemExit("docs/deploy/: no upstream, listen port or MCP_RESOLVE_REDIS_URL found")
    workers = re.findall(r"^\s*server\s+([\w.-]+:\d+)", upstream.group(1), re.MULTILINE)
    out = _head("fleet", "LR")
    out.append('  clients [label="MCP clients\\n(either era)", shape=ellipse, style=""];')
    front = f"nginx :{listen.group(1)}\nround-robin, SSE unbuffered"
    out.append(f"  nginx [label={_quote(front)}];")
    out.append("  subgraph cluster_workers {")
    out.append('    label="mcp-resolve workers\\n(the same MCP_RESOLVE_STATE_KEYS)"; style=dashed;')
    for index, worker in enumerate(workers):
        out.append(f"    w{index} [label={_quote(worker)}];")
    out.append("  }")
    shared = f"Redis {redis.group(1)}:{redis.group(2)}\nsessions, single-use claims,\ntask records, stream events,\nsubscriptions"
    out.append(f'  redis [label={_quote(shared)}, shape=cylinder, style=""];')
    out.append('  clients -> nginx [label="HTTP /mcp"];')
    for index in range(len(workers)):
        out.append(f"  nginx -> w{index};")
        out.append(f"  w{index} -> redis;")
    out.append("}")
    return "\n".join(out) + "\n"


# -- a refund's trace ------------------------------------------------------------------------------
NOTES = {
    "mcp_resolve.round": "round",
    "mcp_resolve.result_type": "result",
    "mcp_resolve.resolver.outcome": "",
    "mcp_resolve.question.outcome": "",
}


def _recorded_refund() -> list[Any]:
    """The finished spans of one two-item refund at the desk, on 2026-07-28, over the in-memory transport."""
    import anyio
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcp_resolve import Client
    from mcp_resolve.cli import load_server
    from mcp_resolve.telemetry import instrument

    server = load_server(str(REFUND_DESK))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(server, tracer_provider=provider, record_questions=True)

    async def person(question: Any) -> dict[str, Any]:
        if question.message.startswith("Restock"):
            return {"action": "accept", "content": {"restock": True}}
        return {"action": "accept", "content": {"full": True}}

    async def refund() -> None:
        async with Client(server, mode="2026-07-28", elicitation_handler=person) as client:
            result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "too small"})
        if result.is_error:
            raise SystemExit(f"the refund failed: {result.content}")

    anyio.run(refund)
    return list(exporter.get_finished_spans())


def _order(server_path: Path) -> dict[str, int]:
    """Each resolver's place in the graph's order, by the name its span records."""
    from mcp_resolve.cli import load_server

    order: dict[str, int] = {}
    for component in load_server(str(server_path)).components():
        for plan in component.signature.plans().values():
            order[plan.name.rpartition(":")[2]] = plan.order
    return order


def trace_dot(spans: Iterable[Any], order: dict[str, int]) -> str:
    """Each tools/call span a box (one per round) with its resolvers and questions under it; links dashed."""
    spans = sorted(spans, key=lambda span: span.start_time)
    rounds = [span for span in spans if span.name.startswith("tools/call ")]

    def children(parent: Any) -> list[Any]:
        found = [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
        return sorted(found, key=lambda s: order.get(s.name.rpartition(":")[2], -1))

    out = _head("trace", "LR")
    ids: dict[int, str] = {}

    def label(span: Any) -> str:
        name = re.sub(r"^resolve [\w.]+:", "resolve ", span.name)
        attributes = span.attributes or {}
        notes = [
            f"{short}={attributes[key]}" if short else str(attributes[key])
            for key, short in NOTES.items()
            if key in attributes
        ]
        text = attributes.get("mcp_resolve.question.text")
        if isinstance(text, str):
            notes.append(textwrap.fill(json.dumps(text), 40))
        return "\n".join([name, *notes])

    def draw(span: Any, depth: int, lines: list[str]) -> None:
        node = ids[span.context.span_id] = f"s{len(ids)}"
        question = "mcp_resolve.question.kind" in (span.attributes or {})
        shape = ', shape=note, style=""' if question else (', style="rounded,bold"' if depth == 0 else "")
        lines.append(f"    {node} [label={_quote(label(span))}{shape}];")
        for child in children(span):
            draw(child, depth + 1, lines)
            lines.append(f"    {node} -> {ids[child.context.span_id]};")

    # Left to right, Graphviz stacks what comes first at the bottom: write it all in reverse, so the
    # first round and each span's first child read from the top.
    clusters = []
    for index, span in enumerate(rounds):
        lines: list[str] = []
        draw(span, 0, lines)
        head = [
            f"  subgraph cluster_round{index} {{",
            f"    label={_quote(f'request {index + 1}')}; style=dashed;",
        ]
        clusters.append([*head, *reversed(lines), "  }"])
    for cluster in reversed(clusters):
        out.extend(cluster)
    for span in rounds:
        for link in span.links:
            if link.context.span_id in ids:
                source, target = ids[span.context.span_id], ids[link.context.span_id]
                out.append(f'  {source} -> {target} [style=dashed, constraint=false, label="link"];')
    out.append("}")
    return "\n".join(out) + "\n"


def refund_trace() -> str:
    return trace_dot(_recorded_refund(), _order(REFUND_DESK))


# -- all of them -----------------------------------------------------------------------------------
SOURCES: dict[str, Callable[[], str]] = {
    "refund-desk-graph": refund_desk_graph,
    "refund-trace": refund_trace,
    "task-states": task_states,
    "fleet": fleet,
}


def sources() -> dict[str, str]:
    """Every picture's DOT source, made from the code now."""
    return {name: make() for name, make in SOURCES.items()}


def main() -> int:
    for name, dot in sources().items():
        source = PICTURES / f"{name}.dot"
        source.write_text(dot)
        subprocess.run(["dot", "-Tsvg", "-o", str(PICTURES / f"{name}.svg"), str(source)], check=True)
        print(f"docs/pictures/{name}.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
