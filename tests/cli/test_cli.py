"""The `mcp-resolve` command, run as a user runs it: a real process, real files, a real stdio server."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from conftest import EXAMPLES, PYTHON, REFUND_DESK
from mcp_resolve import Client
from redis_helpers import redis_server

pytestmark = pytest.mark.slow

CLI = [PYTHON, "-m", "mcp_resolve"]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


CYCLE = """
    from __future__ import annotations
    from typing import Annotated
    from mcp_resolve import MCPServer, Resolve

    mcp = MCPServer("Loop")

    async def first(value: Annotated[int, Resolve(second)]) -> int:
        return value

    async def second(value: Annotated[int, Resolve(first)]) -> int:
        return value

    @mcp.tool()
    async def spin(n: Annotated[int, Resolve(first)]) -> int:
        return n
"""

ASKS_EVERYTHING = """
    from typing import Annotated
    from mcp_types import CreateMessageResult, ListRootsResult
    from mcp_resolve import Context, ListRoots, MCPServer, Resolve, Sample

    server = MCPServer("Asker")

    async def pick_root(ctx: Context) -> ListRootsResult | ListRoots:
        return ListRoots()

    def summary(topic: str) -> CreateMessageResult | Sample:
        return Sample(f"Summarise {topic}", max_tokens=50)

    @server.tool()
    async def brief(
        topic: str,
        roots: Annotated[ListRootsResult, Resolve(pick_root)],
        text: Annotated[CreateMessageResult, Resolve(summary)],
    ) -> str:
        return topic

    @server.prompt()
    async def intro(topic: str, text: Annotated[CreateMessageResult, Resolve(summary)]) -> str:
        return topic
"""


def test_check_reports_the_registered_server() -> None:
    done = cli("check", str(REFUND_DESK))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK Refund Desk: 3 tools, 0 prompts, 1 resource, 0 templates, 6 resolvers"


def test_check_fails_on_a_cycle_naming_the_resolvers(tmp_path: Path) -> None:
    done = cli("check", str(write(tmp_path, "loop.py", CYCLE)))
    assert done.returncode == 1
    assert done.stdout == ""
    message = done.stderr.strip()
    assert message.startswith("InvalidSignature: ")
    assert "depends on itself" in message
    assert "loop:first" in message and "loop:second" in message
    assert "Traceback" not in done.stderr


def test_check_fails_on_an_unclassifiable_resolver_parameter(tmp_path: Path) -> None:
    source = """
        from typing import Annotated
        from mcp_resolve import MCPServer, Resolve

        mcp = MCPServer("Stray")

        async def lookup(sku: str) -> int:
            return 1

        @mcp.tool()
        async def price(order_id: str, cents: Annotated[int, Resolve(lookup)]) -> int:
            return cents
    """
    done = cli("check", str(write(tmp_path, "stray.py", source)))
    assert done.returncode == 1
    assert "InvalidSignature: " in done.stderr and "'sku'" in done.stderr and "order_id" in done.stderr


def test_loading_errors_are_one_line(tmp_path: Path) -> None:
    missing = cli("check", str(tmp_path / "absent.py"))
    assert missing.returncode == 1 and "no such file" in missing.stderr
    empty = cli("check", str(write(tmp_path, "empty.py", "x = 1\n")))
    assert empty.returncode == 1 and "defines no MCPServer" in empty.stderr
    wrong = cli("check", f"{write(tmp_path, 'named.py', 'x = 1')}:x")
    assert wrong.returncode == 1 and "is a int, not an MCPServer" in wrong.stderr


def test_graph_text_names_the_refund_desk_resolvers_and_edges() -> None:
    done = cli("graph", str(REFUND_DESK), "--tool", "refund_order")
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert lines[0] == "tool refund_order(order_id, reason)"
    resolvers = lines[lines.index("resolvers:") + 1 : lines.index("edges:")]
    assert [r.split("(")[0] for r in resolvers] == [
        "current_customer",
        "load_order",
        "refund_scope",
        "refund_amount",
        "ask_restock",
    ]
    assert resolvers[2].endswith("asks the person: Elicit[Scope]")
    assert resolvers[4].endswith("asks the person: Elicit[Restock]")
    assert "asks" not in resolvers[1] and "asks" not in resolvers[3]
    assert lines[lines.index("edges:") + 1 :] == [
        "Context -> current_customer.ctx",
        "argument order_id -> load_order.order_id",
        "current_customer -> load_order.customer",
        "load_order -> refund_scope.order",
        "load_order -> refund_amount.order",
        "refund_scope -> refund_amount.scope",
        "load_order -> ask_restock.order",
        "refund_scope -> ask_restock.scope",
        "refund_amount -> refund_order.cents",
        "ask_restock -> refund_order.restock (full outcome)",
    ]


def test_graph_mermaid_draws_the_same_edges() -> None:
    done = cli("graph", f"{REFUND_DESK}:mcp", "--tool", "refund_order", "--format", "mermaid")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("flowchart LR\n")
    assert '  subgraph c0 ["tool refund_order"]' in out
    assert '    c0_r2{{"refund_scope<br/>asks the person: Elicit[Scope]"}}' in out
    assert '    c0_r1["load_order"]' in out and '    c0_r3["refund_amount"]' in out
    assert '    c0_a_order_id -->|"order_id"| c0_r1' in out
    assert '    c0_r0 -->|"customer"| c0_r1' in out
    assert '    c0_r2 -->|"scope"| c0_r3' in out
    assert '    c0_r4 -->|"restock (full outcome)"| c0_body' in out
    assert '      c0_a_reason(["reason"])' in out and '    c0_a_reason -->|"reason"| c0_body' in out
    assert out.count("-->") == 12


def test_graph_dot_draws_the_same_graph_for_graphviz() -> None:
    done = cli("graph", str(REFUND_DESK), "--tool", "refund_order", "--format", "dot")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("digraph resolvers {\n") and out.endswith("}\n")
    assert '    label="tool refund_order";' in out
    assert (
        '    c0_r2 [label="refund_scope\\nasks the person: Elicit[Scope]", shape=hexagon, fillcolor="#fff2cc", '
        'style="filled"];' in out
    )
    assert '    c0_r1 [label="load_order"];' in out
    assert '      c0_a_order_id [label="order_id", shape=ellipse, style=""];' in out
    edges = [line.strip() for line in out.splitlines() if " -> " in line]
    assert edges == [
        'c0_ctx -> c0_r0 [label="ctx"];',
        'c0_a_order_id -> c0_r1 [label="order_id"];',
        'c0_r0 -> c0_r1 [label="customer"];',
        'c0_r1 -> c0_r2 [label="order"];',
        'c0_r1 -> c0_r3 [label="order"];',
        'c0_r2 -> c0_r3 [label="scope"];',
        'c0_r1 -> c0_r4 [label="order"];',
        'c0_r2 -> c0_r4 [label="scope"];',
        'c0_r3 -> c0_body [label="cents"];',
        'c0_r4 -> c0_body [label="restock (full outcome)"];',
        'c0_a_order_id -> c0_body [label="order_id"];',
        'c0_a_reason -> c0_body [label="reason"];',
    ]


def test_graph_dot_escapes_what_a_label_may_hold(tmp_path: Path) -> None:
    from mcp_resolve.cli import graph_dot, load_server

    server = write(
        tmp_path,
        "quoted.py",
        """
        from mcp_resolve import MCPServer

        mcp = MCPServer("Quoted")

        @mcp.resource('notes://"a"\\\\b')
        def note() -> str:
            return "x"
        """,
    )
    (component,) = load_server(str(server)).components()
    assert 'label="resource notes://\\"a\\"\\\\b";' in graph_dot([component])


def test_graph_shows_sampling_roots_context_and_prompts(tmp_path: Path) -> None:
    done = cli("graph", str(write(tmp_path, "asker.py", ASKS_EVERYTHING)))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "asks for the client's roots: ListRoots" in out
    assert "samples the client's LLM: Sample" in out
    assert "Context -> pick_root.ctx" in out
    assert "argument topic -> summary.topic" in out
    assert "prompt intro(topic)" in out and "summary -> intro.text" in out


def test_graph_unknown_tool_lists_what_exists() -> None:
    done = cli("graph", str(REFUND_DESK), "--tool", "refund_everything")
    assert done.returncode == 1
    assert "has no tool 'refund_everything' (it has: refund_order, receipt_lines, restock, ui://refund-desk/receipt.html)" in done.stderr


@pytest.mark.anyio
async def test_run_serves_stdio() -> None:
    """`mcp-resolve run FILE` is a working stdio server: a full refund with a question goes through it."""
    answers = iter([{"action": "accept", "content": {"full": True}}, {"action": "decline"}])

    async def person(params: object) -> dict[str, object]:
        return next(answers)

    command = [*CLI, "run", f"{REFUND_DESK}:mcp"]
    async with Client(command, elicitation_handler=person) as client:
        result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "cli"})
    assert result.structured_content == {
        "order_id": "ORD-7002",
        "reason": "cli",
        "cents": 4800,
        "restocked": False,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def served(*args: str, env: dict[str, str]) -> AsyncIterator[str]:
    """`mcp-resolve run ... --http` on a free port for the length of the block; yields the endpoint URL."""
    port = free_port()
    process = await anyio.open_process(
        [*CLI, "run", *args, "--http", "--port", str(port)],
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(60):
            while True:
                assert process.returncode is None, "the server exited before listening"
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        with anyio.move_on_after(20):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.anyio
@pytest.mark.parametrize("workers", [1, 2])
async def test_run_serves_http(workers: int) -> None:
    """Every round of a refund may land on another worker: shared keys make them all valid, and a shared
    store (Redis, for two workers) keeps the single-use refund single across them."""
    with contextlib.ExitStack() as stack:
        keys = {"MCP_RESOLVE_STATE_KEYS": "cli-test-key-" + "k" * 40}
        if workers > 1:
            keys["MCP_RESOLVE_REDIS_URL"] = stack.enter_context(redis_server()).url
        await _serve_refunds(workers, keys)


async def _serve_refunds(workers: int, keys: dict[str, str]) -> None:

    async def person(params: Any) -> dict[str, Any]:
        if "full" in params.requested_schema["properties"]:
            return {"action": "accept", "content": {"full": False, "sku": "wool-socks"}}
        return {"action": "accept", "content": {"restock": True}}

    hosts = ("--allowed-host", "127.0.0.1", "--allowed-host", "refunds.example.test")
    async with served(str(REFUND_DESK), *hosts, "--workers", str(workers), env=keys) as url:
        for _ in range(3):
            async with Client(url, mode="2026-07-28", elicitation_handler=person) as client:
                result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "http"})
            assert result.structured_content == {
                "order_id": "ORD-7002",
                "reason": "http",
                "cents": 2400,
                "restocked": True,
            }
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx.AsyncClient() as http:
            listed = await http.post(url, json=ping, headers={"Host": "refunds.example.test"})
            unlisted = await http.post(url, json=ping, headers={"Host": "elsewhere.example.test"})
        assert listed.status_code != 403, listed.text
        assert unlisted.status_code == 403 and "DNS rebinding" in unlisted.text


def test_run_refuses_workers_without_shared_keys() -> None:
    environment = {k: v for k, v in os.environ.items() if k != "MCP_RESOLVE_STATE_KEYS"}
    done = subprocess.run(
        [*CLI, "run", str(REFUND_DESK), "--http", "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert done.returncode == 1
    assert "refusing to start 2 workers with a per-process requestState key" in done.stderr
    assert "MCP_RESOLVE_STATE_KEYS" in done.stderr


def test_run_workers_need_http() -> None:
    done = cli("run", str(REFUND_DESK), "--workers", "2")
    assert done.returncode == 1 and "--workers needs --http" in done.stderr


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("mcp-resolve")
    done = subprocess.run(
        [str(script), "check", str(EXAMPLES / "bookshop" / "backorder.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK Bookshop: 1 tool")


def test_dev_without_npx_says_what_to_install(tmp_path: Path) -> None:
    done = cli("dev", str(REFUND_DESK), env={"PATH": str(tmp_path)})
    assert done.returncode == 1
    assert "npx is not on PATH" in done.stderr
    assert "https://nodejs.org" in done.stderr
    assert f"mcp-resolve run {REFUND_DESK}" in done.stderr


def test_dev_fails_fast_on_a_bad_graph(tmp_path: Path) -> None:
    done = cli("dev", str(write(tmp_path, "loop.py", CYCLE)), env={"PATH": str(tmp_path)})
    assert done.returncode == 1 and "InvalidSignature" in done.stderr and "npx" not in done.stderr


@pytest.mark.anyio
async def test_dev_hands_the_inspector_a_command_that_serves(tmp_path: Path) -> None:
    """npx is replaced by a recorder (the Inspector needs the npm registry); the command it is given must serve."""
    record = tmp_path / "npx-args.json"
    fake = tmp_path / "npx"
    fake.write_text(
        f"#!{PYTHON}\nimport json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    fake.chmod(0o755)
    done = cli("dev", str(REFUND_DESK), env={"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.returncode == 0, done.stderr
    args = json.loads(record.read_text())
    assert args[:3] == ["--yes", "@modelcontextprotocol/inspector@2.12.0", "--"]
    server_command = args[3:]
    assert server_command == [PYTHON, "-m", "mcp_resolve", "run", str(REFUND_DESK.resolve())]
    async with Client(server_command) as client:
        result = await client.call_tool("refund_order", {"order_id": "ORD-7001", "reason": "dev"})
    assert result.structured_content == {
        "order_id": "ORD-7001",
        "reason": "dev",
        "cents": 999,
        "restocked": False,
    }
