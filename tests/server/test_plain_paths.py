"""Every speed shortcut has a plain path beside it; these tests run the plain paths through real calls.

The shortcuts (their measured gains are in benchmarks/README.md and in each
module's docstring) are used on asyncio only. Trio, or a library that changed
under us, gets the plain path, so it must stay correct even though the usual
test run never takes it: here each one is forced and driven through the same
story the fast path serves.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest
from pydantic import BaseModel, Field

from http_helpers import http_server, refund_answers, run_refund_trajectory
from mcp_resolve import Client, MCPServer, ToolError
from mcp_resolve import _concurrency as concurrency
from mcp_resolve import _signature as signature
from mcp_resolve.resolve import run as engine
from mcp_resolve.transports.http._exchange import exchange as http_exchange

pytestmark = pytest.mark.anyio

ERAS = ["2026-07-28", "legacy"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ERAS)
async def test_the_portable_exchange_serves_the_refund_desk_over_http(
    refund_desk: ModuleType, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task-group exchange (trio's) on asyncio: JSON answers, SSE questions, both eras, real uvicorn."""
    monkeypatch.setattr(http_exchange, "PLAIN_EXCHANGE", True)
    monkeypatch.setattr(engine, "open_task_set", concurrency._GroupTaskSet)
    monkeypatch.setattr(engine, "cancel_scope", anyio.CancelScope)
    answers = refund_answers()

    async def elicit(params: types.ElicitRequestFormParams) -> dict[str, Any]:
        return answers.answer(params.message)

    async with (
        http_server(refund_desk.mcp.streamable_http_app()) as base,
        Client(f"{base}/mcp", mode=mode, elicitation_handler=elicit) as client,
    ):
        await run_refund_trajectory(lambda arguments: client.call_tool("refund_order", arguments), answers)


@pytest.mark.slow
async def test_the_portable_exchange_pings_a_silent_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_exchange, "PLAIN_EXCHANGE", True)
    server = MCPServer("slow")

    @server.tool()
    async def slow() -> str:
        await anyio.sleep(0.3)
        return "done"

    app = server.streamable_http_app(sse_ping_interval=0.05)
    async with http_server(app) as base, Client(f"{base}/mcp", mode="2026-07-28") as client:
        result = await client.call_tool("slow", {})
    assert result.content[0].text == "done"  # type: ignore[union-attr]


async def test_cancel_scopes_fall_back_to_anyios_own_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should anyio stop letting its asyncio class be built directly, scopes come from `anyio.CancelScope`."""
    concurrency.asyncio_cancel_scope.cache_clear()
    try:
        monkeypatch.setattr(concurrency, "_builds_directly", lambda backend_class: False)
        assert concurrency.asyncio_cancel_scope() is anyio.CancelScope
        with concurrency.cancel_scope() as scope:
            scope.cancel()
            await anyio.sleep(1)  # cancelled at once: the scope works
        assert scope.cancelled_caught
        monkeypatch.undo()
        concurrency.asyncio_cancel_scope.cache_clear()
        assert concurrency.asyncio_cancel_scope() is type(anyio.CancelScope())
    finally:
        concurrency.asyncio_cancel_scope.cache_clear()


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


def _orders(monkeypatch: pytest.MonkeyPatch | None) -> MCPServer:
    if monkeypatch is not None:
        monkeypatch.setattr(signature, "_fields_validator", lambda model: None)
    server = MCPServer("orders")

    @server.tool()
    def order(customer: str, lines: list[Line], note: str = "none", rush: bool = False) -> dict[str, Any]:
        return {"customer": customer, "lines": [line.model_dump() for line in lines], "note": note, "rush": rush}

    return server


CASES: list[dict[str, Any]] = [
    {"customer": "ada", "lines": [{"sku": "a", "qty": 2}]},
    {"customer": "ada", "lines": [{"sku": "a", "qty": 2}], "note": "gift", "rush": "true", "extra": 1},
    {"customer": "ada", "lines": [{"sku": "a", "qty": 0}]},
    {"customer": 5, "lines": "nope"},
    {"lines": []},
    {},
]


async def test_arguments_validate_the_same_through_the_model_as_through_the_fields_validator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fields validator is pydantic-core's view of the model's own schema; the model is the fallback."""
    fast, plain = _orders(None), _orders(monkeypatch)
    assert fast.registry.tools["order"].signature._fields_validator is not None
    assert plain.registry.tools["order"].signature._fields_validator is None
    for arguments in CASES:
        outcomes = []
        for server in (fast, plain):
            try:
                outcomes.append(("ok", (await server.call_tool("order", dict(arguments))).structured_content))
            except ToolError as exc:
                outcomes.append(("error", str(exc)))
        assert outcomes[0] == outcomes[1], arguments
