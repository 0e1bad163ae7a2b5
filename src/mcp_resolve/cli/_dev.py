"""`mcp-resolve dev`: open a server file in the MCP Inspector, which runs it over stdio through `npx`.

With `--reload` the server is `mcp-resolve run --http --reload` on loopback instead, and the
Inspector is pointed at its URL: the URL outlives every reload, so the Inspector stays connected
while the file is edited (over stdio it would lose its server at each one).
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from ._reload import require_watchfiles
from ._target import absolute_target

__all__ = ["INSPECTOR", "NO_NPX", "dev", "dev_reload"]

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


def dev_reload(spec: str, *, port: int) -> int:
    """`run --http --reload` on 127.0.0.1:`port`, and the Inspector on its URL, until the Inspector ends."""
    npx = shutil.which("npx")
    if npx is None:
        print(NO_NPX.format(target=f"--http --reload {spec}"), file=sys.stderr)
        return 1
    require_watchfiles()  # before the Inspector starts: without watchfiles, nothing would serve its URL
    url = f"http://127.0.0.1:{port}/mcp"
    serve = [sys.executable, "-m", "mcp_resolve", "run", absolute_target(spec), "--http", "--reload"]
    serve += ["--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(serve, stdin=subprocess.DEVNULL)
    command = [npx, "--yes", INSPECTOR, "--transport", "http", "--server-url", url]
    print(
        f"Opening the MCP Inspector on {url}, reloading {spec} on change: {' '.join(command)}",
        file=sys.stderr,
    )
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
