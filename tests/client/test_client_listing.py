"""Following a server's list pages is bounded: a repeated cursor, too many pages, too many items.

The server is a real stdio process written for the test, whose pages never end; the client must
fail with `ListingError` instead of listing forever. A page asked for by cursor is returned as is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_resolve.client import Client, listing
from mcp_resolve.client.listing import ListingError

PAGER = r"""
import json, sys
mode, per_page = sys.argv[1], int(sys.argv[2])
n = 0
def send(o): sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line); m, i = msg.get("method"), msg.get("id")
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "pager", "version": "1"}}})
    elif m == "tools/list":
        n += 1
        cursor = "again" if mode == "repeat" else f"page-{n}"
        if mode == "ends" and n == 3:
            cursor = None
        tools = [{"name": f"t{n}-{k}", "inputSchema": {"type": "object"}} for k in range(per_page)]
        result = {"tools": tools}
        if cursor:
            result["nextCursor"] = cursor
        send({"jsonrpc": "2.0", "id": i, "result": result})
    elif i is not None and m is not None:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "nope"}})
"""


@pytest.fixture
def pager(tmp_path: Path) -> Path:
    path = tmp_path / "pager_server.py"
    path.write_text(PAGER)
    return path


def client_for(pager: Path, mode: str, per_page: int = 1) -> Client:
    return Client([sys.executable, str(pager), mode, str(per_page)], mode="legacy", init_timeout=30)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_repeated_cursor_is_refused(pager: Path) -> None:
    async with client_for(pager, "repeat") as client:
        with pytest.raises(ListingError, match="gave a cursor it gave before"):
            await client.list_tools()
        page = await client.list_tools(cursor="again")  # one page by cursor: as the server sent it
        assert page.next_cursor == "again"


@pytest.mark.slow
@pytest.mark.anyio
async def test_pages_and_items_are_capped(pager: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "MAX_PAGES", 50)
    monkeypatch.setattr(listing, "MAX_ITEMS", 120)
    async with client_for(pager, "fresh") as client:
        with pytest.raises(ListingError, match="more than 50 pages"):
            await client.list_tools()
    async with client_for(pager, "fresh", per_page=40) as client:
        with pytest.raises(ListingError, match="more than 120 items"):
            await client.list_tools()
    async with client_for(pager, "ends", per_page=2) as client:
        assert len((await client.list_tools()).tools) == 6
