"""W1 and W4 on mcp-resolve written with synchronous (`def`) tools and resolvers.

The same answers as `ours.py`, for the resolver style many users write: each
`def` runs in a worker thread (anyio's pool). `benchmarks/production.py`
measures it beside the `async def` server, on both event loops.

Run `python -m benchmarks.servers.ours_sync [stdio | http PORT]`.
"""

from __future__ import annotations

from typing import Annotated

from mcp_resolve import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve, ToolError

from ._common import ORDERS, Order, Receipt, Restock, Scope, production_module, serve_from_argv

production = production_module()
mcp = MCPServer("bench", **production.ours_options()) if production else MCPServer("bench")


@mcp.tool()
def echo(text: str) -> str:
    return text


def load_order(order_id: str) -> Order:
    lines = ORDERS.get(order_id)
    if lines is None:
        raise ToolError(f"unknown order {order_id!r}")
    return Order(order_id=order_id, lines=list(lines))


def refund_scope(order: Annotated[Order, Resolve(load_order)]) -> Scope | Elicit[Scope]:
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


def refund_amount(
    order: Annotated[Order, Resolve(load_order)], scope: Annotated[Scope, Resolve(refund_scope)]
) -> int:
    return sum(line[1] for line in _scoped(order, scope))


def ask_restock(
    order: Annotated[Order, Resolve(load_order)], scope: Annotated[Scope, Resolve(refund_scope)]
) -> Restock | Elicit[Restock]:
    lines = _scoped(order, scope)
    if not any(line[2] for line in lines):
        return Restock(restock=False)
    return Elicit(f"Restock {', '.join(line[0] for line in lines)}?", Restock)


@mcp.tool(single_use=True)
def refund_order(
    order_id: str,
    reason: str,
    cents: Annotated[int, Resolve(refund_amount)],
    restock: Annotated[ElicitationResult[Restock], Resolve(ask_restock)],
) -> Receipt:
    restocked = isinstance(restock, AcceptedElicitation) and restock.data.restock
    return Receipt(order_id=order_id, reason=reason, cents=cents, restocked=restocked)


if __name__ == "__main__":
    serve_from_argv(mcp.run, mcp.streamable_http_app)
