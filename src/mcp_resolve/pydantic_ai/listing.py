"""Listing tools, resources and prompts once, and knowing when to list again.

A list is kept until the server says it changed (`notifications/*/list_changed`)
or the toolset's last exit. On 2026-07-28 a list is also only as fresh as the
server says: its `ttlMs` (0, the default of most servers, ours included
unless `MCPServer(cache_ttl_ms=...)`, means "ask again every time"). On that
era change notifications come only on a `subscriptions/listen` stream, which
a `ChangeListener` holds open for as long as the toolset is entered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from ..client import Client
from ..errors import MCPError
from .connection import ToolsetClient

__all__ = ["ACKNOWLEDGED", "CHANGED", "ChangeListener", "Kind", "ListCache", "fetch_list"]

logger = logging.getLogger("mcp_resolve.pydantic_ai")

Kind = Literal["tools", "resources", "prompts"]
CHANGED: dict[str, Kind] = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
"""Which cached list each change notification makes stale."""
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
_LISTEN_FLAGS: dict[Kind, str] = {
    "tools": "toolsListChanged",
    "resources": "resourcesListChanged",
    "prompts": "promptsListChanged",
}
_ALL_KINDS: tuple[Kind, ...] = ("tools", "resources", "prompts")
RELISTEN_SECONDS = 1.0


@dataclass
class _Entry:
    items: list[Any]
    expires_at: float | None
    """anyio's clock; None: until a change notification or the exit."""


class ListCache:
    """The lists a toolset keeps, each with the deadline the server's `ttlMs` set (if any).

    A change announced while a list is being fetched may postdate the answer
    on its way, so each kind counts its changes, and a list fetched across one
    is used once but not kept.
    """

    def __init__(self) -> None:
        self._entries: dict[Kind, _Entry] = {}
        self._changes: dict[Kind, int] = {}

    def get(self, kind: Kind) -> list[Any] | None:
        entry = self._entries.get(kind)
        if entry is None:
            return None
        if entry.expires_at is not None and anyio.current_time() >= entry.expires_at:
            del self._entries[kind]
            return None
        return entry.items

    def changes(self, kind: Kind) -> int:
        """How many times `kind` was invalidated so far: read it before fetching, pass it to `put`."""
        return self._changes.get(kind, 0)

    def put(self, kind: Kind, items: list[Any], ttl_ms: int | None, changes: int) -> None:
        if changes != self.changes(kind):
            return  # the list changed while this copy was on its way
        expires_at = None if ttl_ms is None else anyio.current_time() + ttl_ms / 1000
        self._entries[kind] = _Entry(items, expires_at)

    def invalidate(self, kind: Kind | None = None) -> None:
        """Forget one list, or (None) all of them."""
        for each in (kind,) if kind is not None else _ALL_KINDS:
            self._entries.pop(each, None)
            self._changes[each] = self.changes(each) + 1


async def fetch_list(client: Client, method: str, key: str) -> tuple[list[dict[str, Any]], int | None]:
    """Every page of a list, and for how many milliseconds it may be kept (None: the era has no TTL).

    Several pages are as fresh as the stalest one; a page without `ttlMs` on
    2026-07-28 counts as 0, as the spec says.
    """
    items: list[dict[str, Any]] = []
    ttl_ms: int | None = None
    cursor: str | None = None
    while True:
        page = await client.request(method, {"cursor": cursor} if cursor else {})
        items.extend(page.get(key) or [])
        if client.is_modern:
            page_ttl = page.get("ttlMs")
            page_ttl = page_ttl if isinstance(page_ttl, int) and page_ttl > 0 else 0
            ttl_ms = page_ttl if ttl_ms is None else min(ttl_ms, page_ttl)
        cursor = page.get("nextCursor")
        if not cursor:
            return items, ttl_ms


class ChangeListener:
    """A `subscriptions/listen` stream for `kinds`, held open while the toolset is entered.

    `ready` is set once the server acknowledged the stream (from then on no
    change goes unheard) or refused it. While no stream is open a change could
    be missed, so each end of a stream calls `on_lost` (the toolset forgets
    its lists) before listening again. A server that does not offer the method
    is left alone: its lists then last only as long as their `ttlMs`.
    """

    def __init__(self, client: ToolsetClient, kinds: list[Kind], on_lost: Callable[[], None]) -> None:
        self.client = client
        self.kinds = kinds
        self.on_lost = on_lost
        self.ready = anyio.Event()
        self._subscription: Any = None
        self._stopping = False

    def heard(self, method: str, params: dict[str, Any]) -> None:
        """Every notification passes here: the acknowledgement names the stream (its request id)."""
        if method == ACKNOWLEDGED:
            self._subscription = (params.get("_meta") or {}).get(SUBSCRIPTION_ID_META_KEY)
            self.ready.set()

    async def run(self) -> None:
        notifications = {_LISTEN_FLAGS[kind]: True for kind in self.kinds}
        while not self._stopping:
            try:
                await self.client.request("subscriptions/listen", {"notifications": notifications})
            except (MCPError, ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                logger.debug("no change stream: %s", exc)
                self.on_lost()
                self.ready.set()
                return
            self._subscription = None
            self.on_lost()  # ended by the server (shutdown, a backlog): listen again
            await anyio.sleep(RELISTEN_SECONDS)

    async def stop(self) -> None:
        """End the stream the way the spec says a client does (`notifications/cancelled`).

        Closing an HTTP connection ends it anyway; a stdio server needs to be
        told, or it waits for the stream before exiting when its stdin closes.
        """
        self._stopping = True
        if self._subscription is not None and not self.client.is_http:
            with anyio.move_on_after(2, shield=True):
                await self.client.cancel_request(self._subscription, "the client is leaving")
