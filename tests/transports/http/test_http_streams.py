"""Long-lived streams and slow connections cannot take every connection, and end at once at shutdown.

Issue 35 found one client holding 2,000 `subscriptions/listen` streams: they
filled uvicorn's connection limit before the listen cap was reached, and
every other client got 503 for as long as they stayed open; slow connections
did the same for 30 s at a time; and SIGTERM with a stream open waited out
the 5 s graceful timeout, then logged a traceback. Here, on real uvicorn
(in-process, and `mcp.run` in a subprocess, SIGTERM included), with raw
sockets from distinct loopback addresses (127.0.0.1, 127.0.0.2, ...) as
distinct clients:

* streams are capped per client (429) and in all (503) while another client
  is still served;
* `X-Forwarded-For` counts only from a trusted proxy;
* the connections reserved for short requests stay free when streams are at their cap;
* connections per address are capped, and headers have a shorter deadline than bodies;
* SIGTERM ends listen and GET streams at once (the listen with its result), without a traceback.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

import httpx
import pytest

from conftest import PYTHON, SERVERS
from http_helpers import free_port, http_server, initialize_request
from mcp_resolve import MCPServer
from mcp_resolve.settings import InvalidSetting, load_settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
BOTH = "application/json, text/event-stream"


# -- raw HTTP from a chosen loopback address ---------------------------------------------------------
def _request(port: int, method: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _connect(port: int, source: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


class Opened:
    """One stream request's outcome: its status and, for a refusal, its JSON body; the socket stays open."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {data!r}"
            data += chunk
        head, _, self.rest = data.partition(b"\r\n\r\n")
        self.head = head.decode("latin-1")
        self.status = int(self.head.split(" ", 2)[1])
        self.body: Any = None
        if self.status != 200:
            length = int(
                next(h for h in self.head.split("\r\n") if h.lower().startswith("content-length"))[15:]
            )
            while len(self.rest) < length:
                self.rest += sock.recv(65536)
            self.body = json.loads(self.rest[:length])

    def read_until(self, marker: bytes, timeout: float = 10.0) -> bytes:
        """What the stream sent until `marker` (raises if it closed or went quiet first)."""
        self.sock.settimeout(timeout)
        while marker not in self.rest:
            chunk = self.sock.recv(65536)
            assert chunk, f"the stream ended before {marker!r}: {self.rest!r}"
            self.rest += chunk
        return self.rest

    def read_to_end(self, timeout: float) -> bytes:
        """Everything until the server closes the connection (raises TimeoutError if it does not in time)."""
        self.sock.settimeout(timeout)
        while chunk := self.sock.recv(65536):
            self.rest += chunk
        return self.rest

    def close(self) -> None:
        self.sock.close()


def listen(
    port: int, source: str = "127.0.0.1", headers: dict[str, str] | None = None, rid: int = 7
) -> Opened:
    """A `subscriptions/listen` POST; a 200 is read up to its acknowledgement."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": META},
        }
    ).encode()
    wire = {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "subscriptions/listen",
        "Accept": BOTH,
        **(headers or {}),
    }
    sock = _connect(port, source)
    sock.sendall(_request(port, "POST", wire, body))
    opened = Opened(sock)
    if opened.status == 200:
        opened.read_until(b"notifications/subscriptions/acknowledged")
    return opened


def hello(port: int, source: str = "127.0.0.1") -> int:
    """A short 2026-07-28 tools/call on its own connection: its HTTP status (200 with the tool's answer)."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=10) as http:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "hello", "arguments": {}, "_meta": META},
        }
        headers = {
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "hello",
            "Accept": BOTH,
        }
        reply = http.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers)
    if reply.status_code == 200:
        assert reply.json()["result"]["content"][0]["text"] == "hello"
    return reply.status_code


def session(port: int, source: str) -> str:
    """A handshake-era session opened from `source`: its id."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=10) as http:
        init = initialize_request()
        reply = http.post(f"http://127.0.0.1:{port}/mcp", json=init, headers={"Accept": BOTH})
        session_id = reply.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        headers = {"Accept": BOTH, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
        assert http.post(f"http://127.0.0.1:{port}/mcp", json=done, headers=headers).status_code == 202
    return session_id


def get_stream(port: int, session_id: str, source: str = "127.0.0.1") -> Opened:
    """A handshake-era session's GET stream; a 200 is read up to its opening (the headers)."""
    sock = _connect(port, source)
    headers = {
        "Accept": "text/event-stream",
        "Mcp-Session-Id": session_id,
        "MCP-Protocol-Version": "2025-11-25",
    }
    sock.sendall(_request(port, "GET", headers))
    return Opened(sock)


@contextmanager
def closing(opened: list[Opened]) -> Iterator[list[Opened]]:
    try:
        yield opened
    finally:
        for stream in opened:
            stream.close()


def streams_server() -> MCPServer:
    mcp = MCPServer("streams")

    @mcp.tool()
    def hello() -> str:
        return "hello"

    return mcp


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


# -- per client and in all, in-process ---------------------------------------------------------------
async def test_one_client_at_its_stream_cap_gets_429_while_another_is_served() -> None:
    app = streams_server().streamable_http_app(max_streams_per_client=3)
    async with http_server(app) as base:
        port = _port(base)
        with closing([listen(port) for _ in range(3)]) as held:
            assert [s.status for s in held] == [200, 200, 200]
            with closing([listen(port, rid=41)]) as (refused,):
                assert refused.status == 429 and "retry-after: 30" in refused.head.lower()
                assert refused.body["id"] == 41
                assert refused.body["error"]["message"].startswith(
                    "Too Many Requests: this client has 3 streams"
                )
            with closing([listen(port, "127.0.0.2")]) as (other,):
                assert other.status == 200  # another client listens
            assert hello(port) == 200  # and the capped client's short calls still go through
        # Closing its streams gives the client its slots back (once the server has seen them go).
        deadline = time.monotonic() + 5
        while (again := listen(port)).status != 200 and time.monotonic() < deadline:
            again.close()
            time.sleep(0.05)
        with closing([again]):
            assert again.status == 200


async def test_handshake_get_streams_count_against_the_same_cap() -> None:
    app = streams_server().streamable_http_app(max_streams_per_client=2)
    async with http_server(app) as base:
        port = _port(base)
        mine = session(port, "127.0.0.1")
        with closing([get_stream(port, mine), listen(port)]) as held:
            assert [s.status for s in held] == [200, 200]
            with closing([get_stream(port, mine)]) as (refused,):
                assert refused.status == 429
            with closing([get_stream(port, session(port, "127.0.0.2"), "127.0.0.2")]) as (other,):
                assert other.status == 200


async def test_streams_in_all_are_capped_with_503_and_short_calls_still_served() -> None:
    app = streams_server().streamable_http_app(max_streams=3, max_streams_per_client=2)
    async with http_server(app) as base:
        port = _port(base)
        with closing([listen(port), listen(port), listen(port, "127.0.0.2")]) as held:
            assert [s.status for s in held] == [200, 200, 200]
            with closing([listen(port, "127.0.0.3")]) as (full,):
                assert full.status == 503
                assert full.body["error"]["message"] == "Service Unavailable: too many open streams"
            assert hello(port, "127.0.0.3") == 200


# -- mcp.run in a subprocess ------------------------------------------------------------------------
class Served:
    """`streams_server.py` in a subprocess, its stderr in `log`."""

    def __init__(self, given: dict[str, Any], log: IO[bytes]) -> None:
        self.port = free_port()
        self.log = log
        command = [PYTHON, str(SERVERS / "streams_server.py"), str(self.port), json.dumps(given)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert self.process.poll() is None and time.monotonic() < deadline, self.stderr()
                time.sleep(0.05)

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def served(**given: Any) -> Iterator[Served]:
    with tempfile.TemporaryFile() as log:
        server = Served(given, log)
        try:
            yield server
        finally:
            server.stop()


def test_the_connections_reserved_for_short_requests_stay_free() -> None:
    limits = {"max_connections": 12, "reserved_connections": 4, "max_connections_per_address": None}
    with served(limits=limits, options={"max_streams_per_client": None}) as server:
        held: list[Opened] = []
        with closing(held):
            while len(held) < 12:
                stream = listen(server.port)
                held.append(stream)
                if stream.status != 200:
                    break
            # Streams got 12 - 4 connections; the next one was refused by the app, not by uvicorn.
            assert [s.status for s in held] == [200] * 8 + [503], [s.status for s in held]
            assert held[-1].body["error"]["message"] == "Service Unavailable: too many open streams"
            held.pop().close()
            assert [hello(server.port) for _ in range(3)] == [200, 200, 200]


def test_forwarded_for_counts_only_from_a_trusted_proxy() -> None:
    options = {"max_streams_per_client": 2}
    with served(options=options, trusted_proxies=["127.0.0.1"]) as trusting:
        port = trusting.port
        ada = {"X-Forwarded-For": "203.0.113.1"}
        with closing([listen(port, headers=ada), listen(port, headers=ada)]) as held:
            assert [s.status for s in held] == [200, 200]
            with closing([listen(port, headers=ada)]) as (third,):
                assert third.status == 429  # the client the proxy names is capped ...
            with closing([listen(port, headers={"X-Forwarded-For": "203.0.113.2"})]) as (bo,):
                assert bo.status == 200  # ... and another client behind the same proxy is not
    with served(options=options) as plain:
        port = plain.port
        with closing(
            [listen(port, headers={"X-Forwarded-For": f"203.0.113.{n}"}) for n in (1, 2, 3)]
        ) as held:
            # Not trusted: the header is ignored, all three come from 127.0.0.1.
            assert [s.status for s in held] == [200, 200, 429]


def test_connections_per_address_are_capped_and_headers_have_their_own_deadline() -> None:
    limits = {"max_connections_per_address": 4, "header_timeout": 1.0, "read_timeout": 30.0}
    with served(limits=limits) as server:
        silent = [_connect(server.port, "127.0.0.1") for _ in range(4)]
        try:
            crowded = _connect(server.port, "127.0.0.1")
            crowded.settimeout(5)
            with suppress(ConnectionResetError):
                answer = crowded.recv(200)
                assert answer.startswith(b"HTTP/1.1 503") or answer == b"", answer
            crowded.close()
            assert hello(server.port, "127.0.0.2") == 200  # another address is served meanwhile
            started = time.monotonic()
            for conn in silent:  # closed at the header deadline (1 s), long before the read deadline (30 s)
                conn.settimeout(10)
                assert conn.recv(100) == b""
            assert time.monotonic() - started < 5
        finally:
            for conn in silent:
                conn.close()
        assert hello(server.port) == 200  # their slots are free again
        # Headers trickled one line at a time get 408 at the header deadline, not after read_timeout.
        slow = _connect(server.port, "127.0.0.1")
        try:
            slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            started, answer = time.monotonic(), b""
            with suppress(OSError):
                while time.monotonic() - started < 6:
                    slow.sendall(b"X-Slow: a\r\n")
                    time.sleep(0.2)
            slow.settimeout(5)
            with suppress(OSError):
                answer = slow.recv(100)
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert time.monotonic() - started < 6
        finally:
            slow.close()


def test_sigterm_ends_open_streams_at_once_without_a_traceback() -> None:
    with served() as server:
        port = server.port
        stream = listen(port, rid=99)
        get = get_stream(port, session(port, "127.0.0.1"))
        with closing([stream, get]):
            assert stream.status == 200 and get.status == 200
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            # Both end well within uvicorn's 5 s graceful timeout; the listen stream with its result.
            listened = stream.read_to_end(timeout=4)
            get.read_to_end(timeout=4)
            server.process.wait(4)
            assert time.monotonic() - started < 4
        events = [
            json.loads(line[6:]) for line in listened.decode().splitlines() if line.startswith("data: {")
        ]
        assert (
            events[-1]["id"] == 99
            and events[-1]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 99
        )
        assert get.rest.endswith(b"0\r\n\r\n")  # the GET stream's body ended properly (chunked)
        log = server.stderr()
        assert "Shutting down" in log
        assert "Traceback" not in log and "ERROR" not in log, log


def test_trusted_proxies_are_addresses_or_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESOLVE_TRUSTED_PROXIES", "10.0.0.5, 10.0.0.0/8,::1")
    assert load_settings().trusted_proxies == ["10.0.0.5", "10.0.0.0/8", "::1"]
    for bad in ("nginx", "*", "10.0.0.0/33"):
        monkeypatch.setenv("MCP_RESOLVE_TRUSTED_PROXIES", bad)
        with pytest.raises(InvalidSetting, match=r"^MCP_RESOLVE_TRUSTED_PROXIES="):
            load_settings()
