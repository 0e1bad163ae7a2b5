"""Registration: turning functions into tools, resources and prompts and filing them in a registry.

Every component resolves through the server's `dependency_overrides` (handed
in as `overrides`) and is filed in its `Registry`, which owns the
duplicate-name policy. The public decorators (`@mcp.tool()`,
`@mcp.resource(uri)`, `@mcp.prompt()`) stay on `MCPServer` with their
documentation; this is what they do, given the server's parts explicitly.
Nothing here runs while a request is served.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..prompts import Prompt
from ..resources import Resource, ResourceTemplate
from ..tools import Tool

if TYPE_CHECKING:
    from .._resource_security import ResourceSecurity
    from .._signature import Overrides
    from ._registry import Registry

__all__ = ["add_function_resource", "add_prebuilt_tool", "add_prompt", "add_resource", "add_tool"]


def add_tool(registry: Registry, overrides: Overrides, fn: Callable[..., Any], **options: Any) -> Tool:
    """Build a Tool from `fn` (what `@mcp.tool()` does) and register it."""
    options.setdefault("name", None)
    for key in ("title", "description", "annotations", "structured_output", "meta", "icons"):
        options.setdefault(key, None)
    options.setdefault("single_use", False)
    tool = Tool(fn, overrides=overrides, **options)
    registry.add_tool(tool)
    return tool


def add_prebuilt_tool(registry: Registry, overrides: Overrides, tool: Tool) -> None:
    """A `Tool.from_function(...)` built before this server: it resolves through this server's overrides."""
    if not isinstance(tool, Tool):
        raise TypeError(f"tools= takes mcp_resolve.tools.Tool objects (Tool.from_function(fn)), not {tool!r}")
    tool.use_overrides(overrides)
    registry.add_tool(tool)


def add_resource(registry: Registry, overrides: Overrides, resource: Resource | ResourceTemplate) -> None:
    """Register a resource or template built beforehand; it resolves through this server's overrides."""
    if not isinstance(resource, (Resource, ResourceTemplate)):
        raise TypeError(f"expected a Resource (Resource.from_function(fn, uri)), not {resource!r}")
    resource.use_overrides(overrides)
    registry.add_resource(resource)


def add_function_resource(
    registry: Registry,
    overrides: Overrides,
    fn: Callable[..., Any],
    uri: str,
    security: ResourceSecurity,
    **options: Any,
) -> None:
    """Build a resource from `fn` (what `@mcp.resource(uri)` does); a URI with `{variables}` makes a template.

    A template's extracted values pass `security` (the decorator's, else the server's).
    """
    options = dict(uri=uri, **options, overrides=overrides)
    if "{" in uri:
        registry.add_resource(ResourceTemplate(fn, security=security, **options))
    else:
        registry.add_resource(Resource(fn, **options))


def add_prebuilt_prompt(registry: Registry, overrides: Overrides, prompt: Prompt) -> None:
    """A `Prompt.from_function(...)` built before this server: it resolves through this server's overrides."""
    if not isinstance(prompt, Prompt):
        raise TypeError(f"expected a Prompt (Prompt.from_function(fn)), not {prompt!r}")
    prompt.use_overrides(overrides)
    registry.add_prompt(prompt)


def add_prompt(registry: Registry, overrides: Overrides, fn: Callable[..., Any], **options: Any) -> None:
    """Build a Prompt from `fn` (what `@mcp.prompt()` does) and register it."""
    registry.add_prompt(Prompt(fn, overrides=overrides, **options))
