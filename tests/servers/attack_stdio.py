"""A stdio server process under fire: raw lines in, every line out screened, stderr kept in a file.

`FuzzStdio.send` writes whatever bytes a test gives it; `probe()` then sends
a `ping` and reads until its answer, which proves the server is alive and
still reading. On the way every stdout line must be a JSON-RPC message with
no traceback in it, and any question the server asks is answered (by
default declined, as a client that declared nothing would), so no call is
left waiting on us. stderr goes to a file rather than a pipe: the server
can never block on it, and whatever it logged before an answer is there to
read once the answer has arrived.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["WAIT", "FuzzStdio", "Respawning", "decline", "screen"]

WAIT = 20.0  # a generous bound on an answer that should come at once; only reached when something is broken
_END = object()
LEAKS = ("Traceback", 'File "')


def decline(question: dict[str, Any]) -> dict[str, Any]:
    """What a client that wants nothing to do with a question answers: decline a form, refuse the rest."""
    if question["method"] == "elicitation/create":
        return {"result": {"action": "decline"}}
    return {"error": {"code": -32601, "message": "this client answers no such request"}}


def screen(text: str, where: str) -> None:
    """Fail when `text` (an answer, a log) carries a stack trace."""
    for leak in LEAKS:
        assert leak not in text, f"{leak!r} in {where}:\n{text[-3000:]}"


class FuzzStdio:
    """One server process, fed raw lines; start it with `with FuzzStdio([...], path) as peer:`."""

    def __init__(self, command: list[str], stderr_path: Path, env: dict[str, str] | None = None) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 (closed in close())
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env
        )
        self._ids = itertools.count(1)
        self._lines: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr_seen = 0
        self.answer: Callable[[dict[str, Any]], dict[str, Any]] = decline
        """How a question from the server is answered: its `result` or `error` member, by default a decline."""

    def __enter__(self) -> FuzzStdio:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(_END)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    # -- writing -----------------------------------------------------------------------------
    def send(self, line: bytes) -> None:
        """Write one raw line (a newline is added); a closed pipe means the server died."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise AssertionError(self._death()) from None

    def send_message(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode())

    def probe(self) -> None:
        """A ping under an id no fuzzed message uses, and its answer."""
        self.request("ping", None)

    def request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send a request under a fresh id and return its response, handling what comes before it."""
        request_id = f"attack-{next(self._ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_message(message)
        return self._until(request_id)

    # -- reading -----------------------------------------------------------------------------
    def _until(self, request_id: str) -> dict[str, Any]:
        while True:
            try:
                raw = self._lines.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no answer to {request_id} within {WAIT}s") from None
            if raw is _END:
                raise AssertionError(self._death())
            message = self._parse(raw)
            if "method" in message and "id" in message:
                self.send_message({"jsonrpc": "2.0", "id": message["id"], **self.answer(message)})
            elif message.get("id") == request_id and "method" not in message:
                return message

    def _parse(self, raw: bytes) -> dict[str, Any]:
        text = raw.decode("utf-8", errors="replace")
        screen(text, "a stdout line")
        message = json.loads(text)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", text
        return message

    def new_stderr(self) -> str:
        """What the server logged since the last call."""
        data = self.stderr_path.read_bytes()
        new, self._stderr_seen = data[self._stderr_seen :], len(data)
        return new.decode("utf-8", errors="replace")

    def _death(self) -> str:
        try:
            code = self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            code = None
        stderr = self.stderr_path.read_text(encoding="utf-8", errors="replace")
        return f"the server exited (code {code}); stderr:\n{stderr[-3000:]}"

    # -- ending ------------------------------------------------------------------------------
    def close(self) -> int | None:
        """EOF on stdin, then wait for the exit (killing after WAIT); the exit code, None when killed."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        try:
            code: int | None = self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = None
        self._reader.join(timeout=WAIT)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()
        return code


class Respawning:
    """A server command kept alive across examples: a dead process is replaced (and set up) on demand.

    A fuzzing example that kills the server then fails by itself, and the
    next one (hypothesis shrinking it, say) starts on a fresh process.
    """

    def __init__(
        self, command: list[str], directory: Path, label: str, setup: Callable[[FuzzStdio], None]
    ) -> None:
        self.command, self.directory, self.label, self.setup = command, directory, label, setup
        self.starts = 0
        self._peer: FuzzStdio | None = None

    def peer(self) -> FuzzStdio:
        if self._peer is not None and self._peer.alive:
            return self._peer
        if self._peer is not None:
            self._peer.close()
        self.starts += 1
        self._peer = peer = FuzzStdio(self.command, self.directory / f"{self.label}-{self.starts}.stderr")
        self.setup(peer)
        return peer

    def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request that must succeed; its result."""
        response = self.peer().request(method, params)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    def close(self) -> None:
        if self._peer is not None:
            self._peer.close()
