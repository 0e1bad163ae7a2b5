"""The registry: what a server offers, by name, and the one policy for filing it.

`MCPServer.registry` holds the tools, resources, resource templates and
prompts, and the completion handler. `_registration` builds components and
files them here; `_methods` reads them to answer lists, calls, reads and
gets; anything else that needs a tool by name (the tasks extension, a
test) asks `registry.tool(name)`. The lookups are plain dicts read through
read-only `Mapping`s, so a request pays for a dict lookup and no more, and
only `add_*` and `remove_tool` change them.

Filing under a name already taken replaces the earlier component, with a
warning unless the server was built with `warn_on_duplicate_*=False`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from ..prompts import Prompt
from ..resources import Resource, ResourceTemplate
from ..tools import Tool

if TYPE_CHECKING:
    from ._completion import Completer

__all__ = ["Component", "Kind", "Registry"]

Kind = Literal["tool", "resource", "prompt"]
Component = Tool | Prompt | Resource | ResourceTemplate


class Registry:
    """What one server offers, by name: tools, resources, resource templates, prompts, and its completion handler."""

    def __init__(self, log: logging.Logger, warn_on_duplicate: Mapping[Kind, bool]) -> None:
        self.log = log
        self.warn_on_duplicate = dict(warn_on_duplicate)
        """Whether filing a second component under a taken name logs a warning, by kind."""
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self.tools: Mapping[str, Tool] = self._tools
        """The tools by name, in registration order (read-only: file with `add_tool`)."""
        self.resources: Mapping[str, Resource] = self._resources
        """The static resources by URI."""
        self.templates: Mapping[str, ResourceTemplate] = self._templates
        """The resource templates by URI template."""
        self.prompts: Mapping[str, Prompt] = self._prompts
        """The prompts by name."""
        self.completer: Completer | None = None
        """The `@mcp.completion()` handler, if one was registered."""
        self.detailed_tool_errors = False
        """Given to every tool filed from now on (`Tool.detailed_errors`)."""

    # -- lookups -----------------------------------------------------------------------------
    def tool(self, name: str) -> Tool | None:
        """The tool registered as `name`, or None."""
        return self._tools.get(name)

    def prompt(self, name: str) -> Prompt | None:
        """The prompt registered as `name`, or None."""
        return self._prompts.get(name)

    def components(self) -> list[Component]:
        """Everything registered: tools, prompts, resources, templates."""
        return [
            *self._tools.values(),
            *self._prompts.values(),
            *self._resources.values(),
            *self._templates.values(),
        ]

    def offers_single_use(self) -> bool:
        """Whether any tool redeems each sealed requestState once (`single_use=True`)."""
        return any(tool.single_use for tool in self._tools.values())

    # -- filing ------------------------------------------------------------------------------
    def add_tool(self, tool: Tool) -> None:
        self._warn_if_taken("tool", tool.name, self._tools)
        tool.detailed_errors = self.detailed_tool_errors
        self._tools[tool.name] = tool

    def add_resource(self, resource: Resource | ResourceTemplate) -> None:
        """File a resource under its URI, or a template under its URI template."""
        if isinstance(resource, ResourceTemplate):
            self._warn_if_taken("resource", resource.uri, self._templates)
            self._templates[resource.uri] = resource
        else:
            self._warn_if_taken("resource", resource.uri, self._resources)
            self._resources[resource.uri] = resource

    def add_prompt(self, prompt: Prompt) -> None:
        self._warn_if_taken("prompt", prompt.name, self._prompts)
        self._prompts[prompt.name] = prompt

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; KeyError if there is none of that name."""
        if self._tools.pop(name, None) is None:
            raise KeyError(f"no tool named {name!r}")

    def _warn_if_taken(self, kind: Kind, key: str, registered: Mapping[str, object]) -> None:
        """A second registration under one name replaces the first; say so unless told not to."""
        if key in registered and self.warn_on_duplicate[kind]:
            self.log.warning("%s already exists: %s (the new one replaces it)", kind.capitalize(), key)
