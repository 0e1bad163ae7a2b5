"""The fleet desk as an ASGI app whose principal is the `X-Caller` header (`uvicorn fleet_receipts_app:app`).

A stand-in for authentication in tests of single-use receipts across a fleet:
a retry by the same principal gets its round's kept answer. Never name a
principal from a header a client can set outside a test.
"""

from __future__ import annotations

from fleet_desk import mcp

app = mcp.streamable_http_app(principal=lambda request: request.headers.get("x-caller"))
