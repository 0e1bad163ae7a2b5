"""The limits `mcp.run(transport="streamable-http")` starts uvicorn with, tried from outside.

Each attack from issue 22 that took the default server down, on a real
server process started through `mcp.run` (so the test also proves the limits
are applied there): oversized headers, a body shorter than its
Content-Length, connections that never send a byte, more connections than
allowed; and the handshake-era session caps and sweep, on real uvicorn.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import PYTHON, TESTS, initialize_request
from http_helpers import free_port, http_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HERE = TESTS
READ_TIMEOUT = 1.0
MAX_CONNECTIONS = 20
MAX_HEADER_BYTES = 16 * 1024
JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def limited() -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [
        PYTHON,
        str(HERE / "servers" / "limits_server.py"),
        str(port),
        str(READ_TIMEOUT),
        str(MAX_CONNECTIONS),
        str(MAX_HEADER_BYTES),
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        yield port, server
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()


def _raw(port: int, data: bytes, *, wait: float = 10.0) -> bytes:
    """Send `data` on a fresh connection and read until the server closes it (or `wait` passes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        conn.sendall(data)
        chunks = []
        try:
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        except (ConnectionResetError, TimeoutError):
            pass
        return b"".join(chunks)


def _serves(port: int) -> bool:
    response = httpx.post(f"http://127.0.0.1:{port}/mcp", headers=JSON_AND_SSE, json=initialize_request({}))
    return response.status_code == 200


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_oversized_headers_get_431_and_cost_no_memory(limited: tuple[int, subprocess.Popen[bytes]]) -> None:
    port, server = limited
    before = _rss_kb(server.pid)
    sockets = []
    for _ in range(10):  # ten clients each start a 5 MB header and never finish it
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        try:
            for _ in range(80):
                conn.sendall(b"a" * 65536)
        except OSError:
            pass  # the server answered and closed: that is the point
        sockets.append(conn)
    answers = []
    for conn in sockets:
        try:
            answers.append(conn.recv(200))
        except OSError:
            answers.append(b"")
        conn.close()
    assert all(answer.startswith(b"HTTP/1.1 431") for answer in answers if answer), answers
    assert any(answers)
    assert _rss_kb(server.pid) - before < 30_000  # KiB; unbounded, it grew by hundreds of MB
    assert _serves(port)


def test_a_body_shorter_than_its_content_length_times_out(limited: tuple[int, Any]) -> None:
    port, _ = limited
    started = time.monotonic()
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""
    )
    answer = _raw(port, head)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert time.monotonic() - started < READ_TIMEOUT + 5
    assert _serves(port)


def test_headers_with_no_body_at_all_time_out(limited: tuple[int, Any]) -> None:
    port, _ = limited
    answer = _raw(
        port,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 10\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_silent_connections_are_closed_and_capped(limited: tuple[int, Any]) -> None:
    port, _ = limited
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(MAX_CONNECTIONS + 5)]
    try:
        crowded = httpx.post(
            f"http://127.0.0.1:{port}/mcp", headers=JSON_AND_SSE, json=initialize_request({})
        )
        assert crowded.status_code == 503  # past the connection limit: refused at once, not queued
        started = time.monotonic()
        for conn in silent:
            conn.settimeout(READ_TIMEOUT + 10)
            assert conn.recv(100) == b""  # the server closed it: a connection that says nothing is not held
        assert time.monotonic() - started < READ_TIMEOUT + 5
    finally:
        for conn in silent:
            conn.close()
    assert _serves(port)


# -- handshake-era sessions: capped per client, swept on a timer -----------------------------------
def _refund_app(**options: Any) -> Any:
    from conftest import REFUND_DESK, load_module

    return load_module(REFUND_DESK).mcp.streamable_http_app(**options)


async def _initialize(http: httpx.AsyncClient, base: str) -> httpx.Response:
    return await http.post(f"{base}/mcp", headers=JSON_AND_SSE, json=initialize_request({}))


async def test_one_client_cannot_take_every_session() -> None:
    """A client that opens session after session only ever replaces its own: the others still get in."""
    app = _refund_app(max_sessions=50, max_sessions_per_client=5)
    async with http_server(app) as base, httpx.AsyncClient() as http:
        opened = [(await _initialize(http, base)).status_code for _ in range(200)]
        assert opened == [200] * 200
        assert len(app.state.mcp_endpoint.sessions) == 5
        assert (await _initialize(http, base)).status_code == 200


async def test_a_client_whose_sessions_are_all_busy_gets_429() -> None:
    app = _refund_app(max_sessions_per_client=2)
    async with http_server(app) as base, httpx.AsyncClient(timeout=10) as http:
        streams = []
        for _ in range(2):
            session_id = (await _initialize(http, base)).headers["mcp-session-id"]
            get = http.build_request(
                "GET",
                f"{base}/mcp",
                headers={"accept": "text/event-stream", "mcp-session-id": session_id},
            )
            streams.append(await http.send(get, stream=True))  # a held GET stream keeps it busy
        try:
            refused = await _initialize(http, base)
            assert refused.status_code == 429 and refused.headers["retry-after"] == "60"
            assert "mcp-session-id" not in refused.headers
        finally:
            for stream in streams:
                await stream.aclose()


async def test_idle_sessions_are_swept_without_a_new_initialize() -> None:
    app = _refund_app(session_idle_timeout=1.5)  # long enough that none goes while the third is made
    async with http_server(app) as base, httpx.AsyncClient() as http:
        for _ in range(3):
            await _initialize(http, base)
        sessions = app.state.mcp_endpoint.sessions
        assert len(sessions) == 3
        deadline = time.monotonic() + 8
        while len(sessions) and time.monotonic() < deadline:
            await anyio_sleep(0.1)
        assert len(sessions) == 0


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)
