"""The `mcp-resolve` command: serve a server file, check it, draw its resolver graphs, open it in the Inspector.

Every subcommand starts from `FILE[:OBJECT]`: the file is imported by path
and OBJECT (default: the variable `mcp`, else the first `MCPServer` in the
module) is the server. Importing a server is registering it, and registration
analyses every resolver graph, so a bad graph surfaces as `InvalidSignature`
before anything is served.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from . import __version__
from .errors import InvalidSignature
from .prompts import Prompt
from .resolve.markers import Elicit, ListRoots, Sample
from .resolve.plan import ResolverPlan
from .resources import Resource, ResourceTemplate
from .server._facade import MCPServer
from .settings import InvalidSetting
from .tools import Tool

__all__ = ["CLIError", "graph_dot", "graph_mermaid", "graph_text", "load_server", "main", "worker_app"]

Component = Tool | Prompt | Resource | ResourceTemplate
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"  # the version docs/cli.md and the interop tests use
WORKER_APP_ENV = "MCP_RESOLVE_WORKER_APP"
NO_NPX = (
    "mcp-resolve dev opens the MCP Inspector with npx, and npx is not on PATH.\n"
    "Install Node.js 18 or newer (https://nodejs.org), which provides npx, then run this again;\n"
    "or serve without the Inspector: mcp-resolve run {target}"
)


class CLIError(Exception):
    """A problem with what was asked on the command line: reported in one line, exit status 1."""


# -- finding the server ----------------------------------------------------------------------
def split_target(spec: str) -> tuple[Path, str | None]:
    """`path/to/server.py:obj` -> (path, "obj"); a colon not followed by a Python name stays in the path."""
    path_text, sep, obj = spec.rpartition(":")
    if sep and path_text and obj and all(part.isidentifier() for part in obj.split(".")):
        return Path(path_text), obj
    return Path(spec), None


def _module_name(path: Path) -> str:
    """The stem when it is free, so resolver question keys read naturally and match across workers."""
    stem = path.stem
    if stem.isidentifier() and stem not in sys.modules:
        return stem
    return "mcp_resolve_app_" + re.sub(r"\W", "_", stem)


def import_file(path: Path) -> types.ModuleType:
    """Import a file as a script would run it: its folder first on sys.path, so sibling imports work."""
    if not path.is_file():
        raise CLIError(f"no such file: {path}")
    path = path.resolve()
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_server(spec: str) -> MCPServer:
    """The `MCPServer` that `FILE[:OBJECT]` names."""
    path, obj = split_target(spec)
    module = import_file(path)
    if obj is not None:
        value: Any = module
        for part in obj.split("."):
            if not hasattr(value, part):
                raise CLIError(f"{path} has no {obj!r}")
            value = getattr(value, part)
        if not isinstance(value, MCPServer):
            raise CLIError(f"{path}:{obj} is a {type(value).__name__}, not an MCPServer")
        return value
    found = getattr(module, "mcp", None)
    if isinstance(found, MCPServer):
        return found
    for value in vars(module).values():
        if isinstance(value, MCPServer):
            return value
    for value in vars(module).values():
        kind = type(value)
        if kind.__name__ in ("MCPServer", "FastMCP") and kind.__module__.split(".")[0] in ("mcp", "fastmcp"):
            raise CLIError(
                f"{path} builds {kind.__module__.split('.')[0]}'s {kind.__name__}, not mcp-resolve's: "
                "change its import to `from mcp_resolve import MCPServer`"
            )
    raise CLIError(f"{path} defines no MCPServer; name one with {path}:OBJECT")


# -- check -----------------------------------------------------------------------------------
def check(server: MCPServer) -> str:
    """Re-run registration analysis (with any dependency_overrides applied) and summarise the server."""
    components = server.components()
    resolvers: set[Any] = set()
    carried: set[Any] = set()
    for component in components:
        plans = component.signature.plans()
        resolvers.update(plans)
        carried.update(key for key, plan in plans.items() if plan.carry is not None)

    def count(kind: type, noun: str) -> str:
        n = sum(isinstance(c, kind) for c in components)
        return f"{n} {noun}{'' if n == 1 else 's'}"

    kinds = ", ".join(
        count(kind, noun)
        for kind, noun in (
            (Tool, "tool"),
            (Prompt, "prompt"),
            (Resource, "resource"),
            (ResourceTemplate, "template"),
        )
    )
    summary = f"OK {server.name}: {kinds}, {len(resolvers)} resolver{'' if len(resolvers) == 1 else 's'}"
    return f"{summary} ({len(carried)} carried across rounds)" if carried else summary


# -- graph -----------------------------------------------------------------------------------
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
        out.append(f"{head}  requires scopes: {' '.join(scopes)}" if scopes else head)
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


# -- run and dev -----------------------------------------------------------------------------
def _serve(server: MCPServer, args: argparse.Namespace) -> int:
    from ._logs import configure_logging
    from .settings import load_settings

    # Options given on the command line win, then the server's own arguments, then the environment.
    level = args.log_level or server.log_level
    settings = load_settings(log_level=level)
    configure_logging(settings.log_level)  # before the first warning (the key check below) is logged
    if not args.http:
        if args.workers != 1:
            raise CLIError("--workers needs --http (stdio is one process talking to one client)")
        server.run(log_level=level)
        return 0
    try:
        server.deployment.check(args.workers)
    except (RuntimeError, ValueError) as exc:
        raise CLIError(str(exc)) from None
    host = settings.host if args.host is None else args.host
    port = settings.port if args.port is None else args.port
    path = settings.path if args.path is None else args.path
    hosts = args.allowed_hosts or settings.allowed_hosts
    origins = args.allowed_origins or settings.allowed_origins
    shown_host = f"[{host}]" if ":" in host else host
    print(f"MCP endpoint: http://{shown_host}:{port}{path}", file=sys.stderr, flush=True)
    if args.workers == 1:
        server.run(
            transport="streamable-http",
            host=host,
            port=port,
            path=path,
            allowed_hosts=hosts,
            allowed_origins=origins,
            log_level=level,
        )
        return 0
    import uvicorn

    effective = configure_logging(settings.log_level)
    # uvicorn starts each worker by importing the app: hand it a factory that loads the same file.
    worker = {
        "target": _absolute(args.target),
        "path": path,
        "host": host,
        "hosts": hosts,
        "origins": origins,
        "log_level": settings.log_level,
    }
    os.environ[WORKER_APP_ENV] = json.dumps(worker)
    from .transports.http._fleet.limits import ServerLimits, uvicorn_options

    uvicorn.run(
        f"{__name__}:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=args.workers,
        log_level=effective.lower() if effective in LEVELS else "info",
        **uvicorn_options(ServerLimits(), workers=args.workers, trusted_proxies=settings.trusted_proxies),
    )
    return 0


def worker_app() -> Any:
    """The ASGI app of one `run --http --workers N` worker: the server file the parent was given."""
    from ._logs import configure_logging
    from .transports.http._app import default_allowed_hosts

    worker = json.loads(os.environ[WORKER_APP_ENV])
    configure_logging(worker.get("log_level"))
    allowed = worker["hosts"] or default_allowed_hosts(worker["host"])  # as `serve_http` does for one worker
    return load_server(worker["target"]).streamable_http_app(
        path=worker["path"], allowed_hosts=allowed, allowed_origins=worker.get("origins")
    )


def _absolute(spec: str) -> str:
    path, obj = split_target(spec)
    return os.fspath(path.resolve()) + (f":{obj}" if obj else "")


def _dev(spec: str) -> int:
    npx = shutil.which("npx")
    if npx is None:
        print(NO_NPX.format(target=spec), file=sys.stderr)
        return 1
    command = [npx, "--yes", INSPECTOR, "--", sys.executable, "-m", "mcp_resolve", "run", _absolute(spec)]
    print(f"Opening the MCP Inspector on {spec} (stdio): {' '.join(command)}", file=sys.stderr)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


# -- the command line ------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-resolve", description="Serve, check and inspect mcp-resolve servers."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    target_help = "a server file, optionally :OBJECT (default: the variable `mcp`, else the first MCPServer)"

    run = commands.add_parser("run", help="serve a server (stdio by default)")
    run.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)
    run.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    run.add_argument("--host", help="HTTP bind address (default: MCP_RESOLVE_HOST, else 127.0.0.1)")
    run.add_argument("--port", type=int, help="HTTP port (default: MCP_RESOLVE_PORT, else 8000)")
    run.add_argument("--path", help="HTTP endpoint path (default: MCP_RESOLVE_PATH, else /mcp)")
    run.add_argument(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        metavar="NAME",
        help="accept this Host header (repeatable; default: MCP_RESOLVE_ALLOWED_HOSTS, else loopback names "
        "and a named --host)",
    )
    run.add_argument(
        "--allowed-origin",
        action="append",
        dest="allowed_origins",
        metavar="ORIGIN",
        help="accept this Origin header, e.g. https://app.example.com (repeatable; default: "
        "MCP_RESOLVE_ALLOWED_ORIGINS, else origins whose host is allowed)",
    )
    run.add_argument(
        "--log-level",
        type=str.upper,
        choices=LEVELS,
        metavar="LEVEL",
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL for the mcp_resolve loggers, and uvicorn's over HTTP "
        "(default: MCP_RESOLVE_LOG_LEVEL, else INFO)",
    )
    run.add_argument(
        "--workers",
        type=int,
        default=1,
        help="HTTP worker processes (default 1); more than one needs shared keys in MCP_RESOLVE_STATE_KEYS "
        "and, for single_use tools, shared claims (MCP_RESOLVE_REDIS_URL)",
    )

    check_cmd = commands.add_parser("check", help="import the server and analyse every resolver graph")
    check_cmd.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)

    graph = commands.add_parser("graph", help="print each tool's resolver graph")
    graph.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)
    graph.add_argument("--tool", metavar="NAME", help="only this tool (or prompt, or resource URI)")
    graph.add_argument(
        "--format",
        choices=("text", "mermaid", "dot"),
        default="text",
        help="text (default), mermaid (a Mermaid flowchart) or dot (Graphviz: pipe it to `dot -Tsvg`)",
    )

    dev = commands.add_parser("dev", help="open the server in the MCP Inspector (needs Node.js)")
    dev.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)
    return parser


def _graph(server: MCPServer, args: argparse.Namespace) -> str:
    everything = server.components()
    if args.tool is not None:
        chosen = [c for c in everything if _key(c) == args.tool]
        if not chosen:
            names = ", ".join(_key(c) for c in everything) or "none"
            raise CLIError(f"{server.name} has no tool {args.tool!r} (it has: {names})")
    else:
        chosen = [c for c in everything if isinstance(c, Tool) or c.signature.plans()]
    draw = {"mermaid": graph_mermaid, "dot": graph_dot}.get(args.format, graph_text)
    return draw(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "dev":
            load_server(args.target)  # fail here, readably, rather than inside the Inspector
            return _dev(args.target)
        server = load_server(args.target)
        if args.command == "run":
            return _serve(server, args)
        if args.command == "check":
            print(check(server))
        else:
            sys.stdout.write(_graph(server, args))
    except InvalidSignature as exc:
        print(f"InvalidSignature: {exc}", file=sys.stderr)
        return 1
    except (CLIError, InvalidSetting) as exc:
        print(f"mcp-resolve: {exc}", file=sys.stderr)
        return 1
    return 0
