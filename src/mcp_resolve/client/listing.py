"""Listing a server's tools, resources, resource templates and prompts: one page, or every page.

A list result may be cut into pages by the server; without a cursor the
client follows `nextCursor` to the end and returns one result holding every
item, with a cursor it returns that page as the server sent it.
"""

from __future__ import annotations

from typing import Any

from mcp_types import ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult, ListToolsResult
from pydantic import BaseModel

from .session import Send

__all__ = ["list_items"]

_LIST_METHODS: dict[str, tuple[str, type[BaseModel]]] = {
    "tools": ("tools/list", ListToolsResult),
    "resources": ("resources/list", ListResourcesResult),
    "resourceTemplates": ("resources/templates/list", ListResourceTemplatesResult),
    "prompts": ("prompts/list", ListPromptsResult),
}


async def list_items(send: Send, key: str, cursor: str | None) -> Any:
    """The `key` list ("tools", "resources", ...): the page at `cursor`, or every page merged into one."""
    method, model = _LIST_METHODS[key]
    if cursor is not None:
        return model.model_validate(await send(method, {"cursor": cursor}))
    items: list[Any] = []
    next_cursor: str | None = None
    while True:
        page = await send(method, {"cursor": next_cursor} if next_cursor else {})
        items.extend(page.get(key) or [])
        next_cursor = page.get("nextCursor")
        if not next_cursor:
            break
    return model.model_validate({key: items})
