"""The official SDK's ready-made resource kinds: `TextResource`, `BinaryResource`, `FileResource`, `DirectoryResource`.

Built with the same keywords on both SDKs and added to a server, each must be
listed and read the same by the official client and ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import resources as theirs

from mcp_resolve import Client, MCPServer
from mcp_resolve import resources as ours

pytestmark = pytest.mark.anyio


def _resources(kinds: Any, folder: Path) -> list[Any]:
    return [
        kinds.TextResource(uri="memo://hello", name="hello", text="Hello there", description="A greeting"),
        kinds.BinaryResource(uri="bin://four", data=b"\x00\x01\x02\x03"),
        kinds.FileResource(uri="file://notes", path=folder / "notes.md", mime_type="text/markdown"),
        kinds.FileResource(uri="file://logo", path=folder / "logo.png", mime_type="image/png"),
        kinds.DirectoryResource(uri="dir://folder", path=folder, pattern="*.md"),
    ]


def _dump(value: Any) -> Any:
    return value.model_dump(by_alias=True, exclude_none=True, mode="json")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_kind_is_listed_and_read_as_by_the_official_server(mode: str, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\nWritten down.", encoding="utf-8")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    official, mine = OfficialServer("kinds"), MCPServer("kinds")
    for resource in _resources(theirs, tmp_path):
        official.add_resource(resource)
    for resource in _resources(ours, tmp_path):
        mine.add_resource(resource)
    seen = []
    for client in (OfficialClient(official, mode=mode), Client(mine, mode=mode)):
        async with client:
            listed = [_dump(r) for r in (await client.list_resources()).resources]
            reads = {r["uri"]: _dump(await client.read_resource(r["uri"])) for r in listed}
        for read in reads.values():
            read.pop("_meta", None)  # the 2026-07-28 envelope's serverInfo, compared elsewhere
        seen.append((listed, reads))
    assert seen[1][0] == seen[0][0]
    for uri in seen[0][1]:
        assert seen[1][1][uri] == seen[0][1][uri], uri
    assert seen[1][1]["file://notes"]["contents"][0]["text"] == "# Notes\n\nWritten down."
    assert "blob" in seen[1][1]["file://logo"]["contents"][0]


def test_a_relative_path_or_unknown_encoding_is_refused_at_construction() -> None:
    for kind in (ours.FileResource, theirs.FileResource):
        with pytest.raises(ValueError):
            kind(uri="file://x", path=Path("relative.txt"))
        with pytest.raises(ValueError):
            kind(uri="file://x", path=Path("/tmp/x.txt"), encoding="no-such-codec")
