"""The refund desk served by `mcp.run(transport="streamable-http", ...)` with small limits, for tests.

argv: port, read_timeout, max_connections, max_header_bytes.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "refund_desk"))

from server import mcp

from mcp_resolve.transports.http._fleet.limits import ServerLimits

if __name__ == "__main__":
    port, read_timeout, connections, header_bytes = sys.argv[1:5]
    limits = ServerLimits(
        read_timeout=float(read_timeout), max_connections=int(connections), max_header_bytes=int(header_bytes)
    )
    mcp.run(transport="streamable-http", host="127.0.0.1", port=int(port), limits=limits, log_level="warning")
