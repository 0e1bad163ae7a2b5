"""The three Bookshop servers of the dependencies guide, as written there, one factory each.

Each factory builds a fresh server whose `check_stock` counts its runs in
`shop.stock_lookups`, the guide's "put a print in check_stock" made countable.
Only the imports differ from the guide (`mcp_resolve` instead of `mcp.server`). No
`from __future__ import annotations`: the resolvers are closures, and string
annotations could not name them.
"""

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, Field

from mcp_resolve import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve

INVENTORY = {"Dune": 7, "Neuromancer": 0}


class Stock(BaseModel):
    title: str
    copies: int


class Backorder(BaseModel):
    confirm: bool = Field(description="Order anyway and wait?")


@dataclass
class Shop:
    mcp: MCPServer
    stock_lookups: list[str] = field(default_factory=list)


def _stock_checker(shop: Shop):
    async def check_stock(title: str) -> Stock:
        shop.stock_lookups.append(title)
        return Stock(title=title, copies=INVENTORY.get(title, 0))

    return check_stock


def declare_one() -> Shop:
    """The "Declare one" server: reserve_book with a single resolver."""
    shop = Shop(MCPServer("Bookshop"))
    check_stock = _stock_checker(shop)

    @shop.mcp.tool()
    async def reserve_book(title: str, stock: Annotated[Stock, Resolve(check_stock)]) -> str:
        """Reserve a copy of a book."""
        if stock.copies == 0:
            return f"{title!r} is out of stock."
        return f"Reserved {title!r} ({stock.copies - 1} copies left)."

    return shop


def dependencies_of_dependencies() -> Shop:
    """The "Dependencies of dependencies" server: order_book with check_stock shared by two consumers."""
    shop = Shop(MCPServer("Bookshop"))
    check_stock = _stock_checker(shop)

    async def estimate_delivery(stock: Annotated[Stock, Resolve(check_stock)]) -> str:
        return "tomorrow" if stock.copies > 0 else "in 2-3 weeks"

    @shop.mcp.tool()
    async def order_book(
        title: str,
        stock: Annotated[Stock, Resolve(check_stock)],
        delivery: Annotated[str, Resolve(estimate_delivery)],
    ) -> str:
        """Order a book from the shop."""
        if stock.copies == 0:
            return f"{title!r} is on backorder; it would arrive {delivery}."
        return f"Ordered {title!r}; it arrives {delivery}."

    return shop


def ask_when_you_must() -> Shop:
    """The "Ask when you must" server: confirm_backorder asks only when the book is out of stock.

    `order_book` is the guide's tool; `order_book_or_suggest` is the variant the
    guide describes for `ElicitationResult[Backorder]`, which branches on a decline.
    """
    shop = Shop(MCPServer("Bookshop"))
    check_stock = _stock_checker(shop)

    async def confirm_backorder(
        title: str,
        stock: Annotated[Stock, Resolve(check_stock)],
    ) -> Backorder | Elicit[Backorder]:
        if stock.copies > 0:
            return Backorder(confirm=True)  # in stock: nothing to ask
        return Elicit(f"{title!r} is out of stock (2-3 weeks). Order anyway?", Backorder)

    @shop.mcp.tool()
    async def order_book(
        title: str,
        stock: Annotated[Stock, Resolve(check_stock)],
        backorder: Annotated[Backorder, Resolve(confirm_backorder)],
    ) -> str:
        """Order a book from the shop."""
        if not backorder.confirm:
            return "No order placed."
        if stock.copies == 0:
            return f"Backordered {title!r}; it ships in 2-3 weeks."
        return f"Ordered {title!r}."

    @shop.mcp.tool()
    async def order_book_or_suggest(
        title: str,
        backorder: Annotated[ElicitationResult[Backorder], Resolve(confirm_backorder)],
    ) -> str:
        """Order a book, or suggest another title when the person will not wait."""
        if isinstance(backorder, AcceptedElicitation):
            return f"Backordered {title!r}." if backorder.data.confirm else "No order placed."
        return f"No backorder ({backorder.action}); may we suggest 'Dune'?"

    return shop
