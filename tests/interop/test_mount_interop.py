"""The refund desk and the bookshop mounted in one server, driven by the official `mcp` client.

Over stdio (a subprocess serving tests/servers/mount_front.py) and over
Streamable HTTP (uvicorn on loopback), on 2026-07-28 (`auto`) and 2025-11-25
(`legacy`). The desk is mounted with no prefix, the bookshop as `shop`, and a
billing server as `billing` with `customer_id` hidden. What must hold through
the mount: the desk's six-call story with its multi-round questions and its
single-use tool, the bookshop's backorder question, billing's lifespan and
middleware, and the hidden parameter gone from the schema and ignored when a
client sends it anyway.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError as OfficialMCPError

import mcp_resolve
from conftest import PYTHON
from http_helpers import RefundAnswers, http_server, refund_answers, run_refund_trajectory
from servers.mount_front import front

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
MOUNT_FRONT = str(Path(__file__).resolve().parents[1] / "servers" / "mount_front.py")
SRC = str(Path(mcp_resolve.__file__).resolve().parents[1])
TOOLS = {
    "refund_order",
    "receipt_lines",
    "restock",
    "shop_order_book",
    "shop_order_book_or_suggest",
    "billing_invoices",
    "billing_seen",
}


def _callback(answers: RefundAnswers, backorders: list[str]) -> Any:
    async def on_elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        if "out of stock" in params.message:  # the bookshop's question, through the mount
            backorders.append(params.message)
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult.model_validate(answers.answer(params.message))

    return on_elicit


@asynccontextmanager
async def connected(transport: str, mode: str, callback: Any) -> AsyncIterator[OfficialClient]:
    if transport == "stdio":
        # The client passes on only a few variables: name the mcp_resolve under test for the subprocess.
        params = StdioServerParameters(command=PYTHON, args=[MOUNT_FRONT], env={"PYTHONPATH": SRC})
        async with OfficialClient(params, mode=mode, elicitation_callback=callback) as client:
            yield client
    else:
        server, _desk = front()
        async with (
            http_server(server.streamable_http_app()) as base,
            OfficialClient(f"{base}/mcp", mode=mode, elicitation_callback=callback) as client,
        ):
            yield client


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_the_official_client_drives_the_desk_and_the_bookshop_mounted_in_one_server(
    transport: str, mode: str, version: str
) -> None:
    answers, backorders = refund_answers(), []
    async with connected(transport, mode, _callback(answers, backorders)) as client:
        assert client.protocol_version == version
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert set(tools["refund_order"].input_schema["properties"]) == {"order_id", "reason"}
        assert set(tools["billing_invoices"].input_schema["properties"]) == {"status"}

        # The desk: six calls, questions over several rounds, a single-use tool, through the mount.
        await run_refund_trajectory(lambda arguments: client.call_tool("refund_order", arguments), answers)

        # The bookshop under its prefix: out of stock, so it asks first.
        ordered = await client.call_tool("shop_order_book", {"title": "Neuromancer"})
        assert _text(ordered) == "Backordered 'Neuromancer'; it ships in 2-3 weeks."
        assert len(backorders) == 1
        assert _text(await client.call_tool("shop_order_book", {"title": "Dune"})) == "Ordered 'Dune'."

        # Billing: customer_id is the front's to fill; a client that sends one anyway is ignored.
        invoices = await client.call_tool("billing_invoices", {"status": "open", "customer_id": "bob"})
        assert invoices.structured_content == {"result": ["INV-2 open"]}  # alice's, not bob's
        with pytest.raises(OfficialMCPError, match="billing does not serve closed invoices"):
            await client.call_tool("billing_invoices", {"status": "closed"})
        seen = await client.call_tool("billing_seen", {})
        # Its lifespan is open (the tools read it) and its middleware saw only its own calls, unprefixed.
        assert seen.structured_content == {
            "result": ["tools/call invoices", "tools/call invoices", "tools/call seen"]
        }

        # The desk's receipt view keeps its URI (no prefix) and the mount advertises the desk's extension.
        view = await client.read_resource("ui://refund-desk/receipt.html")
        assert view.contents[0].uri == "ui://refund-desk/receipt.html"
