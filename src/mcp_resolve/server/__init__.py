"""The server: `MCPServer`, the facade every transport serves, and the parts behind it.

`MCPServer` (in `_facade`) is what authors build and what the other layers are handed. Its work
lives in private parts, each with one job, reached only through the facade or the small typed
interfaces in `_interfaces`:

- `_registration`: functions become tools, resources and prompts (all the analysis happens here);
- `_methods`: the era-free handlers for tools/*, resources/*, prompts/*, completion;
- `_serving`: the lifespan, shared by every transport and connection, and the choice of transport;
- `_deployment`: what a deployment gives a server (keys, stores) and whether it can work at all;
- `_direct`: `await mcp.call_tool(...)` in this process, with no client;
- `_completion`: the `@mcp.completion()` handler;
- `_hooks`: where the extensions built into every server (tasks) plug in; the core never imports them.
"""

from ._facade import MCPServer

__all__ = ["MCPServer"]
