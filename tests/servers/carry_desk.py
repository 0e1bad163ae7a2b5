"""A refund that takes three rounds on 2026-07-28, priced by a generator resolver that opens a database.

`price_lookup` opens a real (SQLite, in-memory) connection, reads the order's
price through it, yields a `Quote` and closes the connection. Every open, close
and resolver run is a line in an events file, so a test proves how often each
ran, in this process or in a server subprocess.

Two tools share the lookup and the questions (scope, then restock, which
depends on the scope, hence three rounds):

    refund        Resolve(price_lookup, carry=True), plus a handling fee carried once the scope is known
    refund_fresh  Resolve(price_lookup): the lookup runs again in every round

`python tests/servers/carry_desk.py` serves stdio; `CARRY_DESK_EVENTS` names the events file.
"""

# No `from __future__ import annotations`: the handlers are closures, so their annotations
# must be evaluated where the local resolvers are in scope.

import os
import sqlite3
from collections.abc import Iterator
from typing import Annotated

from pydantic import BaseModel

from mcp_resolve import Elicit, MCPServer, RequestStateSecurity, Resolve

PRICES = {"ORD-1": 4800, "ORD-2": 999}


class Quote(BaseModel):
    order_id: str
    cents: int


class Scope(BaseModel):
    full: bool


class Restock(BaseModel):
    restock: bool


class Receipt(BaseModel):
    order_id: str
    cents: int
    fee: int
    restocked: bool


def build(events_path: str | None, security: RequestStateSecurity | None = None) -> MCPServer:
    mcp = MCPServer("Carry Desk", request_state_security=security)

    def record(event: str) -> None:
        if events_path:
            with open(events_path, "a", encoding="utf-8") as file:
                file.write(event + "\n")

    def price_lookup(order_id: str) -> Iterator[Quote]:
        """The expensive one: a connection per run (check_same_thread off: cleanup may run on another thread)."""
        connection = sqlite3.connect(":memory:", check_same_thread=False)
        record("open")
        try:
            connection.execute("create table prices (order_id text primary key, cents integer)")
            connection.executemany("insert into prices values (?, ?)", PRICES.items())
            (cents,) = connection.execute(
                "select cents from prices where order_id = ?", (order_id,)
            ).fetchone()
            yield Quote(order_id=order_id, cents=cents)
        finally:
            connection.close()
            record("close")

    async def ask_scope(quote: Annotated[Quote, Resolve(price_lookup, carry=True)]) -> Scope | Elicit[Scope]:
        record("scope")  # runs in every round: it asks, and its answer rides the state as an answer
        return Elicit(f"Refund all of {quote.order_id} ({quote.cents} cents)?", Scope)

    async def ask_scope_fresh(quote: Annotated[Quote, Resolve(price_lookup)]) -> Scope | Elicit[Scope]:
        record("scope")
        return Elicit(f"Refund all of {quote.order_id} ({quote.cents} cents)?", Scope)

    async def ask_restock(scope: Annotated[Scope, Resolve(ask_scope)]) -> Restock | Elicit[Restock]:
        return Elicit("Put the items back into stock?", Restock)

    async def ask_restock_fresh(
        scope: Annotated[Scope, Resolve(ask_scope_fresh)],
    ) -> Restock | Elicit[Restock]:
        return Elicit("Put the items back into stock?", Restock)

    async def handling_fee(scope: Annotated[Scope, Resolve(ask_scope)]) -> int:
        """Carried, and computable only once the scope is answered: it runs in round two, then rides along."""
        record("fee")
        return 0 if scope.full else 150

    @mcp.tool()
    async def refund(
        order_id: str,
        quote: Annotated[Quote, Resolve(price_lookup, carry=True)],
        scope: Annotated[Scope, Resolve(ask_scope)],
        restock: Annotated[Restock, Resolve(ask_restock)],
        fee: Annotated[int, Resolve(handling_fee, carry=True)],
    ) -> Receipt:
        record("refund")
        return Receipt(order_id=order_id, cents=quote.cents - fee, fee=fee, restocked=restock.restock)

    @mcp.tool()
    async def refund_fresh(
        order_id: str,
        quote: Annotated[Quote, Resolve(price_lookup)],
        scope: Annotated[Scope, Resolve(ask_scope_fresh)],
        restock: Annotated[Restock, Resolve(ask_restock_fresh)],
    ) -> Receipt:
        record("refund")
        return Receipt(order_id=order_id, cents=quote.cents, fee=0, restocked=restock.restock)

    return mcp


if __name__ == "__main__":
    build(os.environ.get("CARRY_DESK_EVENTS")).run()
