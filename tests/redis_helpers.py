"""A real redis-server for tests: started on a free loopback port, stopped, restarted on the same port.

The binary is Debian's (`make test` installs it where missing). Nothing here
fakes Redis: the stores under test talk to this process over TCP. A module
or session fixture starts one server; tests that stop it restart it before
they end, so the next test finds it up.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from http_helpers import free_port

__all__ = ["RedisServer", "redis_server", "require_redis"]


def require_redis() -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "redis-server is not installed: run `make test` (it installs it) or apt-get install redis-server"
        )
    return binary


class RedisServer:
    """One redis-server process on 127.0.0.1:`port`, with its files in a directory of its own."""

    def __init__(self, port: int | None = None, *, extra: tuple[str, ...] = ()) -> None:
        self.binary = require_redis()
        self.port = port or free_port()
        self.extra = extra
        self.directory = Path(tempfile.mkdtemp(prefix="mcp-resolve-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.directory),
            "--maxmemory-policy", "noeviction",
            "--logfile", str(self.directory / "redis.log"),
            *self.extra,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                said = self.process.stdout.read() if self.process.stdout else b""  # errors before the log
                raise RuntimeError(f"redis-server exited: {said.decode(errors='replace')}{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as probe:
                    probe.sendall(b"INFO server\r\n")
                    if f"process_id:{self.process.pid}\r\n".encode() in _read_reply(probe):
                        return  # ours, not another process that happens to hold the port
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def start_fresh(self, attempts: int = 3) -> None:
        """`start` on a free port, taking another if a process elsewhere grabbed this one meanwhile."""
        for attempt in range(attempts):
            try:
                self.start()
                return
            except RuntimeError:
                self.stop()
                if attempt == attempts - 1:
                    raise
                self.port = free_port()

    def stop(self, *, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as probe:
            probe.sendall(b"FLUSHALL\r\n")
            probe.recv(16)

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def _read_reply(probe: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\r\n\r\n") and len(data) < 65536:
        chunk = probe.recv(4096)
        if not chunk:
            break
        data += chunk
        if (
            data.startswith(b"$")
            and data.count(b"\r\n") >= 2
            and len(data) >= int(data[1 : data.index(b"\r\n")]) + 4
        ):
            break
    return data


@contextmanager
def redis_server(**options: object) -> Iterator[RedisServer]:
    server = RedisServer(**options)  # type: ignore[arg-type]
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()
