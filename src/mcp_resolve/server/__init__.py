"""The server: `MCPServer`, the facade every transport serves, and the parts behind it.

`MCPServer` (in `_facade`) is what authors build and what the other layers are handed. Its work
lives in private parts, each with one job. The state they share is in components the facade owns
and hands them, never in its private attributes: the `registry`, the `deployment` and the shared
lifespan. The layers below know no class: `protocol/` and `transports/` ask for the small
`Protocol`s they own (`protocol.serves`, `transports._serves`), which `MCPServer` satisfies.

- `_registry`: what a server offers, by name (tools, resources, templates, prompts, completion);
- `_registration`: functions become tools, resources and prompts (all the analysis happens here);
- `_methods`: the era-free handlers for tools/*, resources/*, prompts/*, completion;
- `_serving`: the lifespan, shared by every transport and connection, and the choice of transport;
- `_deployment`: what a deployment gives a server (keys, stores) and whether it can work at all;
- `_direct`: `await mcp.call_tool(...)`, `read_resource`, `get_prompt` in this process, with no client;
- `_surface`: the official SDK's `settings`, `session_manager` and `custom_route` records;
- `_completion`: the `@mcp.completion()` handler;
- `_mount`: `mount` and `import_server`, one server served through another (it files renamed copies in
  the parent's registry and follows the mounted one through `Registry.watch`);
- `hooks` (public): where the extensions built into every server (tasks) plug in; the core never imports them.
"""

from ._deployment import Deployment
from ._direct import ReadResourceContents
from ._facade import MCPServer
from ._registry import Registry

__all__ = ["Deployment", "MCPServer", "ReadResourceContents", "Registry"]
