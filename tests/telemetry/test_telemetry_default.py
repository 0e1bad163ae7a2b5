"""Tracing on by default (issue 39): a server with no `instrument()` call traces once OpenTelemetry is configured.

A service that configures an SDK globally (in code, or by running under
`opentelemetry-instrument`) sees our server spans and metrics, and the
`Client`'s spans, whose trace the server's continue. The global provider can
be set once per process, so each case runs tests/servers/globally_traced.py
in a child process and reads what the SDK's in-memory exporter and reader got.
The off switch (`MCPServer(telemetry=False)`, MCP_RESOLVE_TELEMETRY=false)
silences the server; without OpenTelemetry importable a server still serves
(tests/telemetry/test_telemetry.py, at the end).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from conftest import PYTHON, ROOT, SERVERS
from mcp_resolve import MCPServer
from mcp_resolve.telemetry import Telemetry

GLOBALLY_TRACED = SERVERS / "globally_traced.py"


def _run(**env: str) -> dict[str, Any]:
    done = subprocess.run(
        [PYTHON, str(GLOBALLY_TRACED)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    recorded: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return recorded


@pytest.fixture(scope="module")
def traced() -> dict[str, Any]:
    """One run of the globally traced process, read by the tests that need tracing on."""
    return _run()


def _ours(recorded: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in recorded["spans"] if s["kind"] == kind and s["scope"].startswith("mcp_resolve")]


@pytest.mark.slow
def test_a_server_never_instrumented_traces_once_a_global_provider_is_set(traced: dict[str, Any]) -> None:
    recorded = traced
    server = _ours(recorded, "SERVER")
    calls = [s for s in server if s["name"] == "tools/call add"]
    assert [s["attributes"]["mcp.protocol.version"] for s in calls] == [
        "2026-07-28",
        "2025-11-25",
        "2025-11-25",
    ]
    assert {s["attributes"]["gen_ai.tool.name"] for s in calls} == {"add"}
    operations = recorded["points"]["mcp.server.operation.duration"]
    assert sum(p["count"] for p in operations if p["attributes"].get("gen_ai.tool.name") == "add") == 3


@pytest.mark.slow
def test_client_spans_carry_the_trace_the_server_span_continues(traced: dict[str, Any]) -> None:
    recorded = traced
    clients = {s["span_id"]: s for s in _ours(recorded, "CLIENT")}
    server = _ours(recorded, "SERVER")
    assert len(server) >= 6  # discover, initialize twice, three calls
    for span in server:  # every server span is the child of the client span that sent its request
        client = clients[span["parent"]]
        assert client["trace_id"] == span["trace_id"]
        assert client["name"] == span["name"]
        assert client["attributes"]["mcp.method.name"] == span["attributes"]["mcp.method.name"]
        assert client["parent"] is None
    call = next(s for s in clients.values() if s["name"] == "tools/call add")
    assert call["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert call["attributes"]["jsonrpc.request.id"].isdigit()
    assert "gen_ai.tool.call.arguments" not in call["attributes"]  # what the caller sends is not recorded
    measured = recorded["points"]["mcp.client.operation.duration"]
    assert sum(p["count"] for p in measured if p["attributes"].get("gen_ai.tool.name") == "add") == 3


@pytest.mark.slow
def test_session_duration_is_recorded_when_a_handshake_session_ends(traced: dict[str, Any]) -> None:
    recorded = traced
    sessions = recorded["points"]["mcp.server.session.duration"]
    by_transport = {p["attributes"]["network.transport"]: p for p in sessions}
    assert by_transport["pipe"]["count"] == 1  # the in-memory session, closed with its streams
    assert by_transport["tcp"]["count"] == 1  # the HTTP session, ended by the client's DELETE
    assert by_transport["tcp"]["attributes"]["network.protocol.name"] == "http"
    assert {p["attributes"]["mcp.protocol.version"] for p in sessions} == {"2025-11-25"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "switch", [{"MCP_RESOLVE_TEST_TELEMETRY": "off"}, {"MCP_RESOLVE_TELEMETRY": "false"}]
)
def test_the_off_switch_silences_the_server(switch: dict[str, str]) -> None:
    recorded = _run(**switch)
    assert _ours(recorded, "SERVER") == []
    assert not [name for name in recorded["points"] if name.startswith(("mcp.server.", "mcp_resolve."))]
    assert len(_ours(recorded, "CLIENT")) >= 6  # the client in the same process still traces its requests


def test_every_server_gets_telemetry_that_waits_for_a_provider() -> None:
    """In this process no global provider is set (tests never set one): the default telemetry stays idle.

    OpenTelemetry is imported here (this module's SDK imports), so the first
    check builds the real telemetry, following the global providers.
    """
    server = MCPServer("default")
    assert server.telemetry is not None and not isinstance(server.telemetry, Telemetry)
    assert server.telemetry.active is False
    assert isinstance(server.telemetry, Telemetry)  # handed over: it follows the globals from now on
    assert server.telemetry.active is False
    assert MCPServer("off", telemetry=False).telemetry is None


def test_the_setting_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESOLVE_TELEMETRY", "false")
    assert MCPServer("off").telemetry is None
    assert MCPServer("on", telemetry=True).telemetry is not None  # the argument wins
