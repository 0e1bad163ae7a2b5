"""The slow refund: a refund that waits on a payment provider, run as a task, its confirmation asked inside it.

`refund_order(order_id, reason)` is all the model sees; the amount comes from
the order record (a resolver), and the person confirms it (a resolver that
returns `Elicit`). With `task_support="optional"`, a client that declares the
tasks extension gets a task back at once: the order lookup and the question
run in the background, the question becomes the task's `input_required`
status, and after the answer the refund waits on the provider, reporting
progress, while the client polls. A client without the extension gets the
same tool as a plain call.

    python examples/slow_refund/server.py                     # stdio, tasks in memory
    python examples/slow_refund/server.py --db refunds.db     # tasks survive a restart
    python examples/slow_refund/server.py --port 8000         # Streamable HTTP at /mcp
"""

from __future__ import annotations

import argparse
from typing import Annotated

import anyio
from pydantic import BaseModel, Field

from mcp_resolve import Context, Elicit, MCPServer, Resolve, ToolError
from mcp_resolve.stores import SqliteTaskStore
from mcp_resolve.tasks import TaskOptions

ORDERS = {"ORD-7001": 999, "ORD-7002": 4800}  # cents, from your database
PROVIDER_SECONDS = 1.2
"""How long the payment provider takes to settle a refund (a real one: minutes)."""


class Confirm(BaseModel):
    ok: bool = Field(description="Refund the full amount?")


class Receipt(BaseModel):
    order_id: str
    reason: str
    cents: int
    reference: str


async def order_total(order_id: str) -> int:
    if order_id not in ORDERS:
        raise ToolError(f"unknown order {order_id!r}")
    return ORDERS[order_id]


async def confirm(order_id: str, cents: Annotated[int, Resolve(order_total)]) -> Elicit[Confirm]:
    return Elicit(f"Refund {cents / 100:.2f} for {order_id}?", Confirm, key="confirm_refund")


def build(task_store: SqliteTaskStore | None = None, *, poll_interval_ms: int = 200) -> MCPServer:
    mcp = MCPServer(
        "Slow Refund Desk",
        task_store=task_store,
        task_options=TaskOptions(poll_interval_ms=poll_interval_ms),
    )

    @mcp.tool(task_support="optional")
    async def refund_order(
        order_id: str,
        reason: str,
        ctx: Context,
        cents: Annotated[int, Resolve(order_total)],
        confirmed: Annotated[Confirm, Resolve(confirm)],
    ) -> Receipt:
        """Refund an order through the payment provider. Slow: clients that can should run it as a task."""
        if not confirmed.ok:
            raise ToolError("the person did not confirm the refund")
        steps = 4
        for step in range(steps):
            await ctx.report_progress(step, steps, f"payment provider: step {step + 1} of {steps}")
            await anyio.sleep(PROVIDER_SECONDS / steps)
        return Receipt(order_id=order_id, reason=reason, cents=cents, reference=f"RF-{order_id[-4:]}")

    return mcp


mcp = build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp")
    parser.add_argument("--db", help="keep tasks in this SQLite file (they survive a restart)")
    parser.add_argument("--log-level", default="info", help="uvicorn's log level (HTTP)")
    options = parser.parse_args()
    server = build(SqliteTaskStore(options.db)) if options.db else mcp
    if options.port is None:
        server.run()
    else:
        server.run(transport="streamable-http", port=options.port, log_level=options.log_level)


if __name__ == "__main__":
    main()
