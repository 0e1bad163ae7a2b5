"""The Client's public hooks for integrations: every notification, sending one, request `_meta`, connection options.

`mcp_resolve.pydantic_ai` is built on these and nothing private; a user
building an integration of their own gets the same: `notification_handler`
(every notification, e.g. to drop a cache on `list_changed`), `notify`
(`notifications/cancelled`, ...), `call_tool(..., meta=...)`, and the
connection options `cwd=`, `http_client=`, `verify=`, `init_timeout=`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    LoggingMessageNotificationParams,
)

from conftest import PYTHON
from http_helpers import http_server
from mcp_resolve import Client, Context, MCPServer
from mcp_resolve.client.tasks import TASKS_EXTENSION
from servers.raw_stdio import HERE

pytestmark = pytest.mark.anyio

MIDDLEWARE_SERVER = HERE / "middleware_server.py"
MODES = ["2026-07-28", "legacy"]
TRACE = "com.example/trace"


def _server() -> MCPServer:
    mcp = MCPServer("hooks")

    @mcp.tool()
    async def chatty(ctx: Context) -> str:
        """Logs once and reports progress once."""
        await ctx.info("working")
        await ctx.report_progress(1, 1)
        return "done"

    @mcp.tool(task_support="optional")
    def request_meta(ctx: Context) -> dict[str, Any]:
        """The request's `_meta` as the server got it (what is not the protocol's own bookkeeping)."""
        return {k: v for k, v in ctx.meta.items() if k in (TRACE, PROTOCOL_VERSION_META_KEY)}

    return mcp


@pytest.mark.parametrize("mode", MODES)
async def test_the_notification_handler_hears_every_notification_after_the_typed_handlers(mode: str) -> None:
    heard: list[str] = []

    async def log(params: LoggingMessageNotificationParams) -> None:
        heard.append(f"log {params.data}")

    async def every(method: str, params: dict[str, Any]) -> None:
        heard.append(f"{method} {params.get('data', '')}".strip())

    async with Client(_server(), mode=mode, log_handler=log, notification_handler=every) as client:
        assert (await client.call_tool("chatty")).content[0].text == "done"  # type: ignore[union-attr]
    assert heard == ["log working", "notifications/message working"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_failing_notification_handler_does_not_end_the_connection(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(method: str, params: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    async with Client(_server(), mode=mode, notification_handler=broken, log_level="info") as client:
        await client.call_tool("chatty")
        assert (await client.call_tool("chatty")).is_error is False
    assert "notification_handler failed on notifications/message" in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_notify_reaches_the_server(mode: str) -> None:
    async with Client([PYTHON, str(MIDDLEWARE_SERVER)], mode=mode) as client:
        await client.notify("notifications/roots/list_changed")
        seen = (await client.call_tool("observed")).structured_content
    assert seen is not None
    assert "outer> notifications/roots/list_changed (notification)" in seen["result"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", ["memory", pytest.param("http", marks=pytest.mark.slow)])
async def test_call_tool_sends_meta_but_keeps_the_era_keys_its_own(mode: str, transport: str) -> None:
    # A caller's `_meta` naming a protocol version must not make a handshake-era request look like
    # a 2026-07-28 one (over HTTP it would lose its session), nor change the modern one's version.
    meta = {TRACE: "t-1", PROTOCOL_VERSION_META_KEY: "1999-01-01"}
    server = _server()
    if transport == "memory":
        async with Client(server, mode=mode) as client:
            got = (await client.call_tool("request_meta", meta=meta)).structured_content
    else:
        async with (
            http_server(server.streamable_http_app()) as base,
            Client(f"{base}/mcp", mode=mode) as client,
        ):
            got = (await client.call_tool("request_meta", meta=meta)).structured_content
    expected = {TRACE: "t-1"} | ({PROTOCOL_VERSION_META_KEY: "2026-07-28"} if mode != "legacy" else {})
    assert got == expected
    assert meta[PROTOCOL_VERSION_META_KEY] == "1999-01-01"  # the caller's dict is left as it was


async def test_a_task_carries_the_meta_too() -> None:
    calls: list[dict[str, Any]] = []

    async def record(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            meta = (ctx.params or {}).get("_meta") or {}
            calls.append({k: v for k, v in meta.items() if k in (TRACE, CLIENT_CAPABILITIES_META_KEY)})
        return await call_next(ctx)

    server = _server()
    server.middleware.append(record)
    async with Client(server, mode="2026-07-28") as client:
        handle = await client.call_tool_task("request_meta", meta={TRACE: "t-2"})
        assert handle.task_id is not None
        await handle.result()
    assert calls == [{TRACE: "t-2", CLIENT_CAPABILITIES_META_KEY: {"extensions": {TASKS_EXTENSION: {}}}}]


@pytest.mark.slow
async def test_a_stdio_server_runs_in_cwd(tmp_path: Path) -> None:
    (tmp_path / "here.py").write_text(
        "import os\n"
        "from mcp_resolve import MCPServer\n"
        "mcp = MCPServer('here')\n"
        "@mcp.tool()\n"
        "def where() -> str:\n"
        "    return os.getcwd()\n"
        "mcp.run()\n"
    )
    async with Client([sys.executable, "here.py"], cwd=tmp_path) as client:  # a path relative to cwd
        result = await client.call_tool("where")
    assert Path(result.structured_content["result"]).resolve() == tmp_path.resolve()  # type: ignore[index]


@pytest.mark.slow
async def test_a_borrowed_http_client_carries_the_requests_and_stays_open() -> None:
    sent: list[str] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request.headers.get("x-team", ""))

    async with (
        http_server(_server().streamable_http_app()) as base,
        httpx.AsyncClient(headers={"X-Team": "borrowed"}, event_hooks={"request": [record]}) as http,
    ):
        for mode in MODES:
            async with Client(f"{base}/mcp", mode=mode, http_client=http) as client:
                assert (await client.call_tool("chatty")).is_error is False
            assert not http.is_closed
    assert sent and set(sent) == {"borrowed"}


async def test_verify_is_what_the_clients_own_http_client_checks_with(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bundle.pem")
    with pytest.raises(FileNotFoundError):
        async with Client("https://127.0.0.1:9/mcp", verify=missing):
            pass


@pytest.mark.slow
async def test_init_timeout_bounds_connecting() -> None:
    silent = [PYTHON, "-c", "import sys; sys.stdin.read()"]  # never answers; gone at EOF
    with anyio.move_on_after(10) as guard, pytest.raises(TimeoutError):
        async with Client(silent, mode="legacy", init_timeout=0.3):
            pass
    assert not guard.cancelled_caught


def test_connection_options_are_refused_where_they_cannot_apply() -> None:
    with pytest.raises(ValueError, match="http_client= and verify= apply to http"):
        Client("server.py", verify=False)
    with pytest.raises(ValueError, match="http_client= and verify= apply to http"):
        Client(_server(), http_client=httpx.AsyncClient())
    with pytest.raises(ValueError, match="pass verify= or http_client=, not both"):
        Client("https://example.com/mcp", verify=False, http_client=httpx.AsyncClient())
    with pytest.raises(ValueError, match="cwd= applies to a stdio server"):
        Client("https://example.com/mcp", cwd="/tmp")
    with pytest.raises(ValueError, match="cwd= applies to a stdio server"):
        Client(_server(), cwd="/tmp")
