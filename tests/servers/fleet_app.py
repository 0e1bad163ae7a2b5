"""The refund desk as an ASGI app for `uvicorn servers.fleet_app:app --workers N` (tests of a fleet start)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "refund_desk"))

from server import mcp

app = mcp.streamable_http_app()
