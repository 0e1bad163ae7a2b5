"""`mcp-resolve proxy TARGET`: serve another MCP server, a URL or a stdio command line, through ours.

Everything the front adds is the `run` command's (stdio or `--http`, hosts,
origins, logging); the upstream credential is read from an environment
variable, never from the command line, where every process listing shows it.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence
from typing import Any

from ..bridges import ProxyLimits, as_proxy
from ..server import MCPServer
from ._target import CLIError

__all__ = ["add_proxy_command", "proxy_server", "proxy_target"]


def proxy_target(words: Sequence[str]) -> str | list[str]:
    """The target as the proxy takes it: one URL, or a command line (one quoted string or its words)."""
    if not words:
        raise CLIError("proxy needs a TARGET: an http(s):// URL or a command line (after --)")
    if len(words) == 1:
        word = words[0]
        if word.startswith(("http://", "https://")):
            return word
        words = shlex.split(word)
    if words and words[0].startswith(("http://", "https://")):
        raise CLIError("proxy takes one URL, with nothing after it")
    return list(words)


def proxy_server(
    words: Sequence[str],
    *,
    auth_env: str | None = None,
    headers: Sequence[str] = (),
    mode: str = "auto",
    timeout: float | None = None,
) -> MCPServer:
    """The front server for `mcp-resolve proxy`; its errors are CLIErrors, said in one line."""
    target = proxy_target(words)
    token = None
    if auth_env is not None:
        token = os.environ.get(auth_env)
        if not token:
            raise CLIError(f"--auth-env {auth_env}: that environment variable is not set")
        if not isinstance(target, str):
            raise CLIError("--auth-env signs HTTP requests: the target is a command line")
    parsed: dict[str, str] = {}
    for header in headers:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise CLIError(f"--header takes NAME:VALUE, not {header!r}")
        parsed[name.strip()] = value.strip()
    limits = ProxyLimits() if timeout is None else ProxyLimits(timeout=timeout)
    return as_proxy(target, auth=token, headers=parsed or None, mode=mode, limits=limits)


def add_proxy_command(commands: Any) -> None:
    """`proxy TARGET` on the `mcp-resolve` parser: how to serve the front, and how to reach the target."""
    proxy: argparse.ArgumentParser = commands.add_parser(
        "proxy", help="serve another MCP server (a URL, or a command line after --) through this one"
    )
    proxy.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    proxy.add_argument("--host", help="HTTP bind address (default: MCP_RESOLVE_HOST, else 127.0.0.1)")
    proxy.add_argument("--port", type=int, help="HTTP port (default: MCP_RESOLVE_PORT, else 8000)")
    proxy.add_argument("--path", help="HTTP endpoint path (default: MCP_RESOLVE_PATH, else /mcp)")
    proxy.add_argument(
        "--allowed-host", action="append", dest="allowed_hosts", metavar="NAME", help="as for run"
    )
    proxy.add_argument(
        "--allowed-origin", action="append", dest="allowed_origins", metavar="ORIGIN", help="as for run"
    )
    proxy.add_argument("--log-level", type=str.upper, metavar="LEVEL", help="as for run")
    proxy.add_argument(
        "--mode", default="auto", help="the era spoken upstream: auto (default), legacy or 2026-07-28"
    )
    proxy.add_argument(
        "--timeout", type=float, help="seconds one forwarded request may take in all (default 120)"
    )
    proxy.add_argument(
        "--auth-env", metavar="VAR", help="send the bearer token held in this environment variable"
    )
    proxy.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="send this header upstream (repeatable)",
    )
    proxy.add_argument(
        "target", nargs=argparse.REMAINDER, metavar="TARGET", help="a URL, or -- and a command line"
    )
