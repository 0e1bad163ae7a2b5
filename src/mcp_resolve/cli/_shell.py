"""The command lines of `install`, `list` and `call`, and their dispatch.

Kept apart from the package's `__init__` so the parser there stays a list of commands. The
command modules are imported only when their command runs: `run` never loads the client, and
`install` never loads `rich`.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import InvalidSignature, MCPError
from ._target import CLIError
from ._terminal import safe

if TYPE_CHECKING:
    from ._terminal import Terminal

__all__ = ["SHELL_COMMANDS", "add_shell_commands", "run_shell_command", "split_command"]

SHELL_COMMANDS = ("install", "list", "call")
INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C, as a shell reports it."""


def split_command(words: list[str]) -> tuple[list[str], list[str] | None]:
    """`list ... -- command args`: the words before `--`, and the stdio command after it."""
    if words and words[0] in ("list", "call") and "--" in words:
        index = words.index("--")
        return words[:index], words[index + 1 :]
    return words, None


def add_shell_commands(commands: Any, target_help: str) -> None:
    from ._install import TARGETS

    install = commands.add_parser("install", help="add a server to an MCP client's configuration")
    install.add_argument("client", choices=TARGETS, metavar="TARGET", help=", ".join(TARGETS))
    install.add_argument(
        "target", nargs="?", metavar="FILE[:OBJECT]", help=target_help + " (not with --http)"
    )
    install.add_argument("--name", help="the server's name in the client (default: the server's own name)")
    install.add_argument(
        "--env", action="append", metavar="KEY=VALUE", help="environment for the server (repeatable)"
    )
    install.add_argument(
        "--env-file", metavar="FILE", help="environment from a dotenv file (KEY=VALUE lines)"
    )
    install.add_argument(
        "--with", action="append", dest="with_packages", metavar="PACKAGE", help="an extra package, with uv"
    )
    install.add_argument("--python", metavar="VERSION_OR_PATH", help="the Python the server runs on")
    install.add_argument("--http", metavar="URL", help="a remote server at this URL instead of a file")
    install.add_argument(
        "--header",
        action="append",
        metavar="NAME:VALUE",
        help="--http: a header, e.g. 'Authorization: Bearer ...'",
    )
    install.add_argument(
        "--force", action="store_true", help="replace an entry of the same name that differs"
    )
    install.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    install.add_argument("--user", action="store_true", help="vscode: the user profile's mcp.json")
    install.add_argument("--workspace", metavar="DIR", help="vscode: the workspace folder (default: here)")

    server_help = (
        "a server file (FILE[:OBJECT], run over stdio), an http(s) URL, or `-- command args` at the end"
    )
    for name, about in (
        ("list", "list a server's tools (resolved parameters marked), resources, templates and prompts"),
        ("call", "call a tool, answering the server's questions at the terminal"),
    ):
        sub = commands.add_parser(name, help=about)
        if name == "list":
            sub.add_argument("server", nargs="?", metavar="SERVER", help=server_help)
        else:
            sub.add_argument(
                "words",
                nargs="+",
                metavar="SERVER TOOL [key=value ...]",
                help=f"SERVER is {server_help} (then only TOOL key=value ... come first)",
            )
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.add_argument(
            "--protocol", choices=("auto", "legacy", "2026-07-28"), default="auto", help="the protocol era"
        )
        sub.add_argument(
            "--header", action="append", metavar="NAME:VALUE", help="an HTTP header (repeatable)"
        )
        sub.add_argument(
            "--oauth", action="store_true", help="sign in with OAuth in the browser; tokens are cached"
        )
        sub.add_argument(
            "--root", action="append", default=[], metavar="DIR", help="offer this folder as a root"
        )
        sub.add_argument(
            "--sampling-model", metavar="MODEL", help="answer sampling with this pydantic-ai model"
        )
        sub.add_argument(
            "--timeout", type=float, default=60.0, help="seconds connecting may take (default 60)"
        )


def run_shell_command(args: argparse.Namespace, command: list[str] | None) -> int:
    try:
        if args.command == "install":
            return _install(args)
        return _client_command(args, command)
    except KeyboardInterrupt:
        print("\nmcp-resolve: interrupted", file=sys.stderr)
        return INTERRUPTED
    except InvalidSignature as exc:
        print(f"InvalidSignature: {exc}", file=sys.stderr)
        return 1
    except (CLIError, MCPError) as exc:
        print(f"mcp-resolve: {safe(exc, multiline=True)}", file=sys.stderr)
        return 1
    except Exception as exc:  # a server that fails to start, a refused connection: one line, no traceback
        print(f"mcp-resolve: {type(exc).__name__}: {safe(_reason(exc), multiline=True)}", file=sys.stderr)
        return 1


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception group (a task group wraps what failed inside it)."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and len(inner) == 1:
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    if isinstance(exc, TimeoutError) and not str(exc):
        return "the server did not answer in time (--timeout sets how long connecting may take)"
    return str(exc)


def _install(args: argparse.Namespace) -> int:
    from ._install import InstallOptions, install, pairs

    return install(
        InstallOptions(
            target=args.client,
            server=args.target,
            name=args.name,
            env=pairs(args.env, "=", "--env"),
            env_file=args.env_file,
            with_packages=args.with_packages or [],
            python=args.python,
            http=args.http,
            headers=pairs(args.header, ":", "--header"),
            force=args.force,
            dry_run=args.dry_run,
            user=args.user,
            workspace=args.workspace,
        )
    )


def _client_command(args: argparse.Namespace, command: list[str] | None) -> int:
    from ._connect import Connection
    from ._install import pairs
    from ._terminal import Terminal, require_rich

    require_rich()
    if args.command == "list":
        server = args.server
        words: list[str] = []
    elif command is not None:
        server, words = None, args.words
    else:
        server, words = args.words[0], args.words[1:]
        if not words:
            raise CLIError("call needs SERVER TOOL [key=value ...]")
    if command is not None and not command:
        raise CLIError("`--` must be followed by the command that runs the server")
    connection = Connection(
        server=server,
        command=command,
        protocol=args.protocol,
        headers=pairs(args.header, ":", "--header"),
        oauth=args.oauth,
        roots=args.root,
        sampling_model=args.sampling_model,
        timeout=args.timeout,
    )
    terminal = Terminal(sampling_model=connection.sampling_model)
    if args.command == "list":
        from ._list import list_server

        return anyio.run(
            _interruptible, terminal, lambda: list_server(connection, terminal, as_json=args.json)
        )
    from ._call import call_tool

    work = lambda: call_tool(connection, terminal, words[0], words[1:], as_json=args.json)  # noqa: E731
    return anyio.run(_interruptible, terminal, work)


async def _interruptible(terminal: Terminal, work: Callable[[], Awaitable[int]]) -> int:
    """Run the command so that Ctrl-C stops it cleanly: the connection closes, the exit status is 130.

    Asyncio's own Ctrl-C handling cancels the main task but leaves a prompt's `input()` waiting,
    and raising wherever the program is would surface inside the connection's tasks. So Ctrl-C at a
    prompt breaks that prompt (which answers the server with an error, never a choice), and
    anywhere else cancels the work from the event loop.
    """
    loop = asyncio.get_running_loop()

    def on_interrupt(signum: int, frame: object) -> None:
        if terminal.prompting:
            raise KeyboardInterrupt
        loop.call_soon_threadsafe(terminal.interrupt)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        with anyio.CancelScope() as scope:
            terminal.scope = scope
            status = await work()
    finally:
        signal.signal(signal.SIGINT, previous)
    if terminal.interrupted:
        raise KeyboardInterrupt
    return status
