"""The W1 server of `servers/ours.py` with telemetry off (MCP_RESOLVE_TELEMETRY=false): the tracing row's baseline.

`make bench` serves W1 on HTTP 2026-07-28 from this beside `ours` (telemetry
on by default, no SDK configured) and `ours_sdk` (an SDK configured), so what
tracing costs is read within one run (README.md, "Tracing").

Run `python -m benchmarks.servers.ours_untraced http PORT`.
"""

from __future__ import annotations

import os

os.environ["MCP_RESOLVE_TELEMETRY"] = "false"  # read when the server is built, on import of .ours

from ._common import serve_from_argv
from .ours import mcp

assert mcp.telemetry is None

if __name__ == "__main__":
    serve_from_argv(mcp.run, mcp.streamable_http_app)
