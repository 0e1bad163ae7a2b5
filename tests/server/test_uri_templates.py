"""Resource templates with RFC 6570 operators (`{+path}`, `{/seg*}`, `{?q}`, ...), matched as the official SDK matches.

The official SDK's parser (`mcp.shared.uri_template`) is the reference: for
each template and URI below, ours must find the same variables (or the same
"no match"), and refuse the same malformed templates at registration. FastMCP's
`{path*}` (a multi-segment string, which the official refuses) is accepted too,
matched as FastMCP matches it. Reads through a client must then give the
function those values on both servers. Hostile values are in
tests/attack/test_attack_uri_templates.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp.resources.template import match_uri_template
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.shared.uri_template import UriTemplate as OfficialTemplate

from mcp_resolve import Client, MCPServer
from mcp_resolve._uri_template import UriTemplate
from mcp_resolve.errors import InvalidSignature, InvalidUriTemplate

CASES: dict[str, list[str]] = {
    "file://{name}": ["file://a", "file://", "file://a/b", "file://a%2Fb", "file://a,b", "file://a?b"],
    "manuals://{+path}": [
        "manuals://a/b/c",
        "manuals://a/../b",
        "manuals://",
        "manuals://a?x=1",
        "manuals://a%2Fb",
        "manuals://a#b",
    ],
    "files://x{/path*}": ["files://x/a/b", "files://x", "files://x/", "files://x/a%2Fb", "files://xa"],
    "s://items{?q,limit}": [
        "s://items?q=a&limit=3",
        "s://items?limit=3&q=a",
        "s://items",
        "s://items?q=a&z=1",
        "s://items?q=a%20b",
        "s://itemsx?q=1",
        "s://items?",
    ],
    "s://{a}/{b}": ["s://x/y", "s://x/y/z", "s:///y", "s://x/"],
    "s://{+path}{.ext}": ["s://a/b.c.txt", "s://abc", "s://a.b/c"],
    "s://x{#frag}": ["s://x#a/b", "s://x", "s://x#"],
    "s://x{;id}": ["s://x;id=3", "s://x;id", "s://x;idd=3"],
    "s://x{;ids*}": ["s://x;ids=3;ids=4", "s://x"],
    "s://x{.fmt}": ["s://x.json", "s://x", "s://x.a.b"],
    "s://x{.parts*}": ["s://x.a.b", "s://x"],
    "s://{a}-{b}": ["s://x-y-z", "s://-"],
    "s://{a,b}": ["s://x,y", "s://x,y,z"],
    "s://{+path}/raw": ["s://a/b/raw", "s://a/raw/raw", "s://raw"],
    "s://{a}/{+path}": ["s://x/y/z", "s://x/", "s://x"],
    "s://{a}/{+path}/{b}.{c}": ["s://x/y/z/w.t", "s://x/y/w.t.u"],
    "s://{/a,b}": ["s:///x/y", "s://x/y"],
    "s://{a}{?q}": ["s://x?q=1", "s://x"],
    "s://{a}.{b}/{c}": ["s://x.y.z/w"],
}

REFUSED = [
    "s://{a}{b}",  # adjacent: no literal to cut at
    "s://{+a}/{+b}",  # two multi-segment variables
    "s://{a:3}",  # prefix modifier
    "s://{?q*}",  # exploded query
    "s://{a",
    "s://{}",
    "s://{+a}{b}",
    "s://{a}/{a}",
    "s://{=a}",
]


@pytest.mark.parametrize("template", list(CASES))
def test_matching_agrees_with_the_official_parser(template: str) -> None:
    ours, theirs = UriTemplate(template), OfficialTemplate.parse(template)
    for uri in CASES[template]:
        assert ours.match(uri) == theirs.match(uri), uri


@pytest.mark.parametrize("template", REFUSED)
def test_a_malformed_template_is_refused_at_registration_as_by_the_official(template: str) -> None:
    with pytest.raises(ValueError):
        OfficialTemplate.parse(template)
    mcp = MCPServer("t")
    with pytest.raises(InvalidUriTemplate) as refused:
        mcp.resource(template)(lambda **kw: "")
    # Both catch sites work: ours, and the official's ValueError.
    assert isinstance(refused.value, InvalidSignature) and isinstance(refused.value, ValueError)
    assert refused.value.template == template


def test_fastmcp_star_form_takes_several_segments_as_fastmcp_does() -> None:
    template = UriTemplate("repo://{owner}/files/{path*}")
    for uri in ["repo://ada/files/src/main.py", "repo://ada/files/a", "repo://ada/files/a%20b/c"]:
        assert template.match(uri) == match_uri_template(uri, "repo://{owner}/files/{path*}"), uri
    with pytest.raises(ValueError):
        OfficialTemplate.parse("repo://{owner}/files/{path*}")  # the official does not accept this form


def _define(mcp: Any) -> Any:
    @mcp.resource("manuals://{+path}")
    def manual(path: str) -> str:
        return f"manual {path}"

    @mcp.resource("tree://root{/parts*}")
    def tree(parts: list[str]) -> str:
        return f"tree {parts}"

    @mcp.resource("search://items{?q,limit}")
    def search(q: str = "", limit: str = "10") -> str:
        return f"search {q!r} {limit}"

    return mcp


READS = [
    "manuals://guide/install/linux.md",
    "manuals://a%2Fb/c",
    "tree://root/x/y/z",
    "tree://root",
    "search://items?limit=3&q=owl",
    "search://items",
]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_reads_give_the_function_what_the_official_gives_it(mode: str) -> None:
    official, ours = _define(OfficialServer("t")), _define(MCPServer("t"))
    async with OfficialClient(official, mode=mode) as client:
        expected = {uri: (await client.read_resource(uri)).contents[0].text for uri in READS}  # type: ignore[union-attr]
        their_templates = sorted(
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        )
    async with Client(ours, mode=mode) as client:
        got = {uri: (await client.read_resource(uri)).contents[0].text for uri in READS}  # type: ignore[union-attr]
        our_templates = sorted(
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        )
    assert got == expected
    assert got["manuals://guide/install/linux.md"] == "manual guide/install/linux.md"
    assert got["tree://root/x/y/z"] == "tree ['x', 'y', 'z']"
    assert our_templates == their_templates
