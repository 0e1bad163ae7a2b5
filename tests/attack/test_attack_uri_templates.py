"""Hostile URIs against multi-segment resource templates (`{+path}`, `{/parts*}`, FastMCP's `{path*}`).

A multi-segment value may hold `/`, which is the point of it; it must never
climb out of where it starts, whether written plainly (`../`) or encoded
(`%2e%2e%2f`, `%5c`), nor be absolute, nor hold NUL. The official server with
the same templates is the reference for every verdict; the function must
never see a refused value. A long URI built to make a matcher backtrack is
answered within a deadline.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.shared.exceptions import MCPError as OfficialMCPError

from mcp_resolve import Client, MCPError, MCPServer

pytestmark = pytest.mark.anyio

HOSTILE_PATHS = [
    "../etc/passwd",
    "a/../../etc/passwd",
    "a/b/../../../x",
    "%2e%2e/x",
    "%2E%2E%2Fx",
    "a%2F..%2F..%2Fx",
    "..%5Cwindows",
    "a/..%5C..%5Cx",
    "%2Fetc%2Fpasswd",
    "/etc/passwd",
    "C:%5CWindows",
    "a%00b",
    "docs/%00",
]
BENIGN_PATHS = ["guide/install.md", "a/../b", "a/./b", "v1.0..v2.0/notes", "%252e%252e/x", "deep/er/still"]


def _define(mcp: Any, seen: list[Any]) -> Any:
    @mcp.resource("manuals://{+path}")
    def manual(path: str) -> str:
        seen.append(path)
        return f"manual {path}"

    @mcp.resource("tree://root{/parts*}")
    def tree(parts: list[str]) -> str:
        seen.append(parts)
        return f"tree {parts}"

    return mcp


async def _read(client: Any, uri: str) -> Any:
    try:
        return (await client.read_resource(uri)).contents[0].text
    except (OfficialMCPError, MCPError):
        return "refused"


def _uris(values: list[str]) -> list[str]:
    return [f"manuals://{v}" for v in values] + [f"tree://root/{v}" for v in values]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_multi_segment_values_get_the_official_verdicts_and_hostile_ones_never_reach_the_function(
    mode: str,
) -> None:
    theirs_seen: list[Any] = []
    ours_seen: list[Any] = []
    official, ours = _define(OfficialServer("t"), theirs_seen), _define(MCPServer("t"), ours_seen)
    uris = _uris(HOSTILE_PATHS + BENIGN_PATHS)
    async with OfficialClient(official, mode=mode) as client:
        expected = {uri: await _read(client, uri) for uri in uris}
    async with Client(ours, mode=mode) as client:
        got = {uri: await _read(client, uri) for uri in uris}
    assert got == expected
    for uri in _uris(HOSTILE_PATHS):
        if uri != "tree://root//etc/passwd":  # segments '', 'etc', 'passwd': each one harmless
            assert got[uri] == "refused", uri
    assert got["manuals://a/../b"] == "manual a/../b" and got["manuals://%252e%252e/x"] == "manual %2e%2e/x"
    assert ours_seen == theirs_seen
    flat = [p for value in ours_seen for p in (value if isinstance(value, list) else [value])]
    assert not any(p.startswith(("..", "/")) or "\0" in p for p in flat)


async def test_fastmcp_star_form_is_guarded_the_same_way() -> None:
    seen: list[str] = []
    mcp = MCPServer("t")

    @mcp.resource("repo://files/{path*}")
    def file(path: str) -> str:
        seen.append(path)
        return path

    async with Client(mcp) as client:
        answers = {v: await _read(client, f"repo://files/{v}") for v in HOSTILE_PATHS + BENIGN_PATHS}
    assert {v for v, a in answers.items() if a == "refused"} == set(HOSTILE_PATHS)
    assert answers["guide/install.md"] == "guide/install.md"
    assert not any(p.startswith(("..", "/")) or "\0" in p for p in seen)


async def test_a_uri_built_to_make_the_matcher_backtrack_is_answered_within_a_deadline() -> None:
    mcp = MCPServer("t")

    @mcp.resource("s://{a}-{b}/{+path}/{c}.{d}")
    def four(a: str, b: str, path: str, c: str, d: str) -> str:
        return "matched"

    hostile = "s://" + "-" * 50_000 + "/" + "a/" * 20_000 + "." * 20_000
    async with Client(mcp) as client:
        with anyio.fail_after(20):  # a bound on a hang, not a speed claim
            assert await _read(client, hostile) in {"refused", "matched"}
            assert await _read(client, "s://x-y/p/q/c.d") == "matched"
