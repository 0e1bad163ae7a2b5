"""The `Host` header is read as RFC 9110 defines it: malformed values get 400, whatever the allow-list says.

Issue 35 found `localhost:80@evil.com`, `127.0.0.1:99999` and `localhost:abc`
accepted as loopback: the old check split on the first colon and matched the
name alone. Here the parser's verdicts, and real requests on uvicorn with raw
sockets (so the Host goes out exactly as written).
"""

from __future__ import annotations

import json
import socket

import pytest

from http_helpers import http_server
from mcp_resolve import MCPServer
from mcp_resolve.transports.http._wire.hosts import HostPolicy, parse_host

MALFORMED = [
    "localhost:80@evil.com",
    "127.0.0.1:99999",
    "localhost:abc",
    "localhost:-1",
    "localhost:123456",
    "::1",  # IPv6 needs brackets
    "[::1",
    "[::1]x",
    "[::1]:80:80",
    "[not-an-address]",
    "127.0.0.1:8000:1",
    "local host",
    "localhost/path",
    "user@localhost",
    "localhost%zz",
]


@pytest.mark.parametrize("value", MALFORMED)
def test_malformed_values_do_not_parse(value: str) -> None:
    assert parse_host(value) is None
    assert not HostPolicy(["*"]).allows(value)  # not even when every host is allowed


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("localhost", ("localhost", None)),
        ("LocalHost:8000", ("localhost", "8000")),
        ("127.0.0.1:0", ("127.0.0.1", "0")),
        ("127.0.0.1:65535", ("127.0.0.1", "65535")),
        ("[::1]:8000", ("::1", "8000")),
        ("[fe80::1%25eth0]", ("fe80::1%25eth0", None)),
        ("[v1.fe]:1", ("v1.fe", "1")),
        ("mcp.example.com:", ("mcp.example.com", None)),  # an empty port is the default one
        ("xn--bcher-kva.example", ("xn--bcher-kva.example", None)),
        ("a%41b.example", ("a%41b.example", None)),
    ],
)
def test_well_formed_values_parse(value: str, parsed: tuple[str, str | None]) -> None:
    assert parse_host(value) == parsed


def test_the_allow_list_matches_names_and_ports() -> None:
    policy = HostPolicy(None)  # loopback names, any port
    assert policy.allows("localhost:8000") and policy.allows("[::1]:8000") and policy.allows("127.0.0.1")
    assert not policy.allows("localhost:80@evil.com") and not policy.allows("evil.com")
    pinned = HostPolicy(["mcp.example.com:8443", "::1"])
    assert pinned.allows("mcp.example.com:8443") and pinned.allows("[::1]:1")
    assert not pinned.allows("mcp.example.com:443") and not pinned.allows("mcp.example.com")


def _post(port: int, host: str, origin: str | None = None) -> tuple[int, dict[str, object]]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    )
    if origin is not None:
        head += f"Origin: {origin}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(head.encode("latin-1") + b"\r\n" + body)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.partition(b"\r\n\r\n")[2] or b"{}")


@pytest.mark.anyio
@pytest.mark.slow
async def test_malformed_hosts_get_400_on_a_real_server() -> None:
    loopback, anything = MCPServer("hosts"), MCPServer("any-host")
    async with (
        http_server(loopback.streamable_http_app()) as base,
        http_server(anything.streamable_http_app(allowed_hosts=["*"])) as any_base,
    ):
        port, any_port = int(base.rsplit(":", 1)[1]), int(any_base.rsplit(":", 1)[1])
        for value in ("localhost:80@evil.com", "127.0.0.1:99999", "localhost:abc", "::1"):
            for target in (port, any_port):
                status, body = _post(target, value)
                assert status == 400, (value, target)
                assert body["error"] == {
                    "code": -32600,
                    "message": "Bad Request: malformed Host header (RFC 9110)",
                }
        assert _post(port, "evil.com")[0] == 403  # well-formed, not allowed
        past = [(any_port, "evil.com")]
        past += [(port, value) for value in ("localhost", "LOCALHOST:1", "127.0.0.1:65535", "[::1]:8000")]
        for target, value in past:  # past the Host check, to the session-less ping's own 400
            status, body = _post(target, value)
            assert status == 400 and body["error"]["message"].startswith("Bad Request: the Mcp-Session-Id")
        # An Origin whose authority is malformed is refused like a foreign one.
        assert _post(port, "localhost", origin="http://localhost:80@evil.com")[0] == 403
        assert (
            _post(port, "localhost", origin="http://localhost:8000")[0] == 400
        )  # allowed, then the ping's 400
