"""requestState across processes: shared keys, ephemeral keys, and key rotation.

Each server is a real stdio process of tests/servers/state_server.py keyed
only through `MCP_RESOLVE_STATE_KEYS` (the framework's default security, no
code), so these tests also prove the environment variable is honoured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_resolve import MCPServer
from mcp_resolve.errors import InvalidRequestState
from mcp_resolve.protocol.modern import state_binding
from servers.state_server import build
from servers.state_wire import FROZEN, StatePeer, accept

OLD = "rotation-old-secret-0123456789abcdefghijklmnop"
NEW = "rotation-new-secret-9876543210zyxwvutsrqponmlk"
PICK = {"name": "pick", "arguments": {"item": "hat"}}
RED = {"color": "red"}

pytestmark = pytest.mark.slow


def start(peer: StatePeer) -> dict[str, Any]:
    """Round 1 of pick; returns the retry's params (the state and the person's answer)."""
    result = peer.result("tools/call", PICK)
    assert result["resultType"] == "input_required"
    return {
        **PICK,
        "requestState": result["requestState"],
        "inputResponses": accept(result["inputRequests"], RED),
    }


def completes(peer: StatePeer, retry: dict[str, Any]) -> None:
    result = peer.result("tools/call", retry)
    assert result["content"][0]["text"] == "hat in red", result
    assert peer.events()[-1] == "pick"


def refused(peer: StatePeer, retry: dict[str, Any], reason: str) -> None:
    """The frozen error, nothing ran, the reason is in the log, and the server serves on."""
    events = peer.events()
    assert peer.request("tools/call", retry).get("error") == FROZEN
    assert peer.events() == events
    assert reason in peer.stderr()
    completes(peer, start(peer))


def test_same_keys_retry_completes_on_another_process(tmp_path: Path) -> None:
    keys = {"MCP_RESOLVE_STATE_KEYS": f"{NEW},{OLD}"}
    with StatePeer(tmp_path, "one", keys) as one, StatePeer(tmp_path, "two", keys) as two:
        retry = start(one)
        assert two.events() == []
        completes(two, retry)
        assert one.events() == ["ask_color"]  # the first process never saw the retry


def test_ephemeral_keys_retry_fails_on_another_process(tmp_path: Path) -> None:
    with StatePeer(tmp_path, "one", {}) as one, StatePeer(tmp_path, "two", {}) as two:
        retry = start(one)
        refused(two, retry, "key not in the key ring")
        completes(one, retry)  # the token was good, just not for another process's key


def test_rotation_old_new_then_new_old_then_new(tmp_path: Path) -> None:
    """Phase 1 seals with the old key; phase 2 seals with the new one yet still opens phase-1 state;
    phase 3 dropped the old key: phase-1 state is refused, phase-2 state still completes."""
    with StatePeer(tmp_path, "phase1", {"MCP_RESOLVE_STATE_KEYS": f"{OLD},{NEW}"}) as phase1:
        in_flight_1 = start(phase1)
        in_flight_1b = start(phase1)
    with StatePeer(tmp_path, "phase2", {"MCP_RESOLVE_STATE_KEYS": f"{NEW},{OLD}"}) as phase2:
        completes(phase2, in_flight_1)
        in_flight_2 = start(phase2)
    with StatePeer(tmp_path, "phase3", {"MCP_RESOLVE_STATE_KEYS": NEW}) as phase3:
        refused(phase3, in_flight_1b, "key not in the key ring")
        completes(phase3, in_flight_2)


def test_default_security_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No argument: ephemeral (a token dies with its server) unless MCP_RESOLVE_STATE_KEYS is set."""
    binding_params = {"name": "pick", "arguments": {"item": "hat"}}

    def exchange(issuer: MCPServer, verifier: MCPServer) -> bytes:
        token = issuer.request_state_security.seal(
            b"x", state_binding(issuer, "tools/call", binding_params, None)
        )
        binding = state_binding(verifier, "tools/call", binding_params, None)
        return verifier.request_state_security.unseal(token, binding).payload

    monkeypatch.delenv("MCP_RESOLVE_STATE_KEYS", raising=False)
    first, second = build({}), build({})
    assert first.request_state_security.is_ephemeral
    assert exchange(first, first) == b"x"
    with pytest.raises(InvalidRequestState):
        exchange(first, second)

    monkeypatch.setenv("MCP_RESOLVE_STATE_KEYS", f"{NEW},{OLD}")
    first, second = build({}), MCPServer("State Server")
    assert not first.request_state_security.is_ephemeral
    assert exchange(first, second) == b"x"
