"""The benchmark workloads on mcp-resolve.

Run `python -m benchmarks.servers.ours [stdio | http PORT]`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from mcp_resolve import AcceptedElicitation, Context, Elicit, ElicitationResult, MCPServer, Resolve, ToolError

from ._common import (
    FAN_OUT_DELAY,
    ORDERS,
    STOCK,
    Order,
    Receipt,
    Restock,
    Scope,
    delivery_for,
    production_module,
    serve_from_argv,
)

production = production_module()

mcp = MCPServer("bench", **production.ours_options()) if production else MCPServer("bench")
if production:
    production.ours_tracing(mcp)


# -- W1 ------------------------------------------------------------------------------------
@mcp.tool()
async def echo(text: str) -> str:
    return text


# -- W2: check_stock is consumed twice (by the tool and by estimate_delivery) ----------------
async def check_stock(title: str) -> int:
    return STOCK.get(title, 0)


async def estimate_delivery(stock: Annotated[int, Resolve(check_stock)]) -> str:
    return delivery_for(stock)


@mcp.tool()
async def order_book(
    title: str,
    stock: Annotated[int, Resolve(check_stock)],
    delivery: Annotated[str, Resolve(estimate_delivery)],
) -> str:
    return f"{title}: {stock} in stock, delivery in {delivery}"


# -- W3: four independent resolvers, 20 ms each -------------------------------------------
async def _wait(n: int) -> int:
    await asyncio.sleep(FAN_OUT_DELAY)
    return n


async def part_a(x: int) -> int:
    return await _wait(x)


async def part_b(x: int) -> int:
    return await _wait(x + 1)


async def part_c(x: int) -> int:
    return await _wait(x + 2)


async def part_d(x: int) -> int:
    return await _wait(x + 3)


@mcp.tool()
async def fan_out(
    x: int,
    a: Annotated[int, Resolve(part_a)],
    b: Annotated[int, Resolve(part_b)],
    c: Annotated[int, Resolve(part_c)],
    d: Annotated[int, Resolve(part_d)],
) -> int:
    return a + b + c + d


# -- W3 floor: one 20 ms await in the body, no resolvers (what the transport and machine add) -
@mcp.tool()
async def nap(x: int) -> int:
    await asyncio.sleep(FAN_OUT_DELAY)
    return x


# -- W4: the refund desk (examples/refund_desk/server.py) -----------------------------------


async def load_order(order_id: str) -> Order:
    lines = ORDERS.get(order_id)
    if lines is None:
        raise ToolError(f"unknown order {order_id!r}")
    return Order(order_id=order_id, lines=list(lines))


async def refund_scope(order: Annotated[Order, Resolve(load_order)]) -> Scope | Elicit[Scope]:
    if len(order.lines) == 1:
        return Scope(full=True)
    skus = ", ".join(line[0] for line in order.lines)
    return Elicit(f"Order {order.order_id} has several items ({skus}). Refund the whole order?", Scope)


def _scoped(order: Order, scope: Scope) -> list[tuple[str, int, bool]]:
    if scope.full:
        return order.lines
    chosen = [line for line in order.lines if line[0] == scope.sku.strip()]
    if not chosen:
        raise ToolError(f"order has no item {scope.sku!r}")
    return chosen


async def refund_amount(
    order: Annotated[Order, Resolve(load_order)], scope: Annotated[Scope, Resolve(refund_scope)]
) -> int:
    return sum(line[1] for line in _scoped(order, scope))


async def ask_restock(
    order: Annotated[Order, Resolve(load_order)], scope: Annotated[Scope, Resolve(refund_scope)]
) -> Restock | Elicit[Restock]:
    lines = _scoped(order, scope)
    if not any(line[2] for line in lines):
        return Restock(restock=False)
    return Elicit(f"Restock {', '.join(line[0] for line in lines)}?", Restock)


@mcp.tool(single_use=True)
async def refund_order(
    order_id: str,
    reason: str,
    cents: Annotated[int, Resolve(refund_amount)],
    restock: Annotated[ElicitationResult[Restock], Resolve(ask_restock)],
) -> Receipt:
    restocked = isinstance(restock, AcceptedElicitation) and restock.data.restock
    return Receipt(order_id=order_id, reason=reason, cents=cents, restocked=restocked)


# -- W5: many tools that use resolvers ------------------------------------------------------
async def caller_tag(tag: str, ctx: Context) -> str:
    return f"{tag}@{ctx.request_id}"


def register_many(n: int) -> Any:
    """A fresh server with `n` tools, each taking an argument and a resolver that reads it and the Context."""
    server = MCPServer("many")
    for i in range(n):

        async def tool(tag: str, who: Annotated[str, Resolve(caller_tag)]) -> str:
            return who

        server.add_tool(tool, name=f"tool_{i}")
    return server


if __name__ == "__main__":
    serve_from_argv(mcp.run, production.ours_http_app(mcp) if production else mcp.streamable_http_app)
