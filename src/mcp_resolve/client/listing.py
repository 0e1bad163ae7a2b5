"""Listing a server's tools, resources, resource templates and prompts: one page, or every page.

A list result may be cut into pages by the server; without a cursor the
client follows `nextCursor` to the end and returns one result holding every
item, with a cursor it returns that page as the server sent it.

Following is bounded, since the server decides when the pages end: at most `MAX_PAGES` pages
and `MAX_ITEMS` items in all, and a cursor the server already gave is refused (a loop). Past a
bound the listing fails with `ListingError` rather than returning a silently cut list; a caller
that wants more asks page by page with `cursor=`.
"""

from __future__ import annotations

from typing import Any

from mcp_types import ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult, ListToolsResult
from pydantic import BaseModel

from ..errors import INTERNAL_ERROR, MCPError
from .session import Send

__all__ = ["MAX_ITEMS", "MAX_PAGES", "ListingError", "list_items"]

MAX_PAGES = 1000
"""Pages followed for one whole listing."""
MAX_ITEMS = 100_000
"""Items gathered for one whole listing, over all its pages."""

_LIST_METHODS: dict[str, tuple[str, type[BaseModel]]] = {
    "tools": ("tools/list", ListToolsResult),
    "resources": ("resources/list", ListResourcesResult),
    "resourceTemplates": ("resources/templates/list", ListResourceTemplatesResult),
    "prompts": ("prompts/list", ListPromptsResult),
}


class ListingError(MCPError):
    """The server's pages did not end within the bounds, or it gave the same cursor twice."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


async def list_items(
    send: Send, key: str, cursor: str | None, *, max_pages: int | None = None, max_items: int | None = None
) -> Any:
    """The `key` list ("tools", "resources", ...): the page at `cursor`, or every page merged into one.

    `max_pages` and `max_items` default to `MAX_PAGES` and `MAX_ITEMS`.
    """
    max_pages = MAX_PAGES if max_pages is None else max_pages
    max_items = MAX_ITEMS if max_items is None else max_items
    method, model = _LIST_METHODS[key]
    if cursor is not None:
        return model.model_validate(await send(method, {"cursor": cursor}))
    items: list[Any] = []
    seen: set[str] = set()
    next_cursor: str | None = None
    for _ in range(max_pages):
        page = await send(method, {"cursor": next_cursor} if next_cursor else {})
        items.extend(page.get(key) or [])
        if len(items) > max_items:
            raise ListingError(f"{method}: more than {max_items} items; ask page by page with a cursor")
        next_cursor = page.get("nextCursor")
        if not next_cursor:
            return model.model_validate({key: items})
        if not isinstance(next_cursor, str) or next_cursor in seen:
            raise ListingError(
                f"{method}: the server gave a cursor it gave before; its pages would never end"
            )
        seen.add(next_cursor)
    raise ListingError(f"{method}: more than {max_pages} pages; ask page by page with a cursor")
