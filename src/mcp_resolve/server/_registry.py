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

Composition (`_mount`) talks to a registry through three small interfaces:
a `Watcher` hears what a mounted server files and removes (so the parent
follows it live, and may refuse a name first); `file_mounted` and
`unfile_mounted` keep the parent's copies, remembering which mount owns each
name, so a clash with the parent's own components or another mount's is
refused with both sides named, in either order; `completion_routes` send a
completion for a mounted prompt or template to the server it came from.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..prompts import Prompt
from ..resources import Resource, ResourceTemplate
from ..tools import Tool

if TYPE_CHECKING:
    from ._completion import Completer

__all__ = ["Component", "CompletionRoute", "Kind", "Registry", "Slot", "Watcher", "slot_of"]

Kind = Literal["tool", "resource", "prompt"]
Component = Tool | Prompt | Resource | ResourceTemplate
Slot = tuple[Literal["tool", "prompt", "resource", "template"], str]
"""Where a component is filed: its kind and its name (tools, prompts) or URI (resources, URI templates)."""


def slot_of(component: Component) -> Slot:
    if isinstance(component, Tool):
        return ("tool", component.name)
    if isinstance(component, Prompt):
        return ("prompt", component.name)
    if isinstance(component, ResourceTemplate):
        return ("template", component.uri)
    return ("resource", component.uri)


class Watcher(Protocol):
    """Hears what a registry files and removes (a mount following the server it mounted)."""

    def vet(self, component: Component) -> None:
        """Raise (ValueError) to refuse filing `component`; nothing has changed yet."""

    def filed(self, component: Component) -> None: ...

    def removed(self, slot: Slot) -> None: ...


class CompletionRoute(Protocol):
    """Answers the completions of the prompts and templates one mount brought."""

    def route(self, params: dict[str, Any]) -> tuple[Completer | None, dict[str, Any]] | None:
        """(the completer, the params as it expects them), or None when the ref is not this mount's."""

    def offers(self) -> bool:
        """Whether the mounted server completes anything."""


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
        self.completion_routes: list[CompletionRoute] = []
        """Where the completions of mounted prompts and templates go (`_mount`)."""
        self.mounted: list[Registry] = []
        """The registries of the servers mounted or imported here (so a mount that would make a cycle is refused)."""
        self._watchers: list[Watcher] = []
        self._owners: dict[Slot, object] = {}
        """The slots a mount filed, and which mount (told apart by identity; `str()` names it in errors)."""
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

    def completer_for(self, params: dict[str, Any]) -> tuple[Completer | None, dict[str, Any]]:
        """The completer for a `completion/complete` request, and its params (a mounted one's are unprefixed)."""
        for route in self.completion_routes:
            routed = route.route(params)
            if routed is not None:
                return routed
        return self.completer, params

    def offers_completion(self) -> bool:
        """Whether this server or a server mounted in it completes arguments."""
        return self.completer is not None or any(route.offers() for route in self.completion_routes)

    def offers_single_use(self) -> bool:
        """Whether any tool redeems each sealed requestState once (`single_use=True`)."""
        return any(tool.single_use for tool in self._tools.values())

    # -- filing ------------------------------------------------------------------------------
    def add_tool(self, tool: Tool) -> None:
        tool.detailed_errors = self.detailed_tool_errors
        self._file(tool)

    def add_resource(self, resource: Resource | ResourceTemplate) -> None:
        """File a resource under its URI, or a template under its URI template."""
        self._file(resource)

    def add_prompt(self, prompt: Prompt) -> None:
        self._file(prompt)

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; KeyError if there is none of that name."""
        if self._tools.pop(name, None) is None:
            raise KeyError(f"no tool named {name!r}")
        self._owners.pop(("tool", name), None)
        for watcher in list(self._watchers):
            watcher.removed(("tool", name))

    def _file(self, component: Component) -> None:
        """File one of this server's own components (a mount's name is refused: it is not ours to replace)."""
        slot = slot_of(component)
        owner = self._owners.get(slot)
        if owner is not None:
            raise ValueError(f"{_describe(slot)} is already served by {owner}: pick another name")
        self._store(slot, component)

    def vet(self, component: Component) -> None:
        """Ask every watcher (each server this one is mounted in, and theirs) whether it would take `component`."""
        for watcher in list(self._watchers):
            watcher.vet(component)

    def _store(self, slot: Slot, component: Component) -> None:
        self.vet(component)
        kind, key = slot
        table = self._table(slot)
        self._warn_if_taken(
            "tool" if kind == "tool" else "prompt" if kind == "prompt" else "resource", key, table
        )
        table[key] = component
        for watcher in list(self._watchers):
            watcher.filed(component)

    def _table(self, slot: Slot) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "tool": self._tools,
            "prompt": self._prompts,
            "resource": self._resources,
            "template": self._templates,
        }
        return tables[slot[0]]

    # -- composition (`_mount`) ----------------------------------------------------------------
    def watch(self, watcher: Watcher) -> None:
        """Tell `watcher` of every later filing and removal (before filing: `vet`, which may refuse)."""
        self._watchers.append(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.remove(watcher)

    def reaches(self, other: Registry) -> bool:
        """Whether `other` is this registry or one mounted in it, at any depth."""
        pending, seen = [self], set()
        while pending:
            registry = pending.pop()
            if registry is other:
                return True
            if id(registry) not in seen:
                seen.add(id(registry))
                pending.extend(registry.mounted)
        return False

    def check_free(self, slot: Slot, owner: object) -> None:
        """Refuse (ValueError, naming both sides) a slot `owner` would take that is already someone else's."""
        if slot[1] not in self._table(slot):
            return
        held_by = self._owners.get(slot)
        if held_by is owner:
            return  # the mount replacing its own (its server re-registered the name)
        side = str(held_by) if held_by is not None else "this server's own"
        raise ValueError(f"{_describe(slot)} from {owner} clashes with {side} {_describe(slot)}")

    def file_mounted(self, component: Component, owner: object) -> None:
        """File a mount's copy of a component, after `check_free` said its slot is free."""
        slot = slot_of(component)
        self.check_free(slot, owner)
        self._store(
            slot, component
        )  # may be refused by a server this one is mounted in: then nothing changed
        self._owners[slot] = owner

    def unfile_mounted(self, slot: Slot, owner: object) -> None:
        """Remove what `owner` filed in `slot` (its server removed it); anything else there stays."""
        if self._owners.get(slot) is not owner:
            return
        del self._owners[slot]
        self._table(slot).pop(slot[1], None)
        for watcher in list(self._watchers):
            watcher.removed(slot)

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; ValueError if there is none of that name (the official SDK's error)."""
        if self._prompts.pop(name, None) is None:
            raise ValueError(f"Unknown prompt: {name}")
        self._owners.pop(("prompt", name), None)
        for watcher in list(self._watchers):  # the servers this one is mounted in drop their copies
            watcher.removed(("prompt", name))

    def _warn_if_taken(self, kind: Kind, key: str, registered: Mapping[str, object]) -> None:
        """A second registration under one name replaces the first; say so unless told not to."""
        if key in registered and self.warn_on_duplicate[kind]:
            self.log.warning("%s already exists: %s (the new one replaces it)", kind.capitalize(), key)


def _describe(slot: Slot) -> str:
    kind, key = slot
    return f"{'resource template' if kind == 'template' else kind} {key!r}"
