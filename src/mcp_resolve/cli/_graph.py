"""`mcp-resolve graph`: each component's resolver graph, built from its plans and drawn as text, Mermaid or DOT.

The graph is what registration analysed: the tool's arguments and the Context feed resolvers,
resolvers feed one another and the body. `graph_dot` also draws the pictures of the docs
(docs/pictures/generate.py), so what they show is what the code builds.
"""

from __future__ import annotations

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

__all__ = ["FORMATS", "Component", "graph", "graph_dot", "graph_mermaid", "graph_text", "question_of"]

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


def question_of(fn: Callable[..., Any]) -> str | None:
    """What a resolver may ask, read from its return annotation's marker arm (None: it never asks)."""
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
            return f"asks the person: Elicit[{shape[0].__name__}]" if shape else "asks the person: Elicit"
        if marker is Sample:
            return "samples the client's LLM: Sample"
        if marker is ListRoots:
            return "asks for the client's roots: ListRoots"
    return None


def _carried_note(plan: ResolverPlan) -> str | None:
    """How `graph` marks a `Resolve(fn, carry=True)` resolver: its value rides requestState, as this type."""
    return None if plan.carry is None else f"carried across rounds as {plan.carry.name}"


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
            notes = "; ".join(note for note in (question_of(plan.fn), _carried_note(plan)) if note)
            out.append(f"    {head:<40} {notes}" if notes else f"    {head}")
        out.append("  edges:")
        out.extend(
            f"    {_node_name(source, names, component)} -> {_node_name(target, names, component)}.{param}"
            for source, target, param in _edges(component, plans)
        )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def graph_mermaid(components: Sequence[Component]) -> str:
    """A Mermaid flowchart: one subgraph per component; hexagons ask questions, stadiums are inputs."""
    out = ["flowchart LR"]
    for index, component in enumerate(components):
        plans = component.signature.plans()
        names = _resolver_names(plans)
        prefix = f"c{index}"
        out.append(f'  subgraph {prefix} ["{_label(component)}"]')
        out.append(f'    {prefix}_body[["{_key(component)}"]]')
        ids: dict[Node, str] = {("body", None): f"{prefix}_body"}
        for plan in sorted(plans.values(), key=lambda p: p.order):
            node = ids[("resolver", plan.key)] = f"{prefix}_r{plan.order}"
            question = question_of(plan.fn)
            label = names[plan.key] + (f"<br/>{_carried_note(plan)}" if plan.carry is not None else "")
            if question:
                out.append(f'    {node}{{{{"{label}<br/>{question}"}}}}')
            else:
                out.append(f'    {node}["{label}"]')
        edges = _edges(component, plans)
        for source, _target, _param in edges:
            if source not in ids:
                kind, ref = source
                ids[source] = f"{prefix}_ctx" if kind == "context" else f"{prefix}_a_{ref}"
                out.append(f'    {ids[source]}(["{"Context" if kind == "context" else ref}"])')
        out.extend(f'    {ids[source]} -->|"{param}"| {ids[target]}' for source, target, param in edges)
        out.append("  end")
    return "\n".join(out) + "\n"


def _dot_text(text: str) -> str:
    """A DOT string literal's contents: quotes and backslashes escaped, a newline as a centred line break."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def graph_dot(components: Sequence[Component]) -> str:
    """A Graphviz digraph, the same nodes and edges as `graph_mermaid`: `dot -Tsvg` draws it.

    One cluster per component; hexagons ask questions, ellipses are inputs (tool
    arguments and the Context), the double box is the body the graph fills.
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
        out.append(
            f'    {prefix}_body [label="{_dot_text(_key(component))}", shape=box, style="", peripheries=2];'
        )
        ids: dict[Node, str] = {("body", None): f"{prefix}_body"}
        for plan in sorted(plans.values(), key=lambda p: p.order):
            node = ids[("resolver", plan.key)] = f"{prefix}_r{plan.order}"
            notes = [note for note in (question_of(plan.fn), _carried_note(plan)) if note]
            label = _dot_text("\n".join([names[plan.key], *notes]))
            shape = ', shape=hexagon, style=""' if question_of(plan.fn) else ""
            out.append(f'    {node} [label="{label}"{shape}];')
        edges = _edges(component, plans)
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


FORMATS = ("text", "mermaid", "dot")
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
    draw = {"mermaid": graph_mermaid, "dot": graph_dot}.get(output_format, graph_text)
    return draw(chosen)
