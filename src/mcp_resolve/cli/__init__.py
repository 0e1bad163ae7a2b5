"""The `mcp-resolve` command: serve a server file, check it, draw its graphs, install it, call it from the shell.

Every subcommand starts from `FILE[:OBJECT]`: the file is imported by path
and OBJECT (default: the variable `mcp`, else the first `MCPServer` in the
module) is the server. Importing a server is registering it, and registration
analyses every resolver graph, so a bad graph surfaces as `InvalidSignature`
before anything is served.

This module parses the command line and dispatches; each command lives in its
own private module: `_target` (finding the server), `_run`, `_check`, `_graph`
(building and drawing the graphs, also used by the docs' pictures), `_dev` and `_apps_dev`
(`dev --apps`: a local MCP Apps host page), `_reload` (`--reload`: a new server process per version of
the file, behind one listening socket), `_install` (into a client's config), `_list` and
`_call` (a server from the shell, through `_connect` and `_terminal`), `_proxy` (another server
through this one).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import InvalidSignature
from ..settings import InvalidSetting
from ._apps_dev import dev_apps
from ._check import check
from ._dev import INSPECTOR, NO_NPX, dev, dev_reload
from ._graph import FORMATS, Component, graph, graph_dot, graph_mermaid, graph_svg, graph_text, question_of
from ._proxy import add_proxy_command, proxy_server
from ._run import LEVELS, WORKER_APP_ENV, serve, worker_app
from ._shell import SHELL_COMMANDS, add_shell_commands, run_shell_command, split_command
from ._target import CLIError, import_file, load_server, split_target

__all__ = [
    "FORMATS",
    "INSPECTOR",
    "LEVELS",
    "NO_NPX",
    "WORKER_APP_ENV",
    "CLIError",
    "Component",
    "build_parser",
    "check",
    "graph_dot",
    "graph_mermaid",
    "graph_svg",
    "graph_text",
    "import_file",
    "load_server",
    "main",
    "question_of",
    "split_target",
    "worker_app",
]


RELOAD_HELP = (
    "serve again when the file or a .py file beside it changes (needs watchfiles: mcp-resolve[reload]); "
    "over HTTP on the same port, over stdio by ending the server so the client restarts it"
)


def build_parser() -> argparse.ArgumentParser:
    """The `mcp-resolve` command line: `run`, `check`, `graph`, `dev`, `install`, `list` and `call`."""
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
    run.add_argument("--reload", action="store_true", help=RELOAD_HELP)

    check_cmd = commands.add_parser("check", help="import the server and analyse every resolver graph")
    check_cmd.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)

    graph = commands.add_parser("graph", help="print each tool's resolver graph")
    graph.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)
    graph.add_argument("--tool", metavar="NAME", help="only this tool (or prompt, or resource URI)")
    graph.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text (default), mermaid (a Mermaid flowchart), dot (Graphviz's source) or svg (drawn by "
        "Graphviz's `dot`, which must be on PATH)",
    )

    dev = commands.add_parser(
        "dev", help="open the server in the MCP Inspector (needs Node.js), or its MCP Apps views (--apps)"
    )
    dev.add_argument("target", metavar="FILE[:OBJECT]", help=target_help)
    dev.add_argument(
        "--apps",
        action="store_true",
        help="serve the server on HTTP with a local MCP Apps host page that renders its views",
    )
    dev.add_argument(
        "--reload",
        action="store_true",
        help="serve over HTTP on loopback, reloading on change, and point the Inspector at its URL",
    )
    dev.add_argument(
        "--port", type=int, default=8000, help="--apps, --reload: the loopback port (default 8000)"
    )
    add_shell_commands(commands, target_help)
    add_proxy_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    words, command = split_command(words)
    args = build_parser().parse_args(words)
    if args.command in SHELL_COMMANDS:
        return run_shell_command(args, command)
    try:
        if args.command == "dev":
            if args.apps:
                return dev_apps(args.target, port=args.port)
            load_server(args.target)  # fail here, readably, rather than inside the Inspector
            return dev_reload(args.target, port=args.port) if args.reload else dev(args.target)
        if args.command == "proxy":
            words = args.target[1:] if args.target[:1] == ["--"] else args.target
            front = proxy_server(
                words, auth_env=args.auth_env, headers=args.header, mode=args.mode, timeout=args.timeout
            )
            return serve(front, "proxy", **_serving_options(args))
        server = load_server(args.target)
        if args.command == "run":
            return serve(
                server, args.target, **_serving_options(args), workers=args.workers, reload=args.reload
            )
        if args.command == "check":
            print(check(server))
        else:
            sys.stdout.write(graph(server, args.tool, args.format))
    except InvalidSignature as exc:
        print(f"InvalidSignature: {exc}", file=sys.stderr)
        return 1
    except (CLIError, InvalidSetting) as exc:
        print(f"mcp-resolve: {exc}", file=sys.stderr)
        return 1
    return 0


def _serving_options(args: argparse.Namespace) -> dict[str, Any]:
    """The serving options `run` and `proxy` share (`serve`'s keywords)."""
    return {
        "http": args.http,
        "host": args.host,
        "port": args.port,
        "path": args.path,
        "allowed_hosts": args.allowed_hosts,
        "allowed_origins": args.allowed_origins,
        "log_level": args.log_level,
    }
