"""`mcp-resolve list SERVER`: what a server offers, as its clients see it.

Tools with their model-facing parameters, then resources, resource templates and prompts. For a
server file the tools' resolved parameters are shown too, marked as such: they are read from the
server's own signatures (the wire carries only what the model may send), so the listing says what
the model cannot set. `--json` prints the same as one JSON object.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from ..client.listing import ListingError
from ..errors import MCPError
from ._connect import Connection, is_url
from ._target import CLIError, load_server
from ._terminal import Terminal, console, safe

__all__ = ["list_server", "listing_deadline", "resolved_parameters"]


def resolved_parameters(server: str | None) -> dict[str, list[str]]:
    """Tool name -> its resolved parameters, for a server file (a URL or a command tells nothing)."""
    if server is None or is_url(server):
        return {}
    from ..tools import Tool

    loaded = load_server(server)
    return {
        component.name: list(component.signature.resolved_params)
        for component in loaded.components()
        if isinstance(component, Tool)
    }


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")  # type: ignore[no-any-return]


async def _optional(capability: str, capabilities: dict[str, Any], fetch: Any) -> list[dict[str, Any]]:
    """One kind of listing; empty when the server does not offer that kind."""
    if capability not in capabilities:
        return []
    try:
        page = await fetch()
    except ListingError:
        raise
    except MCPError:
        return []
    return [_dump(item) for item in getattr(page, _ATTRIBUTE[capability])]


_ATTRIBUTE = {"resources": "resources", "templates": "resource_templates", "prompts": "prompts"}


async def gather(connection: Connection, terminal: Terminal) -> dict[str, Any]:
    """Every listing of the server, all within one deadline (`--timeout`) once connected."""
    async with connection.client(terminal) as client:
        with listing_deadline(connection.timeout):
            tools = [_dump(tool) for tool in (await client.list_tools()).tools]
            capabilities = dict(client.server_capabilities)
            if "resources" in capabilities:
                capabilities["templates"] = capabilities["resources"]
            return {
                "server": {**(client.server_info or {}), "protocolVersion": client.protocol_version},
                "tools": tools,
                "resources": await _optional("resources", capabilities, client.list_resources),
                "resourceTemplates": await _optional(
                    "templates", capabilities, client.list_resource_templates
                ),
                "prompts": await _optional("prompts", capabilities, client.list_prompts),
            }


@contextmanager
def listing_deadline(seconds: float) -> Iterator[None]:
    """One deadline over a whole listing, however many pages the server sends; a clear error past it."""
    try:
        with anyio.fail_after(seconds):
            yield
    except TimeoutError:
        raise CLIError(f"the server's listing did not finish within {seconds:g}s (--timeout)") from None


def _parameters(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    shown = []
    for name, spec in schema.get("properties", {}).items():
        kind = spec.get("type") or ("|".join(str(o.get("type")) for o in spec.get("anyOf", [])) or "any")
        shown.append(f"{name}{'' if name in required else '?'}: {kind}")
    return ", ".join(shown)


def render(listing: dict[str, Any], resolved: dict[str, list[str]]) -> None:
    """The listing for a person: one tool per line, its resolved parameters under it."""
    from rich.markup import escape as escape_markup

    def escape(text: object) -> str:  # what the server sent: neither markup nor control characters
        return escape_markup(safe(text))

    out = console()
    info = listing["server"]
    out.print(
        f"[bold]{escape(str(info.get('name', 'server')))}[/] [dim](protocol {escape(info.get('protocolVersion'))})[/]"
    )
    out.print(f"\n[bold]tools[/] ({len(listing['tools'])})")
    for tool in listing["tools"]:
        head = f"  [green]{escape(tool['name'])}[/]({escape(_parameters(tool.get('inputSchema', {})))})"
        out.print(head)
        description = (tool.get("description") or "").strip().splitlines()
        if description:
            out.print(f"    [dim]{escape(description[0])}[/]")
        if resolved.get(tool["name"]):
            names = ", ".join(resolved[tool["name"]])
            out.print(f"    [yellow]resolved by the server, not the model:[/] {escape(names)}")
    sections = (
        ("resources", "resources", "uri"),
        ("resource templates", "resourceTemplates", "uriTemplate"),
        ("prompts", "prompts", "name"),
    )
    for title, key, field in sections:
        items = listing[key]
        if not items:
            continue
        out.print(f"\n[bold]{title}[/] ({len(items)})")
        for item in items:
            label = str(item.get(field, ""))
            if key == "prompts" and item.get("arguments"):
                label += "(" + ", ".join(str(a.get("name")) for a in item["arguments"]) + ")"
            extra = item.get("description") or item.get("name") or ""
            line = f"  [green]{escape(label)}[/]"
            if extra and extra != label:
                line += f"  [dim]{escape(str(extra).strip().splitlines()[0])}[/]"
            out.print(line)


async def list_server(connection: Connection, terminal: Terminal, *, as_json: bool) -> int:
    resolved = resolved_parameters(connection.server) if not connection.command else {}
    listing = await gather(connection, terminal)
    if as_json:
        for tool in listing["tools"]:
            if tool["name"] in resolved:
                tool["resolvedParameters"] = resolved[tool["name"]]
        sys.stdout.write(json.dumps(listing, indent=2) + "\n")
    else:
        render(listing, resolved)
    return 0
