"""Bad input over stdio, a raw line at a time: each gets the right JSON-RPC answer and the server keeps serving.

One handshake-era server process serves the parametrized cases in turn; after
every case the next valid request must still succeed, and when the module is
done the process must exit with 0 on EOF having written nothing but
JSON-RPC to stdout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_types import PROTOCOL_VERSION_META_KEY

from servers.raw_stdio import RawStdio, modern_meta

pytestmark = pytest.mark.slow  # one server process for the module

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
RESOURCE_NOT_FOUND, UNSUPPORTED_VERSION = -32002, -32022

TEN_MB = 10 * 1024 * 1024


@pytest.fixture(scope="module")
def served() -> Iterator[RawStdio]:
    """An initialized handshake-era server shared by the bad-input cases; checked on the way out."""
    peer = RawStdio()
    try:
        assert peer.initialize()["result"]["protocolVersion"] == "2025-11-25"
        yield peer
        code, rest = peer.close()
        assert code == 0, peer.stderr.decode(errors="replace")
        assert rest == [], f"messages nobody asked for: {rest}"
    finally:
        peer.kill()


def _still_serving(peer: RawStdio) -> None:
    response = peer.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert response["result"]["structuredContent"] == {"result": 5}


def _request(method: str, params: dict[str, Any] | None = None, request_id: Any = 7) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


# (raw line, expected code, expected id, a word the message must contain)
BAD_LINES: dict[str, tuple[bytes, int, Any, str]] = {
    "garbage": (b"this is not json {", PARSE_ERROR, None, "Parse error"),
    "truncated json": (b'{"jsonrpc": "2.0", "id": 1, "method": "pi', PARSE_ERROR, None, "Parse error"),
    "ten megabytes of garbage": (b"x" * TEN_MB, PARSE_ERROR, None, "Parse error"),
    "json array": (b"[1, 2, 3]", INVALID_REQUEST, None, "Invalid Request"),
    "json string": (b'"hello"', INVALID_REQUEST, None, "Invalid Request"),
    "no jsonrpc member": (b'{"id": 3, "method": "ping"}', INVALID_REQUEST, 3, "jsonrpc"),
    "wrong jsonrpc version": (
        b'{"jsonrpc": "1.0", "id": 4, "method": "ping"}',
        INVALID_REQUEST,
        4,
        "jsonrpc",
    ),
    "method not a string": (b'{"jsonrpc": "2.0", "id": 5, "method": 42}', INVALID_REQUEST, 5, "method"),
    "neither request nor response": (b'{"jsonrpc": "2.0", "id": 6}', INVALID_REQUEST, 6, "Invalid Request"),
    "id is an object": (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', INVALID_REQUEST, None, "id"),
    "unknown method": (_request("tools/explode"), METHOD_NOT_FOUND, 7, "tools/explode"),
    "params by position": (
        b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": [1]}',
        INVALID_PARAMS,
        8,
        "params",
    ),
    "tool arguments not an object": (
        _request("tools/call", {"name": "add", "arguments": [2, 3]}),
        INVALID_PARAMS,
        7,
        "arguments",
    ),
    "tool name missing": (_request("tools/call", {"arguments": {}}), INVALID_PARAMS, 7, "name"),
    "unknown tool": (_request("tools/call", {"name": "no_such_tool"}), INVALID_PARAMS, 7, "no_such_tool"),
    "unknown prompt": (
        _request("prompts/get", {"name": "no_such_prompt"}),
        INVALID_PARAMS,
        7,
        "no_such_prompt",
    ),
    "missing prompt argument": (_request("prompts/get", {"name": "review"}), INVALID_PARAMS, 7, "code"),
    "unknown resource": (
        _request("resources/read", {"uri": "memo://nope"}),
        RESOURCE_NOT_FOUND,
        7,
        "memo://nope",
    ),
    "unknown log level": (_request("logging/setLevel", {"level": "loud"}), INVALID_PARAMS, 7, "loud"),
    "bad cursor": (_request("tools/list", {"cursor": "%%%"}), INVALID_PARAMS, 7, "cursor"),
    "unsupported protocol version": (
        _request("tools/list", {"_meta": {PROTOCOL_VERSION_META_KEY: "1999-01-01"}}),
        UNSUPPORTED_VERSION,
        7,
        "version",
    ),
    "modern request without client capabilities": (
        _request("tools/list", {"_meta": {PROTOCOL_VERSION_META_KEY: "2026-07-28"}}),
        INVALID_PARAMS,
        7,
        "clientCapabilities",
    ),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_bad_line_gets_the_right_error_and_the_server_keeps_serving(served: RawStdio, case: str) -> None:
    line, code, request_id, word = BAD_LINES[case]
    served.send_line(line)
    response = served.reply()
    assert response["jsonrpc"] == "2.0"
    assert response["id"] == request_id
    assert "result" not in response
    assert response["error"]["code"] == code, response
    assert word in response["error"]["message"], response
    _still_serving(served)


def test_unsupported_version_lists_the_supported_ones(served: RawStdio) -> None:
    response = served.request(
        "tools/list", {"_meta": {**modern_meta(), PROTOCOL_VERSION_META_KEY: "2031-01-01"}}
    )
    assert response["error"]["code"] == UNSUPPORTED_VERSION
    assert response["error"]["data"]["supported"] == ["2026-07-28"]
    assert response["error"]["data"]["requested"] == "2031-01-01"
    _still_serving(served)


QUIET_LINES = {
    "unknown notification": {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"x": 1}},
    "cancel of an unknown request": {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 9},
    },
    "response to a request never sent": {"jsonrpc": "2.0", "id": 424242, "result": {}},
    "error response to a request never sent": {
        "jsonrpc": "2.0",
        "id": 424243,
        "error": {"code": -1, "message": "x"},
    },
}


@pytest.mark.parametrize("case", list(QUIET_LINES))
def test_messages_that_need_no_answer_get_none(served: RawStdio, case: str) -> None:
    served.send(QUIET_LINES[case])
    # Messages are handled in order, so a reply to the quiet line would arrive before this one.
    response = served.request("ping")
    assert response["result"] == {}
    assert served.notifications == []


def test_request_before_initialize_is_refused_then_the_handshake_works() -> None:
    peer = RawStdio()
    try:
        # a 2026-07-28 request needs no handshake: its _meta says everything
        modern = peer.request(
            "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": modern_meta()}
        )
        assert modern["result"]["structuredContent"] == {"result": 3}
        assert modern["result"]["resultType"] == "complete"
        refused = peer.request("tools/list")
        assert refused["error"]["code"] == INVALID_REQUEST
        assert "initialize" in refused["error"]["message"]
        refused_call = peer.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        assert refused_call["error"]["code"] == INVALID_REQUEST
        assert peer.request("ping")["result"] == {}  # ping is allowed before initialization
        assert peer.initialize()["result"]["protocolVersion"] == "2025-11-25"
        listed = peer.request("tools/list")["result"]
        assert "add" in {tool["name"] for tool in listed["tools"]}
        code, rest = peer.close()
        assert (code, rest) == (0, [])
    finally:
        peer.kill()


def test_stdout_carries_only_protocol_logs_go_to_stderr_and_eof_exits_cleanly() -> None:
    peer = RawStdio()
    try:
        peer.initialize()
        noisy = peer.request("tools/call", {"name": "noisy"})["result"]
        assert noisy["content"] == [{"type": "text", "text": "made noise"}]
        crashed = peer.request("tools/call", {"name": "crash"})["result"]
        assert crashed["isError"] is True
        assert "Traceback" not in crashed["content"][0]["text"]
        code, rest = peer.close()  # fails on any stdout line that is not JSON-RPC
        assert code == 0
        assert rest == []
        stderr = peer.stderr.decode(errors="replace")
        assert "stray print from a tool" in stderr
        assert "stray output from a child" in stderr
        assert "tool crash raised" in stderr and "Traceback" in stderr
    finally:
        peer.kill()
