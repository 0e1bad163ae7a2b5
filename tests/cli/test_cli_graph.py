"""`mcp-resolve graph` drawn for people: SVG through Graphviz's real `dot`, Mermaid read back by Mermaid itself,
and every format marking what a resolver asks, what is carried, what cleans up and what the model sends."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conftest import PYTHON, REFUND_DESK
from node_helpers import NODE_BIN, NODE_DIR

SVG = "{http://www.w3.org/2000/svg}"

EVERY_MARK = """
    from collections.abc import Iterator
    from typing import Annotated
    from pydantic import BaseModel
    from mcp_types import CreateMessageResult, ListRootsResult
    from mcp_resolve import Context, Elicit, ElicitationResult, ListRoots, MCPServer, Resolve, Sample

    mcp = MCPServer("Marks")

    class Ok(BaseModel):
        ok: bool

    class Price(BaseModel):
        cents: int

    async def pick_root(ctx: Context) -> ListRootsResult | ListRoots:
        return ListRoots()

    def summary(topic: str) -> CreateMessageResult | Sample:
        return Sample(f"Summarise {topic}", max_tokens=50)

    def confirm(topic: str) -> Ok | Elicit[Ok]:
        return Elicit("Go?", Ok)

    def price(topic: str) -> Price:
        return Price(cents=len(topic))

    def connection() -> Iterator[str]:
        yield "conn"
        # closed here, once the body is done

    @mcp.tool()
    async def brief(
        topic: str,
        words: int,
        roots: Annotated[ListRootsResult, Resolve(pick_root)],
        text: Annotated[CreateMessageResult, Resolve(summary)],
        ok: Annotated[Ok, Resolve(confirm)],
        cost: Annotated[Price, Resolve(price, carry=True)],
        db: Annotated[str, Resolve(connection)],
    ) -> str:
        return topic
"""


def marks_server(tmp_path: Path) -> Path:
    path = tmp_path / "marks.py"
    path.write_text(textwrap.dedent(EVERY_MARK))
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "mcp_resolve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_every_format_marks_questions_by_kind_carried_and_cleanup_resolvers(tmp_path: Path) -> None:
    from mcp_resolve.cli import graph_dot, graph_mermaid, graph_text, load_server

    (tool,) = [c for c in load_server(str(marks_server(tmp_path))).components() if c.name == "brief"]
    text = graph_text([tool])
    resolvers = {
        line.split("(")[0].strip(): line
        for line in text.splitlines()
        if line.startswith("    ") and "->" not in line
    }
    assert resolvers["pick_root"].endswith("asks for the client's roots: ListRoots")
    assert resolvers["summary"].endswith("samples the client's LLM: Sample")
    assert resolvers["confirm"].endswith("asks the person: Elicit[Ok]")
    assert resolvers["price"].endswith("carried across rounds as Price")
    assert resolvers["connection"].endswith("cleans up after the body")

    dot = graph_dot([tool])
    node = {line.split(" [")[0].strip(): line for line in dot.splitlines() if line.strip().startswith("c0_r")}
    by_name = {line.split('label="')[1].split("\\n")[0].split('"')[0]: line for line in node.values()}
    assert 'shape=hexagon, fillcolor="#d5e8d4", style="filled"' in by_name["pick_root"]
    assert 'shape=hexagon, fillcolor="#dae8fc", style="filled"' in by_name["summary"]
    assert 'shape=hexagon, fillcolor="#fff2cc", style="filled"' in by_name["confirm"]
    assert 'style="rounded,bold"' in by_name["price"] and "carried across rounds as Price" in by_name["price"]
    assert (
        'style="rounded,dashed"' in by_name["connection"]
        and "cleans up after the body" in by_name["connection"]
    )
    arguments = dot.split("subgraph cluster_c0_args {")[1].split("}")[0]
    assert 'label="model-facing arguments"' in arguments
    assert [line.split(" [")[0].strip() for line in arguments.splitlines() if "shape=ellipse" in line] == [
        "c0_a_topic",
        "c0_a_words",
    ]
    assert 'c0_a_words -> c0_body [label="words"];' in dot  # an argument only the body reads is drawn too

    mermaid = graph_mermaid([tool])
    assert '    subgraph c0_args ["model-facing arguments"]' in mermaid
    for kind in ("elicit", "sample", "roots", "carried", "cleanup"):
        assert f"  classDef {kind} " in mermaid


@pytest.mark.slow
def test_graph_svg_is_drawn_by_graphviz_with_every_label(tmp_path: Path) -> None:
    done = cli("graph", str(REFUND_DESK), "--tool", "refund_order", "--format", "svg")
    assert done.returncode == 0, done.stderr
    root = ET.fromstring(done.stdout)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    nodes: dict[str, Any] = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "node":
            title = group.find(f"{SVG}title")
            assert title is not None
            nodes[str(title.text)] = group
    assert set(nodes) == {
        "c0_a_order_id",
        "c0_a_reason",
        "c0_body",
        "c0_ctx",
        *(f"c0_r{index}" for index in range(5)),
    }

    def label(node: str) -> list[str]:
        return [str(t.text) for t in nodes[node].iter(f"{SVG}text")]

    assert label("c0_r2") == ["refund_scope", "asks the person: Elicit[Scope]"]
    assert label("c0_r4") == ["ask_restock", "asks the person: Elicit[Restock]"]
    assert label("c0_r3") == ["refund_amount"] and label("c0_body") == ["refund_order"]
    assert label("c0_a_order_id") == ["order_id"] and label("c0_ctx") == ["Context"]
    (hexagon,) = nodes["c0_r2"].iter(f"{SVG}polygon")
    assert hexagon.get("fill") == "#fff2cc"  # a question of the person, filled as such
    clusters = {
        str(t.text) for g in root.iter(f"{SVG}g") if g.get("class") == "cluster" for t in g.iter(f"{SVG}text")
    }
    assert clusters == {"tool refund_order", "model-facing arguments"}
    edges = [str(g.find(f"{SVG}title").text) for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]  # type: ignore[union-attr]
    assert len(edges) == 12 and "c0_a_reason->c0_body" in edges


@pytest.mark.slow
def test_graph_svg_without_graphviz_says_what_to_install(tmp_path: Path) -> None:
    done = cli("graph", str(REFUND_DESK), "--format", "svg", env={"PATH": str(tmp_path)})
    assert done.returncode == 1 and done.stdout == ""
    assert "dot is not on PATH" in done.stderr and "apt install graphviz" in done.stderr
    assert "--format dot" in done.stderr


@pytest.mark.slow
def test_mermaid_itself_parses_the_refund_desk_graph(node_env: dict[str, str]) -> None:
    """tests/node/mermaid_parse.mjs runs Mermaid's own parser on the output; what it read is what we drew."""
    drawn = cli("graph", str(REFUND_DESK), "--format", "mermaid")
    assert drawn.returncode == 0, drawn.stderr
    parsed = subprocess.run(
        [str(NODE_BIN / "node"), "mermaid_parse.mjs"],
        input=drawn.stdout,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=NODE_DIR,
        env=node_env,
    )
    assert parsed.returncode == 0, parsed.stderr
    graph = json.loads(parsed.stdout)
    assert graph["diagramType"] == "flowchart-v2"
    vertices = {v["id"]: v for v in graph["vertices"]}
    assert vertices["c0_r2"]["type"] == "hexagon" and vertices["c0_r2"]["classes"] == ["elicit"]
    assert vertices["c0_r2"]["text"] == "refund_scope<br>asks the person: Elicit[Scope]"
    assert vertices["c0_r1"]["type"] == "square" and vertices["c0_r1"]["text"] == "load_order"
    assert vertices["c0_body"]["type"] == "subroutine" and vertices["c0_a_reason"]["type"] == "stadium"
    subgraphs = {s["title"]: s for s in graph["subgraphs"]}
    assert {"tool refund_order", "tool receipt_lines", "tool restock", "model-facing arguments"} <= set(
        subgraphs
    )
    arguments = next(s for s in graph["subgraphs"] if s["id"] == "c0_args")
    assert sorted(arguments["nodes"]) == ["c0_a_order_id", "c0_a_reason"]
    refund_edges = {(e["start"], e["end"], e["text"]) for e in graph["edges"] if e["start"].startswith("c0_")}
    assert refund_edges == {
        ("c0_ctx", "c0_r0", "ctx"),
        ("c0_a_order_id", "c0_r1", "order_id"),
        ("c0_r0", "c0_r1", "customer"),
        ("c0_r1", "c0_r2", "order"),
        ("c0_r1", "c0_r3", "order"),
        ("c0_r2", "c0_r3", "scope"),
        ("c0_r1", "c0_r4", "order"),
        ("c0_r2", "c0_r4", "scope"),
        ("c0_r3", "c0_body", "cents"),
        ("c0_r4", "c0_body", "restock (full outcome)"),
        ("c0_a_order_id", "c0_body", "order_id"),
        ("c0_a_reason", "c0_body", "reason"),
    }


@pytest.mark.slow
def test_mermaid_rejects_what_is_not_a_flowchart(node_env: dict[str, str]) -> None:
    """The parser is a real check: a broken edge label fails it (so a passing parse means something)."""
    broken = 'flowchart LR\n  a -->|"x| b\n'
    parsed = subprocess.run(
        [str(NODE_BIN / "node"), "mermaid_parse.mjs"],
        input=broken,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=NODE_DIR,
        env=node_env,
    )
    assert parsed.returncode == 1 and "Parse error" in parsed.stderr
