"""`mcp-resolve dev`: open a server file in the MCP Inspector, which runs it over stdio through `npx`."""

from __future__ import annotations

import shutil
import subprocess
import sys

from ._target import absolute_target

__all__ = ["INSPECTOR", "NO_NPX", "dev"]

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"  # the version docs/cli.md and the interop tests use
NO_NPX = (
    "mcp-resolve dev opens the MCP Inspector with npx, and npx is not on PATH.\n"
    "Install Node.js 18 or newer (https://nodejs.org), which provides npx, then run this again;\n"
    "or serve without the Inspector: mcp-resolve run {target}"
)


def dev(spec: str) -> int:
    """Run the Inspector on `spec` until it ends; its exit status (1 without npx, 130 on Ctrl-C)."""
    npx = shutil.which("npx")
    if npx is None:
        print(NO_NPX.format(target=spec), file=sys.stderr)
        return 1
    command = [
        npx,
        "--yes",
        INSPECTOR,
        "--",
        sys.executable,
        "-m",
        "mcp_resolve",
        "run",
        absolute_target(spec),
    ]
    print(f"Opening the MCP Inspector on {spec} (stdio): {' '.join(command)}", file=sys.stderr)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130
