"""Exceptions under the names of the official SDK's `mcp.server.mcpserver.exceptions`.

The same names, hierarchy and wire answers, so `raise` and `except` clauses
port by changing the import:

- `MCPServerError`: the base of `ToolError` and `ResourceError`.
- `ToolError`: from a tool or resolver, a tool error result the model reads.
  `UnexpectedToolError` (a `ToolError`) is what `mcp.call_tool()` raises
  around a crash, the original as `__cause__`.
- `ResourceError`: from a resource, JSON-RPC error -32603 with its message and
  `data.uri`; `ResourceNotFoundError`, the not-found answer (-32602 on
  2026-07-28, -32002 on the handshake era). From a tool, a tool error result.
  A crash in a resource answers -32603 naming only the URI
  (`UnexpectedResourceError`), its text kept in the server log.
- `InvalidSignature`: a handler the framework cannot serve, at registration (a
  `ValueError`, as the official raises there); `InvalidUriTemplate`, one of
  them: a resource URI template that cannot be matched (the official's
  `mcp.shared.uri_template.InvalidUriTemplate`).

`MCPError` (a JSON-RPC error of your choosing, the official's
`mcp.shared.exceptions.MCPError`) passes through all of the above unchanged,
as does its `UrlElicitationRequiredError` (-32042, with `data.elicitations`):
the client must send the person to those URLs before the request can succeed.
"""

from __future__ import annotations

from .errors import (
    InvalidSignature,
    InvalidUriTemplate,
    MCPError,
    MCPServerError,
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
    UrlElicitationRequiredError,
)

__all__ = [
    "InvalidSignature",
    "InvalidUriTemplate",
    "MCPError",
    "MCPServerError",
    "ResourceError",
    "ResourceNotFoundError",
    "ToolError",
    "UnexpectedResourceError",
    "UnexpectedToolError",
    "UrlElicitationRequiredError",
]
