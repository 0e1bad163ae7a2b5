"""`mcp-resolve graph`: each component's resolver graph, built from its plans and drawn as text, Mermaid,
DOT or SVG.

The graph is what registration analysed: the tool's arguments and the Context feed resolvers,
resolvers feed one another and the body. Every format marks the same things: which question a
resolver may ask (the person, the client's LLM, the client's roots), which value is carried across
rounds, which resolver cleans up after the body (a generator), and, in the drawings, the
model-facing arguments set apart from what the server fills. `graph_dot` also draws the pictures
of the docs (docs/pictures/generate.py), so what they show is what the code builds; SVG is that
DOT drawn by Graphviz's `dot` program, which is not a Python package: without it, a clear error.
"""

from __future__ import annotations

import shutil
import subprocess
import types
from collections.abc import Callable, Sequence
from typing import Any, Union, get_args, get_origin, get_type_hints

from ..prompts import Prompt
from ..resolve.markers import Elicit, ListRoots, Sample
from ..resolve.plan import ResolverPlan
from ..resources import Resource, ResourceTemplate
from ..server import MCPServer
from ..tools import Tool
from ._target import CLIError

__all__ = [
    "FORMATS",
    "NO_DOT",
    "Component",
    "graph",
    "graph_dot",
    "graph_mermaid",
    "graph_svg",
    "graph_text",
    "question_of",
]

Component = Tool | Prompt | Resource | ResourceTemplate


def _short(name: str) -> str:
    # "module:qualname": a module name has no colon, a resolver's label may (require_scopes('a:b')).
    return name.partition(":")[2] or name


def _label(component: Component) -> str:
    if isinstance(component, Tool):
        return f"tool {component.name}"
    if isinstance(component, Prompt):
        return f"prompt {component.name}"
    if isinstance(component, ResourceTemplate):
        return f"resource template {component.uri}"
    return f"resource {component.uri}"


def _key(component: Component) -> str:
    return component.name if isinstance(component, (Tool, Prompt)) else component.uri


def _question(fn: Callable[..., Any]) -> tuple[str, str] | None:
    """(kind, text) of what a resolver may ask, read from its return annotation's marker arm."""
    target = fn if isinstance(fn, (types.FunctionType, types.MethodType)) else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        annotation = get_type_hints(target).get("return")
    except Exception:
        return None
    origin = get_origin(annotation)
    arms = get_args(annotation) if origin in (Union, types.UnionType) else (annotation,)
    for arm in arms:
        marker = get_origin(arm) or arm
        if marker is Elicit:
            shape = get_args(arm)
            return (
                "elicit",
                f"asks the person: Elicit[{shape[0].__name__}]" if shape else "asks the person: Elicit",
            )
        if marker is Sample:
            return "sample", "samples the client's LLM: Sample"
        if marker is ListRoots:
            return "roots", "asks for the client's roots: ListRoots"
    return None


def question_of(fn: Callable[..., Any]) -> str | None:
    """What a resolver may ask, read from its return annotation's marker arm (None: it never asks)."""
    question = _question(fn)
    return None if question is None else question[1]


def _carried_note(plan: ResolverPlan) -> str | None:
    """How `graph` marks a `Resolve(fn, carry=True)` resolver: its value rides requestState, as this type."""
    return None if plan.carry is None else f"carried across rounds as {plan.carry.name}"


def _cleanup_note(plan: ResolverPlan) -> str | None:
    """How `graph` marks a generator resolver: the code after its `yield` runs once the body is done."""
    return "cleans up after the body" if plan.kind in ("generator", "async_generator") else None


def _notes(plan: ResolverPlan) -> list[str]:
    return [note for note in (question_of(plan.fn), _carried_note(plan), _cleanup_note(plan)) if note]


Node = tuple[str, Any]
"""("argument", name), ("context", None), ("resolver", plan key) or ("body", None)."""


def _edges(component: Component, plans: dict[Any, ResolverPlan]) -> list[tuple[Node, Node, str]]:
    """(source, target, parameter) for every edge of one component's graph."""
    edges: list[tuple[Node, Node, str]] = []
    for plan in sorted(plans.values(), key=lambda p: p.order):
        target: Node = ("resolver", plan.key)
        edges.extend((("argument", arg), target, arg) for arg in plan.argument_params)
        edges.extend((("context", None), target, param) for param in plan.context_params)
        for param, dependency, wants_union in plan.dependency_params:
            edges.append(
                (("resolver", dependency), target, param + (" (full outcome)" if wants_union else ""))
            )
    for param, (marker, wants_union) in component.signature.resolved_params.items():
        suffix = " (full outcome)" if wants_union else ""
        edges.append((("resolver", marker.fn), ("body", None), param + suffix))
    return edges


def _resolver_names(plans: dict[Any, ResolverPlan]) -> dict[Any, str]:
    """Short names, or module-qualified ones where two resolvers share a short name."""
    short = [_short(plan.name) for plan in plans.values()]
    return {
        plan.key: _short(plan.name) if short.count(_short(plan.name)) == 1 else plan.name
        for plan in plans.values()
    }


def _node_name(node: Node, names: dict[Any, str], component: Component) -> str:
    kind, ref = node
    if kind == "resolver":
        return names[ref]
    return {"argument": f"argument {ref}", "context": "Context"}.get(kind, _key(component))


def graph_text(components: Sequence[Component]) -> str:
    """Each component's resolvers in the order a one-after-another run visits them, then every edge."""
    out: list[str] = []
    for component in components:
        plans = component.signature.plans()
        head = f"{_label(component)}({', '.join(component.signature.argument_names)})"
        scopes = getattr(component, "scopes", ())
        if scopes:
            head = f"{head}  requires scopes: {' '.join(scopes)}"
        hidden = getattr(
            component, "hidden", ()
        )  # a mounted tool's `hide=`: filled here, unseen by the model
        out.append(f"{head}  hides: {', '.join(hidden)}" if hidden else head)
        if not plans:
            out.extend(["  no resolvers", ""])
            continue
        names = _resolver_names(plans)

        out.append("  resolvers:")
        for plan in sorted(plans.values(), key=lambda p: p.order):
            params = [*plan.argument_params, *plan.context_params, *(d[0] for d in plan.dependency_params)]
            head = f"{names[plan.key]}({', '.join(params)})"
            notes = "; ".join(_notes(plan))
            out.append(f"    {head:<40} {notes}" if notes else f"    {head}")
        out.append("  edges:")
        out.extend(
            f"    {_node_name(source, names, component)} -> {_node_name(target, names, component)}.{param}"
            for source, target, param in _edges(component, plans)
        )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


QUESTION_COLOURS = {"elicit": "#fff2cc", "sample": "#dae8fc", "roots": "#d5e8d4"}
"""The fill of a resolver that asks, by what it asks: the person, the client's LLM, the client's roots."""


def _argument_edges(component: Component) -> list[tuple[Node, Node, str]]:
    """Every model-facing argument is a parameter of the body too (the rest are resolved or the Context)."""
    return [(("argument", arg), ("body", None), arg) for arg in component.signature.argument_names]


def _mermaid_text(text: str) -> str:
    """A Mermaid quoted label: a quote as its entity (the label is inside quotes)."""
    return text.replace('"', "#quot;")


def graph_mermaid(components: Sequence[Component]) -> str:
    """A Mermaid flowchart: one subgraph per component, its model-facing arguments in a subgraph of their
    own; hexagons ask questions (coloured by kind), stadiums are inputs, the subroutine box is the body."""
    out = ["flowchart LR"]
    classes: dict[str, list[str]] = {}
    for index, component in enumerate(components):
        plans = component.signature.plans()
        names = _resolver_names(plans)
        prefix = f"c{index}"
        out.append(f'  subgraph {prefix} ["{_mermaid_text(_label(component))}"]')
        ids: dict[Node, str] = {("body", None): f"{prefix}_body"}
        arguments = component.signature.argument_names
        if arguments:
            out.append(f'    subgraph {prefix}_args ["model-facing arguments"]')
            for arg in arguments:
                ids[("argument", arg)] = f"{prefix}_a_{arg}"
                out.append(f'      {prefix}_a_{arg}(["{arg}"])')
            out.append("    end")
        out.append(f'    {prefix}_body[["{_mermaid_text(_key(component))}"]]')
        for plan in sorted(plans.values(), key=lambda p: p.order):
            node = ids[("resolver", plan.key)] = f"{prefix}_r{plan.order}"
            label = "<br/>".join(_mermaid_text(part) for part in [names[plan.key], *_notes(plan)])
            question = _question(plan.fn)
            if question:
                out.append(f'    {node}{{{{"{label}"}}}}')
                classes.setdefault(question[0], []).append(node)
            else:
                out.append(f'    {node}["{label}"]')
            if plan.carry is not None:
                classes.setdefault("carried", []).append(node)
            if _cleanup_note(plan):
                classes.setdefault("cleanup", []).append(node)
        edges = [*_edges(component, plans), *_argument_edges(component)]
        for source, _target, _param in edges:
            if source not in ids:
                kind, ref = source
                ids[source] = f"{prefix}_ctx" if kind == "context" else f"{prefix}_a_{ref}"
                out.append(f'    {ids[source]}(["{"Context" if kind == "context" else ref}"])')
        out.extend(f'    {ids[source]} -->|"{param}"| {ids[target]}' for source, target, param in edges)
        out.append("  end")
    styles = {
        **{kind: f"fill:{colour}" for kind, colour in QUESTION_COLOURS.items()},
        "carried": "stroke-width:3px",
        "cleanup": "stroke-dasharray:5 3",
    }
    for name, nodes in classes.items():
        out.append(f"  classDef {name} {styles[name]}")
        out.append(f"  class {','.join(nodes)} {name}")
    return "\n".join(out) + "\n"


def _dot_text(text: str) -> str:
    """A DOT string literal's contents: quotes and backslashes escaped, a newline as a centred line break."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _dot_resolver(node: str, label: str, plan: ResolverPlan) -> str:
    """One resolver's node: a hexagon filled by kind when it asks; bold when carried, dashed when it cleans up."""
    question = _question(plan.fn)
    styles = ["filled"] if question else ["rounded"]
    styles += ["bold"] * (plan.carry is not None) + ["dashed"] * (_cleanup_note(plan) is not None)
    attributes = [f'label="{label}"']
    if question:
        attributes += ["shape=hexagon", f'fillcolor="{QUESTION_COLOURS[question[0]]}"']
    if styles != ["rounded"]:
        attributes.append(f'style="{",".join(styles)}"')
    return f"    {node} [{', '.join(attributes)}];"


def graph_dot(components: Sequence[Component]) -> str:
    """A Graphviz digraph, the same nodes and edges as `graph_mermaid`: `dot -Tsvg` draws it.

    One cluster per component, its model-facing arguments in a dashed cluster of their own;
    hexagons ask questions (filled by kind), ellipses are inputs (tool arguments and the
    Context), the double box is the body the graph fills; a carried resolver is bold, one that
    cleans up after the body dashed.
    """
    out = [
        "digraph resolvers {",
        "  rankdir=LR;",
        '  graph [fontname="Helvetica", fontsize=12];',
        '  node [fontname="Helvetica", fontsize=11, shape=box, style=rounded];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for index, component in enumerate(components):
        plans = component.signature.plans()
        names = _resolver_names(plans)
        prefix = f"c{index}"
        out.append(f"  subgraph cluster_{prefix} {{")
        out.append(f'    label="{_dot_text(_label(component))}";')
        ids: dict[Node, str] = {("body", None): f"{prefix}_body"}
        arguments = component.signature.argument_names
        if arguments:
            out.append(f"    subgraph cluster_{prefix}_args {{")
            out.append('      label="model-facing arguments"; style=dashed;')
            for arg in arguments:
                node = ids[("argument", arg)] = f"{prefix}_a_{arg}"
                out.append(f'      {node} [label="{_dot_text(arg)}", shape=ellipse, style=""];')
            out.append("    }")
        out.append(
            f'    {prefix}_body [label="{_dot_text(_key(component))}", shape=box, style="", peripheries=2];'
        )
        for plan in sorted(plans.values(), key=lambda p: p.order):
            node = ids[("resolver", plan.key)] = f"{prefix}_r{plan.order}"
            out.append(_dot_resolver(node, _dot_text("\n".join([names[plan.key], *_notes(plan)])), plan))
        edges = [*_edges(component, plans), *_argument_edges(component)]
        for source, _target, _param in edges:
            if source not in ids:
                kind, ref = source
                ids[source] = f"{prefix}_ctx" if kind == "context" else f"{prefix}_a_{ref}"
                text = "Context" if kind == "context" else str(ref)
                out.append(f'    {ids[source]} [label="{_dot_text(text)}", shape=ellipse, style=""];')
        out.extend(
            f'    {ids[source]} -> {ids[target]} [label="{_dot_text(param)}"];'
            for source, target, param in edges
        )
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


NO_DOT = (
    "--format svg draws the graph with Graphviz's `dot` program, and dot is not on PATH.\n"
    "Install Graphviz (Debian/Ubuntu: apt install graphviz; macOS: brew install graphviz;\n"
    "https://graphviz.org/download/), or print the source and draw it elsewhere: --format dot"
)
DOT_TIMEOUT = 60.0
"""Seconds `dot` may take to draw; a graph of a server's tools takes well under one."""


def graph_svg(components: Sequence[Component]) -> str:
    """`graph_dot` drawn as SVG by Graphviz's `dot`; `CLIError` when dot is absent or fails."""
    dot = shutil.which("dot")
    if dot is None:
        raise CLIError(NO_DOT)
    try:
        done = subprocess.run(
            [dot, "-Tsvg"],
            input=graph_dot(components),
            capture_output=True,
            text=True,
            timeout=DOT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CLIError(f"dot did not finish drawing within {DOT_TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        raise CLIError(f"dot could not draw the graph: {done.stderr.strip()}")
    return done.stdout


FORMATS = ("text", "mermaid", "dot", "svg")
"""What `--format` takes; text is the default."""


def graph(server: MCPServer, tool: str | None = None, output_format: str = "text") -> str:
    """The command's output: the graph of `tool` (a tool, prompt or resource URI), else of every tool
    and of every other component that has resolvers, in `output_format` (one of `FORMATS`)."""
    everything = server.components()
    if tool is not None:
        chosen = [c for c in everything if _key(c) == tool]
        if not chosen:
            names = ", ".join(_key(c) for c in everything) or "none"
            raise CLIError(f"{server.name} has no tool {tool!r} (it has: {names})")
    else:
        chosen = [c for c in everything if isinstance(c, Tool) or c.signature.plans()]
    draw = {"mermaid": graph_mermaid, "dot": graph_dot, "svg": graph_svg}.get(output_format, graph_text)
    return draw(chosen)
