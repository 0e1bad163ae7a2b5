"""A line-level stdio peer for wire tests: spawn a server script, write raw lines, read parsed messages.

Every stdout line the server writes must parse as a JSON-RPC message (the
reader thread records any that does not, and `close()` fails on it), so each
test that uses this peer also checks that nothing but protocol reaches stdout.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

HERE = Path(__file__).resolve().parent
EVERYTHING_CORE = HERE / "everything_core.py"
WAIT = 20.0  # a generous bound on a reply that should come at once; only hit when something is broken

_END = object()


def modern_meta(**extra: Any) -> dict[str, Any]:
    """A valid 2026-07-28 `_meta` envelope."""
    return {
        PROTOCOL_VERSION_META_KEY: "2026-07-28",
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: {"name": "raw-test", "version": "0"},
        **extra,
    }


class RawStdio:
    """One server subprocess, driven a line at a time."""

    def __init__(self, script: Path = EVERYTHING_CORE, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self._ids = itertools.count(1000)
        self._lines: queue.Queue[Any] = queue.Queue()
        self.unparsable: list[bytes] = []
        self.notifications: list[dict[str, Any]] = []
        self.stderr = b""
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self.unparsable.append(line)
                continue
            if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0"):
                self.unparsable.append(line)
                continue
            self._lines.put(message)
        self._lines.put(_END)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    # -- writing ---------------------------------------------------------------------------
    def send_line(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message).encode())

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def start_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    # -- reading ---------------------------------------------------------------------------
    def receive(self) -> dict[str, Any]:
        """The next message, notifications included."""
        item = self._lines.get(timeout=WAIT)
        assert item is not _END, f"the server closed stdout; stderr:\n{self.stderr.decode(errors='replace')}"
        return item  # type: ignore[no-any-return]

    def reply(self) -> dict[str, Any]:
        """The next message that is not a notification (notifications are kept in `self.notifications`)."""
        while True:
            message = self.receive()
            if "id" in message and "method" not in message:
                return message
            self.notifications.append(message)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its response (which must be the next reply)."""
        request_id = self.start_request(method, params)
        response = self.reply()
        assert response["id"] == request_id, response
        return response

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        response = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        self.notify("notifications/initialized")
        return response

    # -- ending ----------------------------------------------------------------------------
    def close(self) -> tuple[int, list[dict[str, Any]]]:
        """Close stdin (EOF) and wait for exit: the exit code and every message not yet read."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=WAIT)
        rest: list[dict[str, Any]] = []
        while (item := self._lines.get(timeout=WAIT)) is not _END:
            rest.append(item)
        for reader in self._readers:
            reader.join(timeout=WAIT)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()  # read to the end by the reader threads
        assert not self.unparsable, f"non-protocol output on stdout: {self.unparsable[:3]!r}"
        return code, rest

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
