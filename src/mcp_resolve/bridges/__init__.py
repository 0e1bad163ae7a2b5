"""Bridges: tools that come from elsewhere (another server, an HTTP API), served as this server's own.

`bridged_tool` is the primitive every bridge builds on: a tool described by
a JSON Schema and an async call rather than a Python signature, with
`hide={"customer_id": Resolve(current_customer)}` keeping chosen arguments
out of the model's hands and filling them from the resolver graph. `as_proxy` (`MCPServer.as_proxy`) serves
another MCP server, over HTTP or stdio, through bridged tools; `mcp_resolve.bridges.openapi` builds them
from an OpenAPI description (`MCPServer.from_openapi`, `MCPServer.from_fastapi`).
"""

from ._proxy import as_proxy, caller_of
from ._tool import BridgeCall, BridgedTool, bridged_tool
from ._upstream import ProxyLimits

__all__ = ["BridgeCall", "BridgedTool", "ProxyLimits", "as_proxy", "bridged_tool", "caller_of"]
