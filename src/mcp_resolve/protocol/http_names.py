"""The header names Streamable HTTP defines, shared by the server's endpoint and the client.

Names only (lower case, as ASGI and httpx give them): how each side reads or
writes them is its transport's business.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["METHOD_HEADER", "NAME_FIELDS", "NAME_HEADER", "PROTOCOL_VERSION_HEADER", "SESSION_HEADER"]

SESSION_HEADER = "mcp-session-id"
"""Names a handshake-era session (2025-11-25 and earlier)."""
PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
NAME_FIELDS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
"""The body field each name-bearing method mirrors into `Mcp-Name` (2026-07-28; tasks/* by the tasks extension)."""
