"""Registration: turning functions into tools, resources and prompts and filing them on a server.

The one place that writes a server's registries (`_tools`, `_resources`,
`_templates`, `_prompts`): every component resolves through the server's
`dependency_overrides`, and a second registration under a name replaces the
first with a warning unless `warn_on_duplicate_*` says not to. The public
decorators (`@mcp.tool()`, `@mcp.resource(uri)`, `@mcp.prompt()`) stay on
`MCPServer` with their documentation; this is what they do. Nothing here runs
while a request is served.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..prompts import Prompt
from ..resources import Resource, ResourceTemplate
from ..tools import Tool

if TYPE_CHECKING:
    from .._resource_security import ResourceSecurity
    from ._facade import MCPServer

__all__ = ["add_function_resource", "add_prebuilt_tool", "add_prompt", "add_resource", "add_tool"]


def add_tool(server: MCPServer, fn: Callable[..., Any], **options: Any) -> Tool:
    """Build a Tool from `fn` (what `@mcp.tool()` does) and register it."""
    options.setdefault("name", None)
    for key in ("title", "description", "annotations", "structured_output", "meta", "icons"):
        options.setdefault(key, None)
    options.setdefault("single_use", False)
    tool = Tool(fn, overrides=server.dependency_overrides, **options)
    _warn_if_duplicate(server, "tool", tool.name, server._tools)
    server._tools[tool.name] = tool
    return tool


def add_prebuilt_tool(server: MCPServer, tool: Tool) -> None:
    """A `Tool.from_function(...)` built before this server: it resolves through this server's overrides."""
    if not isinstance(tool, Tool):
        raise TypeError(f"tools= takes mcp_resolve.tools.Tool objects (Tool.from_function(fn)), not {tool!r}")
    tool.use_overrides(server.dependency_overrides)
    _warn_if_duplicate(server, "tool", tool.name, server._tools)
    server._tools[tool.name] = tool


def add_resource(server: MCPServer, resource: Resource | ResourceTemplate) -> None:
    """Register a resource or template built beforehand; it resolves through this server's overrides."""
    if not isinstance(resource, (Resource, ResourceTemplate)):
        raise TypeError(f"expected a Resource (Resource.from_function(fn, uri)), not {resource!r}")
    resource.use_overrides(server.dependency_overrides)
    registry: dict[str, Any] = (
        server._templates if isinstance(resource, ResourceTemplate) else server._resources
    )
    _warn_if_duplicate(server, "resource", resource.uri, registry)
    registry[resource.uri] = resource


def add_function_resource(
    server: MCPServer, fn: Callable[..., Any], uri: str, security: ResourceSecurity | None, **options: Any
) -> None:
    """Build a resource from `fn` (what `@mcp.resource(uri)` does); a URI with `{variables}` makes a template.

    A template's extracted values pass `security`, else the server's `resource_security`.
    """
    options = dict(uri=uri, **options, overrides=server.dependency_overrides)
    if "{" in uri:
        checks = security if security is not None else server.resource_security
        template = ResourceTemplate(fn, security=checks, **options)
        _warn_if_duplicate(server, "resource", uri, server._templates)
        server._templates[uri] = template
    else:
        _warn_if_duplicate(server, "resource", uri, server._resources)
        server._resources[uri] = Resource(fn, **options)


def add_prompt(server: MCPServer, fn: Callable[..., Any], **options: Any) -> None:
    """Build a Prompt from `fn` (what `@mcp.prompt()` does) and register it."""
    prompt = Prompt(fn, overrides=server.dependency_overrides, **options)
    _warn_if_duplicate(server, "prompt", prompt.name, server._prompts)
    server._prompts[prompt.name] = prompt


def _warn_if_duplicate(server: MCPServer, kind: str, key: str, registered: Mapping[str, Any]) -> None:
    """A second registration under one name replaces the first; say so unless told not to."""
    if key in registered and server._warn_on_duplicate[kind]:
        server.log.warning("%s already exists: %s (the new one replaces it)", kind.capitalize(), key)
