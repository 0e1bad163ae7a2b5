"""`resource_security`: hostile values in resource-template URIs, over real HTTP, against the official SDK.

The same one-template server is built on the official `MCPServer` and on ours,
and the official client reads the same hostile URIs from both: traversal
(`..`, `%2e%2e`, encoded slashes and backslashes), absolute paths (POSIX,
Windows drive, UNC) and NUL bytes. With the default policy each is refused
before the function runs, answered as an unknown resource; with the checks
relaxed each reaches the function, decoded as the official SDK decodes it.
The verdicts and the values must agree with the official server's.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import ResourceSecurity as OfficialSecurity
from mcp.shared.exceptions import MCPError as OfficialMCPError

from http_helpers import http_server
from mcp_resolve import DEFAULT_RESOURCE_SECURITY, MCPServer, ResourceSecurity
from mcp_resolve._resource_security import contains_path_traversal, is_absolute_path

pytestmark = pytest.mark.anyio

HOSTILE = [
    "..",
    "%2e%2e",
    "%2E%2E",
    ".%2e",
    "..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "..%5C..%5Cwindows",
    "..\\..\\windows",
    "a%2F..%2F..%2Fb",
    "%2Fetc%2Fpasswd",
    "%5Cwindows",
    "%5C%5Cserver%5Cshare",
    "C:%5CWindows",
    "C:x",
    "a%00b",
    "x%00",
    "%00",
]
"""Values the default policy refuses (the official's verdicts; asserted against it below)."""

BENIGN = ["notes", "a..b", "1.0..2.0", "...", ".", "a%2F..%2Fb", "%252e%252e", "caf%C3%A9", "ab:c%3A"]
"""Values both servers serve: `..` only counts as a whole segment that climbs, and one decode only."""

RELAXED = ResourceSecurity(reject_path_traversal=False, reject_absolute_paths=False, reject_null_bytes=False)


def define(mcp: Any, seen: list[str]) -> Any:
    @mcp.resource("file://docs/{name}")
    def doc(name: str) -> str:
        seen.append(name)
        return f"doc:{name}"

    return mcp


async def _read_all(client: Any, values: list[str]) -> dict[str, Any]:
    """Each value's answer: the text read, or the error as (code, message, data)."""
    answers: dict[str, Any] = {}
    for value in values:
        uri = f"file://docs/{value}"
        try:
            result = await client.read_resource(uri)
        except OfficialMCPError as exc:
            answers[value] = ("error", exc.error.code, exc.error.message, exc.error.data)
        else:
            answers[value] = result.contents[0].text
    return answers


async def _both(mode: str, official_kw: dict[str, Any], our_kw: dict[str, Any]) -> tuple[Any, ...]:
    theirs_seen: list[str] = []
    ours_seen: list[str] = []
    theirs = define(OfficialServer("docs", **official_kw), theirs_seen)
    ours = define(MCPServer("docs", **our_kw), ours_seen)
    values = HOSTILE + BENIGN
    async with OfficialClient(theirs, mode=mode) as client:
        expected = await _read_all(client, values)
    async with (
        http_server(ours.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode) as client,
    ):
        got = await _read_all(client, values)
    return expected, got, theirs_seen, ours_seen


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_default_policy_refuses_what_the_official_refuses_before_the_function_runs(mode: str) -> None:
    expected, got, theirs_seen, ours_seen = await _both(mode, {}, {})
    refused = {value for value, answer in got.items() if isinstance(answer, tuple)}
    assert refused == {value for value, answer in expected.items() if isinstance(answer, tuple)}
    assert refused == set(HOSTILE)
    # Served values are identical, decoded once, as the official decodes them.
    assert {v: a for v, a in got.items() if v not in refused} == {
        v: a for v, a in expected.items() if v not in refused
    }
    assert got["%252e%252e"] == "doc:%2e%2e" and got["a%2F..%2Fb"] == "doc:a/../b"
    # The function never saw a hostile value, on either server.
    assert ours_seen == theirs_seen and not set(ours_seen) & {"..", "../etc/passwd", "a\x00b"}
    # Refused exactly as an unknown URI is: the not-found code for the era, data.uri; no hint of which check.
    code = -32602 if mode == "auto" else -32002
    for value in HOSTILE:
        uri = f"file://docs/{value}"
        assert got[value] == ("error", code, f"Unknown resource: {uri}", {"uri": uri})
        assert expected[value][1] == -32602 and expected[value][3] == {"uri": uri}
        assert expected[value][2] == got[value][2]  # the official's words: "Unknown resource: URI"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_relaxed_policy_hands_every_value_to_the_function_decoded_as_the_official_does(
    mode: str,
) -> None:
    relaxed = dict(reject_path_traversal=False, reject_absolute_paths=False, reject_null_bytes=False)
    expected, got, theirs_seen, ours_seen = await _both(
        mode, {"resource_security": OfficialSecurity(**relaxed)}, {"resource_security": RELAXED}
    )
    assert got == expected
    assert all(not isinstance(answer, tuple) for answer in got.values())
    assert got["%2e%2e%2f%2e%2e%2fetc%2fpasswd"] == "doc:../../etc/passwd"
    assert got["a%00b"] == "doc:a\x00b" and got["..\\..\\windows"] == "doc:..\\..\\windows"
    assert ours_seen == theirs_seen


@pytest.mark.slow
async def test_one_check_off_leaves_the_others_on() -> None:
    mcp = define(MCPServer("docs", resource_security=ResourceSecurity(reject_null_bytes=False)), seen := [])
    async with http_server(mcp.streamable_http_app()) as base, OfficialClient(f"{base}/mcp") as client:
        answers = await _read_all(client, ["a%00b", "%2e%2e", "%2Fetc"])
    assert answers["a%00b"] == "doc:a\x00b"
    assert isinstance(answers["%2e%2e"], tuple) and isinstance(answers["%2Fetc"], tuple)
    assert seen == ["a\x00b"]


@pytest.mark.slow
async def test_per_template_security_and_exempt_params() -> None:
    mcp = MCPServer("git")
    ranges: list[str] = []

    @mcp.resource("git://diff/{range}", security=ResourceSecurity(exempt_params={"range"}))
    def diff(range: str) -> str:  # the official SDK's own example names it so
        ranges.append(range)
        return f"diff {range}"

    @mcp.resource("git://file/{path}")
    def file(path: str) -> str:
        return path

    async with http_server(mcp.streamable_http_app()) as base, OfficialClient(f"{base}/mcp") as client:
        answers = await _read_all_uris(client, ["git://diff/..", "git://diff/%2Fx%00", "git://file/.."])
    assert answers["git://diff/.."] == "diff .." and answers["git://diff/%2Fx%00"] == "diff /x\x00"
    assert isinstance(answers["git://file/.."], tuple)
    assert ranges == ["..", "/x\x00"]


@pytest.mark.slow
async def test_a_refused_uri_never_falls_through_to_a_later_laxer_template() -> None:
    mcp = MCPServer("order")
    reached: list[str] = []

    @mcp.resource("file://a/{name}")
    def strict(name: str) -> str:
        reached.append("strict")
        return name

    @mcp.resource("file://{area}/{name}", security=RELAXED)
    def lax(area: str, name: str) -> str:
        reached.append("lax")
        return name

    async with http_server(mcp.streamable_http_app()) as base, OfficialClient(f"{base}/mcp") as client:
        answers = await _read_all_uris(client, ["file://a/%2e%2e", "file://b/%2e%2e"])
    assert isinstance(answers["file://a/%2e%2e"], tuple)
    assert answers["file://b/%2e%2e"] == ".."
    assert reached == ["lax"]


async def _read_all_uris(client: Any, uris: list[str]) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for uri in uris:
        try:
            answers[uri] = (await client.read_resource(uri)).contents[0].text
        except OfficialMCPError as exc:
            answers[uri] = ("error", exc.error.code, exc.error.message, exc.error.data)
    return answers


@pytest.mark.parametrize(
    "value",
    [
        "..",
        "../x",
        "a/../../x",
        "..\\x",
        "/etc",
        "\\x",
        "\\\\h\\s",
        "C:\\x",
        "c:x",
        "x\x00",
        "",
        ".",
        "a/../b",
        "1..2",
    ],
)
def test_the_checks_give_the_official_verdict_on_each_value(value: str) -> None:
    from mcp.shared.path_security import contains_path_traversal as theirs_traversal
    from mcp.shared.path_security import is_absolute_path as theirs_absolute

    assert contains_path_traversal(value) == theirs_traversal(value)
    assert is_absolute_path(value) == theirs_absolute(value)
    assert DEFAULT_RESOURCE_SECURITY.validate({"p": value}) == OfficialSecurity().validate({"p": value})
    assert DEFAULT_RESOURCE_SECURITY.validate({"p": ["ok", value]}) == OfficialSecurity().validate(
        {"p": ["ok", value]}
    )
