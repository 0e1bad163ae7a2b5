"""A hostile HTTP client for the attack suite, and the server-side traceback catcher it is judged by.

`AttackHttp` sends raw bodies with any headers to a real uvicorn server and
reads every answer to its end: a status of 500 or more fails at once, and so
does a stack trace anywhere in a body or an SSE event. Questions the server
asks mid-call on the handshake era are answered (or the stream is dropped)
as the test decides, so no call waits forever on us. `Tracebacks` collects
every log record that carries a stack trace, from any logger, uvicorn's
included: malformed input earns a one-line reason, never a traceback.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from http_helpers import serving
from servers.attack_messages import HANDSHAKE, MODERN, SESSION, initialize_params
from servers.attack_stdio import decline, screen

__all__ = ["BOTH", "AttackHttp", "Tracebacks", "serving_with_tracebacks", "with_meta"]

_SSE_LINE_END = re.compile(r"\r\n|\r|\n")
BOTH = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
Answer = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""Answers a server's question with the `result` or `error` member of a response; None drops the stream."""


def with_meta(params: dict[str, Any], capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """`params` as a 2026-07-28 request carries them: the envelope in `_meta`."""
    meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: capabilities or {}}
    return {**params, "_meta": meta}


def sse_lines(response: httpx.Response) -> Iterator[str]:
    """The lines of an event stream, split only where SSE splits them.

    Not `iter_lines()`: `str.splitlines` also breaks at U+0085, U+2028 and
    others, which JSON carries unescaped inside strings.
    """
    pending = ""
    for chunk in response.iter_text():
        *lines, pending = _SSE_LINE_END.split(pending + chunk)
        yield from lines
    if pending:
        yield pending


class Tracebacks(logging.Handler):
    """Every log record that carries a stack trace."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if record.exc_info or "Traceback" in text:
            self.records.append(text)

    def take(self) -> list[str]:
        taken, self.records = self.records, []
        return taken


@contextmanager
def serving_with_tracebacks(app: Any) -> Iterator[tuple[str, Tracebacks]]:
    """Serve `app` under uvicorn (see http_helpers.serving); yields the MCP URL and the traceback catcher.

    uvicorn's own logger does not propagate to the root, so the catcher
    listens on both.
    """
    tracebacks = Tracebacks()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
    with serving(app) as base:
        for logger in loggers:
            logger.addHandler(tracebacks)
        try:
            yield f"{base}/mcp", tracebacks
        finally:
            for logger in loggers:
                logger.removeHandler(tracebacks)


class AttackHttp:
    """Raw exchanges with one MCP endpoint, as a well-behaved client and as a hostile one."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=15)
        del self.http.headers["accept"]  # httpx would send `Accept: */*` on its own

    def close(self) -> None:
        self.http.close()

    # -- a well-behaved client ------------------------------------------------------------------
    def modern(self, method: str, params: dict[str, Any], accept: str = BOTH["accept"]) -> dict[str, Any]:
        """A 2026-07-28 request with the headers a correct client sends; the response message."""
        headers = {**BOTH, "accept": accept, "mcp-protocol-version": MODERN, "mcp-method": method}
        if "name" in params:
            headers["mcp-name"] = params["name"]
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        final = self.exchange(body, list(headers.items()), None)
        assert final is not None
        return final

    def modern_result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.modern(method, params)
        assert "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    def open_session(self, capabilities: dict[str, Any] | None = None) -> str:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(capabilities)}
        opened = self.http.post(self.url, json=body, headers=BOTH)
        assert opened.status_code == 200, opened.text
        session: str = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        posted = self.http.post(self.url, json=initialized, headers=self.session_headers(session))
        assert posted.status_code == 202, posted.text
        return session

    @staticmethod
    def session_headers(session: str) -> dict[str, str]:
        return {**BOTH, "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE}

    def session_request(
        self,
        session: str,
        method: str,
        params: dict[str, Any],
        *,
        accept: str = BOTH["accept"],
        answer: Answer = decline,
    ) -> dict[str, Any] | None:
        """A handshake-era request on `session`; its response message, or None if `answer` dropped it."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        headers = {**self.session_headers(session), "accept": accept}
        return self.exchange(body, list(headers.items()), session, answer)

    def session_result(self, session: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.session_request(session, method, params)
        assert response is not None and "result" in response, response
        result: dict[str, Any] = response["result"]
        return result

    def close_session(self, session: str) -> None:
        self.http.delete(self.url, headers=self.session_headers(session))

    # -- a hostile one -------------------------------------------------------------------------
    def exchange(
        self,
        body: bytes,
        headers: list[tuple[Any, Any]],
        session: str | None,
        answer: Answer = decline,
    ) -> dict[str, Any] | None:
        """POST a body with exactly these headers (`SESSION` stands for `session`); read the answer to its end.

        Returns the JSON-RPC response that ended it, if there was one; None
        for an empty answer (202) or when `answer` chose to drop the stream.
        """
        real = (session or "0" * 32).encode()
        sent = [(name, real if value == SESSION else value) for name, value in headers]
        with self.http.stream("POST", self.url, content=body, headers=sent) as response:
            assert response.status_code < 500, (response.status_code, response.read())
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                text = response.read().decode("utf-8", errors="replace")
                screen(text, "an HTTP answer")
                return json.loads(text) if text else None
            final = None
            for line in sse_lines(response):
                screen(line, "an SSE event")
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[len("data:") :])
                if "method" not in message:
                    final = message
                elif "id" in message and session is not None:
                    reply = answer(message)
                    if reply is None:
                        return None  # leaving the block closes the connection mid-stream
                    self._reply(session, {"jsonrpc": "2.0", "id": message["id"], **reply})
            return final

    def _reply(self, session: str, message: dict[str, Any]) -> None:
        """Answer on the session the question came from, without a version header (a fuzzed
        `initialize` may have changed the session's version)."""
        posted = self.http.post(self.url, json=message, headers={**BOTH, "mcp-session-id": session})
        assert posted.status_code < 500, (posted.status_code, posted.text)
        screen(posted.text, "the answer to a reply")
