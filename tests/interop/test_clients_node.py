"""Node clients we did not write: the TypeScript MCP client 2.x and the MCP Inspector CLI.

Both are installed repo-locally in tests/node (package.json + lock; `make`
runs `npm ci` before pytest, and this module runs it itself if the install
is missing). They run on the Node 22 binary that the npm package `node`
puts in tests/node/node_modules/.bin, since the Inspector needs Node >= 22.19.

The TypeScript client answers our questions through its one
`elicitation/create` handler on both eras (it drives 2026-07-28
`input_required` rounds itself). The Inspector CLI declares no client
capabilities, so it can call only tools whose resolvers ask nothing; a tool
that would ask gets our -32021 error, which the tests pin.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import PYTHON, REFUND_DESK, SERVERS, load_module
from http_helpers import http_server
from node_helpers import INSPECTOR, NODE_BIN, NODE_DIR

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS_SERVER = SERVERS / "clients_server.py"
ERAS = {"auto": ("modern", "2026-07-28"), "legacy": ("legacy", "2025-11-25")}
RECEIPT = {"order_id": "ORD-7002", "reason": "too small", "cents": 4800, "restocked": True}
MISSING_CAPABILITY = re.compile(
    r"Resolver \S+:refund_scope needs a client capability the client did not declare \(form elicitation\)"
)


async def run_node(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(60):
        return await anyio.run_process([str(NODE_BIN / "node"), *args], cwd=NODE_DIR, env=env, check=False)


async def ts_refund_desk(env: dict[str, str], target: str, mode: str) -> dict[str, Any]:
    done = await run_node(env, "refund_desk.mjs", target, mode)
    assert done.returncode == 0, done.stderr.decode()
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@asynccontextmanager
async def served_over_http(script: Path) -> AsyncIterator[str]:
    """A fresh import of `script`'s server on HTTP (uvicorn on a free loopback port); yields the /mcp URL."""
    async with http_server(load_module(script).mcp.streamable_http_app()) as base:
        yield f"{base}/mcp"


def assert_refund_trajectory(report: dict[str, Any], mode: str) -> None:
    assert (report["era"], report["version"]) == ERAS[mode]
    assert report["tools"] == [
        {"name": "refund_order", "properties": ["order_id", "reason"]},
        {"name": "receipt_lines", "properties": ["order_id"]},  # the receipt view's, app-only
        {"name": "restock", "properties": ["order_id", "on"]},  # the receipt view's, app-only
    ]
    assert [q["fields"] for q in report["questions"]] == [["full", "sku"], ["restock"]]
    assert report["questions"][0]["message"].startswith("Order ORD-7002 has several items")
    assert report["result"]["isError"] is False
    assert report["result"]["structuredContent"] == RECEIPT


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_typescript_client_refund_desk_over_http(node_env: dict[str, str], mode: str) -> None:
    async with served_over_http(REFUND_DESK) as url:
        report = await ts_refund_desk(node_env, url, mode)
    assert_refund_trajectory(report, mode)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_typescript_client_refund_desk_over_stdio(node_env: dict[str, str], mode: str) -> None:
    report = await ts_refund_desk(node_env, json.dumps([PYTHON, str(REFUND_DESK)]), mode)
    assert_refund_trajectory(report, mode)


# -- the MCP Inspector CLI ---------------------------------------------------------------------
async def inspector(
    env: dict[str, str], target: list[str], era: str, *method: str
) -> subprocess.CompletedProcess[bytes]:
    """`mcp-inspector --cli TARGET... --protocol-era ERA --format json --method ...` (target first: --tool-arg is variadic)."""
    return await run_node(
        env, str(INSPECTOR), "--cli", *target, "--protocol-era", era, "--format", "json", "-q", *method
    )


# What `mcp-resolve dev` hands the Inspector as the server command.
DEV_COMMAND = [PYTHON, "-m", "mcp_resolve", "run", str(CLIENTS_SERVER)]


async def test_inspector_cli_lists_and_calls_a_resolver_free_tool(node_env: dict[str, str]) -> None:
    listed = await inspector(node_env, DEV_COMMAND, "modern", "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr.decode()
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["result"]["tools"]}
    assert set(tools) == {"summarize", "workspace", "add"}
    assert set(tools["summarize"]["inputSchema"]["properties"]) == {"topic"}, (
        "resolved parameters stay hidden"
    )

    add = ["--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "b=3"]
    called = await inspector(node_env, DEV_COMMAND, "modern", *add)
    assert called.returncode == 0, called.stderr.decode()
    result = json.loads(called.stdout)["result"]
    assert result["structuredContent"] == {"result": 5}
    # Our server stamps serverInfo into result _meta only on 2026-07-28: the CLI really spoke the modern era.
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "clients-interop"


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_inspector_cli_cannot_answer_elicitation(node_env: dict[str, str], era: str) -> None:
    """The CLI declares no client capabilities, so a tool whose resolver asks the person gets our -32021."""
    refund = ["--method", "tools/call", "--tool-name", "refund_order"]
    async with served_over_http(REFUND_DESK) as url:
        called = await inspector(
            node_env, [url], era, *refund, "--tool-arg", "order_id=ORD-7002", "reason=too small"
        )
    assert called.returncode == 1
    assert MISSING_CAPABILITY.fullmatch(json.loads(called.stderr)["error"]["message"])
