"""Raw JSON-RPC over a real stdio server process, so a test controls `requestState` byte for byte.

`StatePeer` drives `tests/servers/state_server.py` (or the refund desk through
it) with newline-delimited JSON lines, and exposes what the tests judge by:
the events file (which handlers and resolvers ran) and the server's stderr
(where rejection reasons must go, and only there).
"""

from __future__ import annotations

import itertools
import json
import os
import selectors
import subprocess
import sys
from pathlib import Path
from typing import Any

STATE_SERVER = Path(__file__).resolve().parent / "state_server.py"
FROZEN = {"code": -32602, "message": "Invalid or expired requestState"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
READ_TIMEOUT = 30.0
_CONFIG_VARS = ("MCP_RESOLVE_STATE_KEYS", "STATE_SERVER_")


def accept(keys: Any, content: dict[str, Any]) -> dict[str, Any]:
    """inputResponses accepting every question of a round with the same form content."""
    return {key: {"action": "accept", "content": content} for key in keys}


class StatePeer:
    """One state-server process; start it with `with StatePeer(tmp, "a", {...}) as peer:`."""

    def __init__(self, directory: Path, label: str, env: dict[str, str]) -> None:
        self.events_path = Path(env.get("STATE_SERVER_EVENTS") or directory / f"{label}.events")
        self.stderr_path = directory / f"{label}.stderr"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(_CONFIG_VARS)}
        clean.update(env, STATE_SERVER_EVENTS=str(self.events_path), MCP_RESOLVE_LOG_LEVEL="INFO")
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            [sys.executable, str(STATE_SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=clean,
        )
        self._ids = itertools.count(1)
        self._selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self._selector.register(self.process.stdout, selectors.EVENT_READ)

    def __enter__(self) -> StatePeer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """End the process the way a client does (EOF on stdin) and wait for it."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._selector.close()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()

    def send_line(self, line: str) -> dict[str, Any]:
        """Write one raw line and return the next message the server writes back."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        if not self._selector.select(READ_TIMEOUT):
            raise AssertionError(f"no answer within {READ_TIMEOUT}s; stderr:\n{self.stderr()}")
        raw = self.process.stdout.readline()
        if not raw:
            raise AssertionError(f"server exited (code {self.process.poll()}); stderr:\n{self.stderr()}")
        message: dict[str, Any] = json.loads(raw)
        return message

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A modern-era request; returns the whole response message (result or error)."""
        request_id = next(self._ids)
        line = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": MODERN_META}}
        )
        response = self.send_line(line)
        assert response.get("id") == request_id, response
        return response

    def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.request(method, params)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    def events(self) -> list[str]:
        return self.events_path.read_text(encoding="utf-8").splitlines() if self.events_path.exists() else []

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")
