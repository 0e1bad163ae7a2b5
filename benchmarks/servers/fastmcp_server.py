"""The benchmark workloads on FastMCP 4.1.6, where it has an equivalent.

FastMCP's dependency injection is `Depends` (from `uncalled_for`): a
dependency reads a tool argument through `CallArgument()`, is cached once per
call, and dependencies resolve one after another. It has no resolver that
returns a question: W4 asks with `ctx.elicit` inside the tool body, which
FastMCP supports only on the handshake era (on 2026-07-28 it raises and points
to a hand-written `InputRequiredResult` guard), so W4 runs here on the
handshake era only.

Run `python -m benchmarks.servers.fastmcp_server [stdio | http PORT]`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.dependencies import CallArgument, CurrentContext, Depends
from fastmcp.exceptions import ToolError
from pydantic import BaseModel, Field

from ._common import FAN_OUT_DELAY, ORDERS, STOCK, delivery_for, serve_from_argv

mcp = FastMCP("bench")


# -- W1 ------------------------------------------------------------------------------------
@mcp.tool
async def echo(text: str) -> str:
    return text


# -- W2: check_stock is consumed twice (by the tool and by estimate_delivery) ----------------
async def check_stock(title: str = CallArgument()) -> int:
    return STOCK.get(title, 0)


async def estimate_delivery(stock: int = Depends(check_stock)) -> str:
    return delivery_for(stock)


@mcp.tool
async def order_book(
    title: str,
    stock: int = Depends(check_stock),
    delivery: str = Depends(estimate_delivery),
) -> str:
    return f"{title}: {stock} in stock, delivery in {delivery}"


# -- W3: four independent dependencies, 20 ms each ------------------------------------------
async def _wait(n: int) -> int:
    await asyncio.sleep(FAN_OUT_DELAY)
    return n


async def part_a(x: int = CallArgument()) -> int:
    return await _wait(x)


async def part_b(x: int = CallArgument()) -> int:
    return await _wait(x + 1)


async def part_c(x: int = CallArgument()) -> int:
    return await _wait(x + 2)


async def part_d(x: int = CallArgument()) -> int:
    return await _wait(x + 3)


@mcp.tool
async def fan_out(
    x: int,
    a: int = Depends(part_a),
    b: int = Depends(part_b),
    c: int = Depends(part_c),
    d: int = Depends(part_d),
) -> int:
    return a + b + c + d


# -- W3 floor: one 20 ms await in the body, no resolvers (what the transport and machine add) -
@mcp.tool
async def nap(x: int) -> int:
    await asyncio.sleep(FAN_OUT_DELAY)
    return x


# -- W4: the refund desk, asking in the body (handshake era only) ----------------------------
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


@mcp.tool
async def refund_order(order_id: str, reason: str, ctx: Context) -> Receipt:
    lines = list(ORDERS.get(order_id) or ())
    if not lines:
        raise ToolError(f"unknown order {order_id!r}")
    scope = Scope(full=True)
    if len(lines) > 1:
        skus = ", ".join(line[0] for line in lines)
        answer = await ctx.elicit(
            f"Order {order_id} has several items ({skus}). Refund the whole order?", Scope
        )
        if answer.action != "accept":
            raise ToolError(
                f"Resolver for parameter 'scope' could not resolve: elicitation was {answer.action}"
            )
        scope = answer.data
    if not scope.full:
        lines = [line for line in lines if line[0] == scope.sku.strip()]
        if not lines:
            raise ToolError(f"order has no item {scope.sku!r}")
    restocked = False
    if any(line[2] for line in lines):
        restock = await ctx.elicit(f"Restock {', '.join(line[0] for line in lines)}?", Restock)
        restocked = restock.action == "accept" and restock.data.restock
    return Receipt(
        order_id=order_id, reason=reason, cents=sum(line[1] for line in lines), restocked=restocked
    )


# -- W5: many tools that use dependencies ---------------------------------------------------
async def caller_tag(tag: str = CallArgument(), ctx: Context = CurrentContext()) -> str:
    return f"{tag}@{ctx.request_id}"


def register_many(n: int) -> Any:
    """A fresh server with `n` tools, each taking an argument and a dependency that reads it and the Context."""
    server = FastMCP("many")
    for i in range(n):

        async def tool(tag: str, who: str = Depends(caller_tag)) -> str:
            return who

        server.tool(tool, name=f"tool_{i}")
    return server


if __name__ == "__main__":
    serve_from_argv(lambda: mcp.run(transport="stdio", show_banner=False), mcp.http_app)
