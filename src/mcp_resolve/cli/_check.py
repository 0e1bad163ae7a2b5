"""`mcp-resolve check`: the server imported (its graphs analysed), summarised in one line."""

from __future__ import annotations

from typing import Any

from ..prompts import Prompt
from ..resources import Resource, ResourceTemplate
from ..server import MCPServer
from ..tools import Tool

__all__ = ["check"]


def check(server: MCPServer) -> str:
    """Re-run registration analysis (with any dependency_overrides applied) and summarise the server."""
    components = server.components()
    resolvers: set[Any] = set()
    carried: set[Any] = set()
    for component in components:
        plans = component.signature.plans()
        resolvers.update(plans)
        carried.update(key for key, plan in plans.items() if plan.carry is not None)

    def count(kind: type, noun: str) -> str:
        n = sum(isinstance(c, kind) for c in components)
        return f"{n} {noun}{'' if n == 1 else 's'}"

    kinds = ", ".join(
        count(kind, noun)
        for kind, noun in (
            (Tool, "tool"),
            (Prompt, "prompt"),
            (Resource, "resource"),
            (ResourceTemplate, "template"),
        )
    )
    summary = f"OK {server.name}: {kinds}, {len(resolvers)} resolver{'' if len(resolvers) == 1 else 's'}"
    if carried:
        summary = f"{summary} ({len(carried)} carried across rounds)"
    hidden = sum(len(getattr(component, "hidden", ())) for component in components)  # mounts' `hide=`
    return f"{summary}, {hidden} hidden parameter{'' if hidden == 1 else 's'}" if hidden else summary
