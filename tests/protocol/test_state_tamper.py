"""Tampered, misdirected and stale requestState over a real stdio server: always the frozen error, nothing runs.

One server process serves every case. Each case checks the three promises:
the answer is exactly `-32602 "Invalid or expired requestState"` (the reason
goes to the server's stderr log, never to the client), no handler or
resolver ran (the server's events file did not grow), and the server keeps
serving (the genuine token still completes the call afterwards). A key
dropped from the ring is covered by the rotation test in test_state_fleet.py;
another principal is covered in-process at the end, since principals exist
only on authenticated HTTP.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_resolve.protocol.jsonrpc import IncomingRequest
from mcp_resolve.protocol.session import Connection
from servers.state_server import build
from servers.state_wire import FROZEN, MODERN_META, StatePeer, accept

KEY = "tamper-suite-secret-0123456789abcdefghijklmnop"
PICK = {"name": "pick", "arguments": {"item": "hat"}}
RED = {"color": "red"}
REJECTED = "rejected requestState on"

pytestmark = pytest.mark.slow


def b64decode(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class Wire:
    peer: StatePeer
    clock: Path
    token: str  # round 1 of tools/call pick {"item": "hat"}
    keys: list[str]
    tokens: dict[str, str]  # round-1 tokens of other requests, by label

    def round_two(self, target: dict[str, Any], token: Any) -> dict[str, Any]:
        return {**target, "requestState": token, "inputResponses": accept(self.keys, RED)}

    def assert_serving(self) -> None:
        result = self.peer.result("tools/call", self.round_two(PICK, self.token))
        assert result["content"][0]["text"] == "hat in red"

    def assert_rejected(self, method: str, params: dict[str, Any], reason: str | None = None) -> None:
        events, log = self.peer.events(), self.peer.stderr()
        response = self.peer.request(method, params)
        assert response.get("error") == FROZEN, response
        assert "result" not in response
        assert self.peer.events() == events, "a handler or resolver ran on a rejected requestState"
        logged = self.peer.stderr()[len(log) :]
        assert logged.count(REJECTED) == 1, logged
        if reason is not None:
            assert reason in logged, logged
        self.assert_serving()


def first_round(peer: StatePeer, method: str, params: dict[str, Any]) -> tuple[str, list[str]]:
    result = peer.result(method, params)
    assert result["resultType"] == "input_required", result
    return result["requestState"], list(result["inputRequests"])


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    directory = tmp_path_factory.mktemp("tamper")
    clock = directory / "clock"
    clock.write_text("0")
    env = {"MCP_RESOLVE_STATE_KEYS": KEY, "STATE_SERVER_CLOCK_FILE": str(clock)}
    with StatePeer(directory, "main", env) as peer:
        token, keys = first_round(peer, "tools/call", PICK)
        tokens = {
            "other": first_round(peer, "tools/call", {"name": "other", "arguments": {"item": "hat"}})[0],
            "prompt": first_round(peer, "prompts/get", PICK)[0],
            "resource": first_round(peer, "resources/read", {"uri": "notes://hat"})[0],
            "manual": first_round(peer, "tools/call", {"name": "manual", "arguments": {"step": "s1"}})[0],
        }
        wire = Wire(peer, clock, token, keys, tokens)
        wire.assert_serving()
        yield wire


def test_every_sampled_byte_flip_is_rejected(wire: Wire) -> None:
    raw = b64decode(wire.token)
    assert b64encode(raw) == wire.token
    count = min(64, len(raw))
    positions = sorted({round(i * (len(raw) - 1) / (count - 1)) for i in range(count)})
    assert positions[0] == 0 and positions[-1] == len(raw) - 1 and len(positions) == count
    for index, position in enumerate(positions):
        flipped = bytearray(raw)
        flipped[position] ^= (0x01, 0x80, 0xFF)[index % 3]
        wire.assert_rejected("tools/call", wire.round_two(PICK, b64encode(bytes(flipped))))


def _non_canonical(token: str) -> list[str]:
    """Spellings a lenient base64 decoder maps to the same bytes (unused trailing bits set)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    unused = {2: 4, 3: 2}.get(len(token) % 4, 0)
    last = alphabet.index(token[-1])
    return [token[:-1] + alphabet[last ^ bit] for bit in (1, 2, 4, 8)[:unused]]


MUTATIONS: dict[str, Callable[[str], str]] = {
    "truncated by one char": lambda t: t[:-1],
    "truncated by one byte": lambda t: b64encode(b64decode(t)[:-1]),
    "truncated to half": lambda t: t[: len(t) // 2],
    "truncated to the header and nonce": lambda t: b64encode(b64decode(t)[:21]),
    "extended by one char": lambda t: t + "A",
    "extended by one byte": lambda t: b64encode(b64decode(t) + b"\x00"),
    "doubled": lambda t: t + t,
    "padded with =": lambda t: t + "=",
    "padded with ==": lambda t: t + "==",
    "standard alphabet": lambda t: t.replace("-", "+").replace("_", "/") + "=" * (-len(t) % 4),
    "trailing newline": lambda t: t + "\n",
    "leading space": lambda t: " " + t,
    "empty string": lambda t: "",
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_encoding_mutations_are_rejected(wire: Wire, mutation: str) -> None:
    tampered = MUTATIONS[mutation](wire.token)
    assert tampered != wire.token
    wire.assert_rejected("tools/call", wire.round_two(PICK, tampered))


def test_non_canonical_spellings_are_rejected(wire: Wire) -> None:
    """Only when the token length leaves unused bits; the fixed-length padding cases run regardless."""
    for spelling in _non_canonical(wire.token):
        assert b64decode(spelling) == b64decode(wire.token)
        wire.assert_rejected("tools/call", wire.round_two(PICK, spelling), "non-canonical")


MISDIRECTED: dict[str, tuple[str, dict[str, Any], str, str]] = {
    # label: (method, request without state, whose token, logged reason)
    "token of another tool": ("tools/call", PICK, "other", "target mismatch"),
    "token presented on another tool": (
        "tools/call",
        {"name": "other", "arguments": {"item": "hat"}},
        "pick",
        "target mismatch",
    ),
    "other arguments": (
        "tools/call",
        {"name": "pick", "arguments": {"item": "shoe"}},
        "pick",
        "arguments digest mismatch",
    ),
    "an extra argument": (
        "tools/call",
        {"name": "pick", "arguments": {"item": "hat", "x": 1}},
        "pick",
        "arguments digest mismatch",
    ),
    "no arguments": ("tools/call", {"name": "pick"}, "pick", "arguments digest mismatch"),
    "prompt token on the same-named tool": ("tools/call", PICK, "prompt", "method mismatch"),
    "tool token on the same-named prompt": ("prompts/get", PICK, "pick", "method mismatch"),
    "resource token on a tool": ("tools/call", PICK, "resource", "method mismatch"),
    "resource token on another URI": (
        "resources/read",
        {"uri": "notes://shoe"},
        "resource",
        "target mismatch",
    ),
    "tool token on a resource": ("resources/read", {"uri": "notes://hat"}, "pick", "method mismatch"),
    "hand-written tool's token on a resolver tool": ("tools/call", PICK, "manual", "target mismatch"),
}


@pytest.mark.parametrize("case", list(MISDIRECTED))
def test_misdirected_tokens_are_rejected(wire: Wire, case: str) -> None:
    method, target, whose, reason = MISDIRECTED[case]
    token = wire.token if whose == "pick" else wire.tokens[whose]
    wire.assert_rejected(method, wire.round_two(target, token), reason)


@pytest.mark.parametrize(
    "value",
    [123, 0, True, False, 1.5, [], {}, "token-in-a-list", "token-in-an-object"],
    ids=["int", "zero", "true", "false", "float", "list", "object", "[token]", "{token}"],
)
def test_non_string_values_are_rejected(wire: Wire, value: Any) -> None:
    if value == "token-in-a-list":
        value = [wire.token]
    elif value == "token-in-an-object":
        value = {"requestState": wire.token}
    wire.assert_rejected("tools/call", wire.round_two(PICK, value), "not str")


def test_null_counts_as_absent(wire: Wire) -> None:
    """A JSON null is a first round: nothing is rejected, and answers sent with it do not count.

    With no state there is no sealed round the answers belong to, so the
    question is asked (issue 22: pre-filled answers must not skip questions).
    """
    log = wire.peer.stderr()
    result = wire.peer.result("tools/call", wire.round_two(PICK, None))
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == list(wire.round_two(PICK, None)["inputResponses"])
    assert REJECTED not in wire.peer.stderr()[len(log) :]


def test_expired_and_future_tokens_are_rejected(wire: Wire) -> None:
    """The server's clock is moved through a file; the default TTL is 600 s, the tolerated skew 30 s."""
    token, _ = first_round(wire.peer, "tools/call", PICK)
    params = wire.round_two(PICK, token)
    try:
        for offset, accepted, reason in [
            ("570", True, None),  # old but within the TTL
            ("620", False, "expired"),
            ("-10", True, None),  # issued "in the future" within the skew
            ("-120", False, "in the future"),
        ]:
            wire.clock.write_text(offset)
            if accepted:
                assert wire.peer.result("tools/call", params)["content"][0]["text"] == "hat in red"
            else:
                events = wire.peer.events()
                log = wire.peer.stderr()
                assert wire.peer.request("tools/call", params).get("error") == FROZEN
                assert wire.peer.events() == events
                assert reason is not None and reason in wire.peer.stderr()[len(log) :]
    finally:
        wire.clock.write_text("0")
    wire.assert_serving()


def test_hand_written_handler_state_is_sealed_and_verified(wire: Wire) -> None:
    """A tool that returns its own InputRequiredResult gets the same protection as a resolver tool."""
    manual = {"name": "manual", "arguments": {"step": "s1"}}
    token = wire.tokens["manual"]
    assert "manual-plaintext" not in token and b"manual-plaintext" not in b64decode(token)
    answers = {"confirm": {"action": "accept", "content": {"ok": True}}}
    result = wire.peer.result("tools/call", {**manual, "requestState": token, "inputResponses": answers})
    text = result["content"][0]["text"]
    assert text == "state=manual-plaintext:s1 answer={'action': 'accept', 'content': {'ok': True}}"

    flipped = bytearray(b64decode(token))
    flipped[len(flipped) // 2] ^= 0x01
    for forged in (b64encode(bytes(flipped)), "manual-plaintext:s1", wire.token):
        wire.assert_rejected("tools/call", {**manual, "requestState": forged, "inputResponses": answers})
    other_step = {"name": "manual", "arguments": {"step": "s2"}}
    wire.assert_rejected("tools/call", {**other_step, "requestState": token, "inputResponses": answers})


def test_another_server_name_is_another_audience(wire: Wire, tmp_path: Path) -> None:
    """Same keys, different server name: the token is refused there, and that server serves on."""
    env = {"MCP_RESOLVE_STATE_KEYS": KEY, "STATE_SERVER_NAME": "Other Server"}
    with StatePeer(tmp_path, "other-name", env) as other:
        response = other.request("tools/call", wire.round_two(PICK, wire.token))
        assert response.get("error") == FROZEN
        assert other.events() == []
        assert "audience mismatch" in other.stderr()
        token, keys = first_round(other, "tools/call", PICK)
        params = {**PICK, "requestState": token, "inputResponses": accept(keys, RED)}
        assert other.result("tools/call", params)["content"][0]["text"] == "hat in red"
    wire.assert_serving()


def test_custom_codec_tampering_fails_closed(tmp_path: Path) -> None:
    """A sign-only custom codec: a forged MAC is its own rejection, a malformed token makes it raise
    ValueError, which the framework must treat as a rejection too."""
    with StatePeer(tmp_path, "codec", {"STATE_SERVER_CODEC_SECRET": "codec-secret"}) as peer:
        token, keys = first_round(peer, "tools/call", PICK)
        body, mac = token.split(".")
        assert '"m":"tools/call"' in base64.urlsafe_b64decode(body).decode()  # sign-only: readable
        params = {**PICK, "inputResponses": accept(keys, RED)}
        cases = [
            (f"{body[:-2]}{'A' if body[-2] != 'A' else 'B'}{body[-1]}.{mac}", "HMAC mismatch"),
            (f"{body}.{mac[:-1]}0" if mac[-1] != "0" else f"{body}.{mac[:-1]}1", "HMAC mismatch"),
            (body + mac, "codec raised ValueError"),
            (f"{token}.extra", "codec raised ValueError"),
        ]
        for forged, reason in cases:
            log, events = peer.stderr(), peer.events()
            assert peer.request("tools/call", {**params, "requestState": forged}).get("error") == FROZEN
            assert peer.events() == events
            logged = peer.stderr()[len(log) :]
            assert REJECTED in logged and reason in logged, logged
        result = peer.result("tools/call", {**params, "requestState": token})
        assert result["content"][0]["text"] == "hat in red"


async def _respond(connection: Connection, method: str, params: dict[str, Any]) -> dict[str, Any]:
    async def sink(message: dict[str, Any]) -> None:
        pass

    request = IncomingRequest(id=1, method=method, params={**params, "_meta": MODERN_META})
    return await connection.respond(request, sink)


@pytest.mark.anyio
async def test_another_principal_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Principal binding, at the connection level where an authenticated transport sets it."""
    monkeypatch.delenv("MCP_RESOLVE_STATE_KEYS", raising=False)
    events = tmp_path / "events"
    server = build({"STATE_SERVER_EVENTS": str(events)})
    alice, bob, anonymous = (Connection(server, principal=p) for p in ("alice", "bob", None))

    first = (await _respond(alice, "tools/call", PICK))["result"]
    alice_params = {
        **PICK,
        "requestState": first["requestState"],
        "inputResponses": accept(first["inputRequests"], RED),
    }
    first = (await _respond(anonymous, "tools/call", PICK))["result"]
    anonymous_params = {
        **PICK,
        "requestState": first["requestState"],
        "inputResponses": accept(first["inputRequests"], RED),
    }

    ran = events.read_text()
    for connection, params, reason in [
        (bob, alice_params, "principal mismatch"),
        (anonymous, alice_params, "bound to a principal but presented anonymously"),
        (alice, anonymous_params, "issued anonymously but presented by a principal"),
    ]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="mcp_resolve"):
            response = await _respond(connection, "tools/call", params)
        assert response["error"] == FROZEN and "result" not in response
        assert reason in caplog.text and reason not in json.dumps(response)
        assert events.read_text() == ran
    for connection, params in [(alice, alice_params), (anonymous, anonymous_params)]:
        result = (await _respond(connection, "tools/call", params))["result"]
        assert result["content"][0]["text"] == "hat in red"
