"""Bookshop, step 2: dependencies of dependencies. `estimate_delivery` needs `check_stock`, and so does the tool.

The graph is the annotations: stock first, then the estimate, then the tool.
`check_stock` has two consumers but runs once per call; `LOOKUPS` counts the
inventory lookups so a client in the same process can see it.
"""

from collections import Counter
from typing import Annotated

from pydantic import BaseModel

from mcp_resolve import MCPServer, Resolve

mcp = MCPServer("Bookshop")

INVENTORY = {"Dune": 7, "Neuromancer": 0}
LOOKUPS: Counter[str] = Counter()


class Stock(BaseModel):
    title: str
    copies: int


async def check_stock(title: str) -> Stock:
    LOOKUPS[title] += 1
    return Stock(title=title, copies=INVENTORY.get(title, 0))


async def estimate_delivery(stock: Annotated[Stock, Resolve(check_stock)]) -> str:
    return "tomorrow" if stock.copies > 0 else "in 2-3 weeks"


@mcp.tool()
async def order_book(
    title: str,
    stock: Annotated[Stock, Resolve(check_stock)],
    delivery: Annotated[str, Resolve(estimate_delivery)],
) -> str:
    """Order a book from the shop."""
    if stock.copies == 0:
        return f"{title!r} is on backorder; it would arrive {delivery}."
    return f"Ordered {title!r}; it arrives {delivery}."


if __name__ == "__main__":
    mcp.run()
