"""The refund desk as one worker of the fleet tests (`mcp-resolve run tests/servers/fleet_desk.py --http`).

The example's server and resolvers, with its refund tool re-registered to
append each refund it performs to a ledger file (one `write` in append
mode: atomic for a line this short, so workers never interleave), which is
how a test counts doubled and lost refunds. Every store is on Redis through
MCP_RESOLVE_REDIS_URL; nothing here configures one. Plus three tools for the
fleet's other checks: which worker answered, a tool added at run time (a
list change), and a slow call with progress (resumable SSE).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "refund_desk"))

from server import Receipt, Restock, ask_restock, mcp, refund_amount

from mcp_resolve import AcceptedElicitation, Context, ElicitationResult, Resolve

LEDGER = os.environ.get("FLEET_LEDGER")

mcp.remove_tool("refund_order")


@mcp.tool(single_use=True)
async def refund_order(
    order_id: str,
    reason: str,
    cents: Annotated[int, Resolve(refund_amount)],
    restock: Annotated[ElicitationResult[Restock], Resolve(ask_restock)],
) -> Receipt:
    """Refund an order. The amount comes from the order record, never from the caller."""
    restocked = isinstance(restock, AcceptedElicitation) and restock.data.restock
    if LEDGER:
        with open(LEDGER, "a") as ledger:
            ledger.write(f"{reason}\t{os.getpid()}\n")
    return Receipt(order_id=order_id, reason=reason, cents=cents, restocked=restocked)


@mcp.tool()
def worker() -> int:
    """The process id of the worker that answered."""
    return os.getpid()


@mcp.tool()
async def open_counter(name: str) -> int:
    """Add a tool on this worker and tell every listener of the fleet."""
    mcp.add_tool(lambda: "open", name=name, description="a counter opened at run time")
    return await mcp.notify_list_changed("tools")


@mcp.tool()
async def slow(ctx: Context, steps: int = 4) -> int:
    for step in range(steps):
        await ctx.report_progress(step, steps)
        await anyio.sleep(0.2)
    return os.getpid()
