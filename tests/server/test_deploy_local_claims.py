"""Shared requestState keys with single-use claims kept in one process: one warning at start, naming the fix.

Two processes started apart that share MCP_RESOLVE_STATE_KEYS (or one process
restarted) each accept the same final requestState once when their claims
live in a MemoryReplayStore, so a single_use refund can run twice. The fleet
guard cannot see separately started processes; the start-up warning is what
tells the operator. Each case runs the real `mcp-resolve run`, over stdio
and over HTTP, and reads its stderr.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest

from conftest import PYTHON
from fleet_helpers import wait_healthy
from http_helpers import free_port
from redis_helpers import redis_server

pytestmark = pytest.mark.slow

CLI = [PYTHON, "-m", "mcp_resolve"]
KEYS = "soak-shared-key-" + "s" * 40
WARNING = "so a single_use call could run twice"
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

SERVER = """
    from mcp_resolve import MCPServer, RequestStateSecurity, SqliteReplayStore

    options = {options}
    mcp = MCPServer("Claims", **options)

    @mcp.tool(single_use={single_use})
    async def refund(order_id: str) -> str:
        return order_id
"""

HANDSHAKE = "\n".join(
    (
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        '"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}',
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        "",
    )
)


def server_file(tmp_path: Path, *, single_use: bool = True, options: str = "{}") -> Path:
    path = tmp_path / "claims_server.py"
    path.write_text(textwrap.dedent(SERVER.format(options=options, single_use=single_use)))
    return path


def environment(**variables: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("MCP_RESOLVE_")}
    return {**clean, **variables}


def run_stdio(target: Path, env: dict[str, str]) -> str:
    """`mcp-resolve run FILE` answering a handshake and tools/list over its pipes; its stderr."""
    done = subprocess.run(
        [*CLI, "run", str(target)], input=HANDSHAKE, capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert '"id":2,"result":{"tools":[{"name":"refund"' in done.stdout, done.stdout  # it served
    return done.stderr


def run_http(target: Path, env: dict[str, str], log: Path) -> str:
    """`mcp-resolve run FILE --http` up, one tools/list answered, then stopped; its stderr."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*CLI, "run", str(target), "--http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", process)
        listed = httpx.post(
            f"http://127.0.0.1:{port}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN}},
            headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
            timeout=10,
        )
        assert listed.status_code == 200 and "refund" in listed.text, listed.text
    finally:
        process.terminate()
        process.wait(20)
    return log.read_text(errors="replace")


def test_stdio_with_shared_keys_and_local_claims_warns_once(tmp_path: Path) -> None:
    stderr = run_stdio(server_file(tmp_path), environment(MCP_RESOLVE_STATE_KEYS=KEYS))
    assert stderr.count(WARNING) == 1, stderr
    [line] = [line for line in stderr.splitlines() if WARNING in line]
    assert "MCP_RESOLVE_REDIS_URL" in line and "MCP_RESOLVE_STATE_KEYS" in line
    assert "SqliteReplayStore" in line and "WARNING mcp_resolve.fleet" in line
    assert KEYS not in stderr and "s" * 40 not in stderr


def test_http_with_shared_keys_and_local_claims_warns_once(tmp_path: Path) -> None:
    # `run --http` checks the deployment three times (the command, serve_http, the app's lifespan): one line.
    stderr = run_http(server_file(tmp_path), environment(MCP_RESOLVE_STATE_KEYS=KEYS), tmp_path / "http.log")
    assert stderr.count(WARNING) == 1, stderr
    assert "MCP_RESOLVE_REDIS_URL" in stderr and KEYS not in stderr


def test_keys_passed_in_code_warn_too(tmp_path: Path) -> None:
    options = f"{{'request_state_security': RequestStateSecurity(keys=[{KEYS!r}])}}"
    stderr = run_stdio(server_file(tmp_path, options=options), environment())
    assert stderr.count(WARNING) == 1, stderr
    assert KEYS not in stderr


@pytest.mark.parametrize(
    ("single_use", "options", "keys"),
    [
        (False, "{}", True),  # nothing single-use: nothing to run twice
        (True, "{}", False),  # per-process keys: no other process opens this one's state
        # claims shared by the processes of the host
        (True, "{'replay_store': SqliteReplayStore(__file__ + '.claims')}", True),
    ],
    ids=["no-single-use-tool", "per-process-keys", "sqlite-replay-store"],
)
def test_no_warning_when_nothing_can_run_twice(
    tmp_path: Path, single_use: bool, options: str, keys: bool
) -> None:
    env = environment(MCP_RESOLVE_STATE_KEYS=KEYS) if keys else environment()
    stderr = run_stdio(server_file(tmp_path, single_use=single_use, options=options), env)
    assert WARNING not in stderr, stderr


def test_no_warning_when_the_claims_are_on_redis(tmp_path: Path) -> None:
    with redis_server() as redis:
        env = environment(MCP_RESOLVE_STATE_KEYS=KEYS, MCP_RESOLVE_REDIS_URL=redis.url)
        target = server_file(tmp_path)
        stdio = run_stdio(target, env)
        http = run_http(target, env, tmp_path / "http.log")
    assert WARNING not in stdio and WARNING not in http, stdio + http
