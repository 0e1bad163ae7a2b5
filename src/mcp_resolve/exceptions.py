"""Exceptions under the names of the official SDK's `mcp.server.mcpserver.exceptions`.

`ToolError` and `InvalidSignature` are ours (from `mcp_resolve.errors`) and
behave as the official ones do for an author: a `ToolError` raised in a tool or
resolver ends the call with an error result the model reads. The official
`MCPServerError`, `ResourceError`, `ResourceNotFoundError`,
`UnexpectedResourceError` and `UnexpectedToolError` have no counterpart here
(docs/porting.md); raise `MCPError` from a resource for a protocol error.
"""

from __future__ import annotations

from .errors import InvalidSignature, MCPError, ToolError

__all__ = ["InvalidSignature", "MCPError", "ToolError"]
