"""The refund desk: the model names the order and the reason; the amount comes from our records.

`refund_order(order_id, reason)` is all the model sees. `cents` and `restock`
are filled by resolvers: the amount from the order record (and, for a
multi-line order, the person's choice of scope), the restock decision from a
question to the person. The model cannot supply or inflate the amount.

    load_order -> refund_scope -> refund_amount  (cents, unwrapped: declining the scope aborts)
                               -> ask_restock    (restock, full outcome: declining still refunds)

Run it: `python examples/refund_desk/server.py` (stdio) or add `--http --port 8000`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, Field

from mcp_resolve import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    ToolError,
)

mcp = MCPServer("Refund Desk", instructions="Refunds follow the order record; the desk asks the person what it needs.")


@dataclass(frozen=True)
class Line:
    sku: str
    cents: int
    restockable: bool


ORDERS: dict[str, tuple[Line, ...]] = {
    "ORD-7001": (Line("ebook-dune", 999, restockable=False),),
    "ORD-7002": (Line("trail-boots", 2400, restockable=True), Line("wool-socks", 2400, restockable=True)),
}


class Order(BaseModel):
    order_id: str
    lines: list[Line]


class Scope(BaseModel):
    full: bool = Field(description="Refund the whole order? Say no to refund a single item.")
    sku: str = Field(default="", description="If not the whole order: the SKU of the item to refund.")


class Restock(BaseModel):
    restock: bool = Field(description="Put the returned items back into stock?")


class Receipt(BaseModel):
    order_id: str
    reason: str
    cents: int
    restocked: bool


async def load_order(order_id: str) -> Order:
    lines = ORDERS.get(order_id)
    if lines is None:
        raise ToolError(f"unknown order {order_id!r}")
    return Order(order_id=order_id, lines=list(lines))


async def refund_scope(order: Annotated[Order, Resolve(load_order)]) -> Scope | Elicit[Scope]:
    if len(order.lines) == 1:
        return Scope(full=True)  # nothing to choose: no question
    skus = ", ".join(line.sku for line in order.lines)
    return Elicit(f"Order {order.order_id} has several items ({skus}). Refund the whole order?", Scope)


def _scoped(order: Order, scope: Scope) -> list[Line]:
    """The lines a scope covers; the SKU is human-typed, so check it against the order."""
    if scope.full:
        return order.lines
    chosen = [line for line in order.lines if line.sku == scope.sku.strip()]
    if not chosen:
        raise ToolError(f"order has no item {scope.sku!r}")
    return chosen


async def refund_amount(
    order: Annotated[Order, Resolve(load_order)],
    scope: Annotated[Scope, Resolve(refund_scope)],
) -> int:
    return sum(line.cents for line in _scoped(order, scope))


async def ask_restock(
    order: Annotated[Order, Resolve(load_order)],
    scope: Annotated[Scope, Resolve(refund_scope)],
) -> Restock | Elicit[Restock]:
    lines = _scoped(order, scope)
    if not any(line.restockable for line in lines):
        return Restock(restock=False)  # nothing physical came back: no question
    return Elicit(f"Restock {', '.join(line.sku for line in lines)}?", Restock)


@mcp.tool(single_use=True)
async def refund_order(
    order_id: str,
    reason: str,
    cents: Annotated[int, Resolve(refund_amount)],
    restock: Annotated[ElicitationResult[Restock], Resolve(ask_restock)],
) -> Receipt:
    """Refund an order. The amount comes from the order record, never from the caller."""
    restocked = isinstance(restock, AcceptedElicitation) and restock.data.restock
    return Receipt(order_id=order_id, reason=reason, cents=cents, restocked=restocked)


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 8000
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port)
    else:
        mcp.run()
