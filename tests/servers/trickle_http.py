"""A real HTTP/1.1 server on loopback that answers well, or too slowly, as a test decides.

The attack on outbound fetches: an authorization server (its JWKS, its
introspection or metadata endpoint) that sends its headers at once and then
its body one byte a second. Each read succeeds within any per-read timeout,
so only a deadline on the whole fetch ends it. `mode` picks the behaviour for
the next connections:

- `"good"`: `answer(method, path, body)` as a JSON 200;
- `"trickle"`: a 200 with no length, then the start of a JSON document one
  byte every `byte_every_s` seconds, for as long as the server runs;
- `"trickle_head"`: the status line of a redirect, then its headers one
  byte every `byte_every_s` seconds, never finished;
- `"stall"`: the request is read and nothing is ever sent.

Plain threads and sockets, so its slowness is the network's and not an
event loop's: nothing here shares a loop with the code under test.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["TrickleServer"]

Answer = Callable[[str, str, bytes], Any]
_MAX_HEAD = 64 * 1024


class TrickleServer:
    """`with TrickleServer(answer) as server:` serves at `server.base` until the block ends."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.mode = "good"
        self.byte_every_s = 1.0
        self.connections = 0
        """Requests received so far (each on its own connection: the answers say `Connection: close`)."""
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self._sock.settimeout(0.1)
        self.base = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._lock = threading.Lock()

    def __enter__(self) -> TrickleServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                method, path, body = _read_request(conn)
            except (OSError, ValueError):
                return
            with self._lock:
                self.connections += 1
            mode = self.mode
            try:
                if mode == "good":
                    payload = json.dumps(self.answer(method, path, body)).encode()
                    head = (
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                        f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
                    )
                    conn.sendall(head.encode() + payload)
                elif mode == "trickle":
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
                    )
                    self._trickle(conn, b'{"keys": [' + b" " * 1_000_000)
                elif mode == "trickle_head":
                    conn.sendall(b"HTTP/1.1 302 Found\r\n")
                    self._trickle(conn, b"location: /elsewhere\r\nx-padding: " + b"." * 1_000_000)
                else:  # stall
                    self._stop.wait()
            except OSError:
                return  # the client gave up and closed: what a deadline is for

    def _trickle(self, conn: socket.socket, data: bytes) -> None:
        for index in range(len(data)):
            if self._stop.wait(self.byte_every_s if index else 0):
                return
            conn.sendall(data[index : index + 1])


def _read_request(conn: socket.socket) -> tuple[str, str, bytes]:
    conn.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk or len(data) > _MAX_HEAD:
            raise ValueError("no request")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(4096)
        if not chunk:
            break
        body += chunk
    return method, path, body
