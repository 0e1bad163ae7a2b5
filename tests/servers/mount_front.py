"""The refund desk and the bookshop served as one server, with a guarded billing server beside them.

    (no prefix)  the refund desk (examples/refund_desk): refund_order, its app-only tools, its receipt view
    shop_        the bookshop's "Ask when you must" server (tests/servers_bookshop.py): order_book, ...
    billing_     a ledger with a lifespan and a middleware, its `customer_id` hidden: the front's
                 `current_customer` (the token's subject, else "alice") fills it

`python tests/servers/mount_front.py` serves it on stdio; tests import `front()` for HTTP and memory.
"""

# No `from __future__ import annotations`: the handlers are closures.

import importlib.util
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp_resolve import Context, MCPError, MCPServer, Resolve

TESTS = Path(__file__).resolve().parents[1]
REFUND_DESK = TESTS.parent / "examples" / "refund_desk" / "server.py"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from servers_bookshop import ask_when_you_must  # noqa: E402

LEDGER = {"alice": ["INV-1 paid", "INV-2 open"], "bob": ["INV-9 open"]}


def load_refund_desk() -> ModuleType:
    """A fresh import of the refund desk example (its module-level server is new each time)."""
    spec = importlib.util.spec_from_file_location(f"_mounted_refund_desk_{id(object())}", REFUND_DESK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def billing_server() -> MCPServer:
    """A ledger whose tool takes `customer_id` as an argument: unsafe alone, a guard once mounted with hide=."""

    @asynccontextmanager
    async def opened(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        yield {"ledger": LEDGER, "seen": []}

    async def refuse_closed(ctx: Any, call_next: Any) -> Any:
        """Billing's own middleware: it sees only billing's requests, under billing's own names."""
        if ctx.lifespan_context is not None:
            ctx.lifespan_context["seen"].append(f"{ctx.method} {(ctx.params or {}).get('name', '')}".strip())
        arguments = (ctx.params or {}).get("arguments") or {}
        if arguments.get("status") == "closed":
            raise MCPError(-32602, "billing does not serve closed invoices")
        return await call_next(ctx)

    billing = MCPServer("Billing", lifespan=opened, middleware=[refuse_closed])

    @billing.tool()
    async def invoices(customer_id: str, status: str, ctx: Context) -> list[str]:
        """The customer's invoices with this status."""
        ledger = ctx.lifespan_context["ledger"]
        return [line for line in ledger.get(customer_id, []) if line.endswith(status)]

    @billing.tool()
    async def seen(ctx: Context) -> list[str]:
        """What billing's middleware saw so far."""
        return list(ctx.lifespan_context["seen"])

    return billing


async def current_customer(ctx: Context) -> str:
    """The front's answer to "who is asking": the token's subject, else the person at this machine."""
    token = ctx.access_token
    return token.subject if token is not None and token.subject else "alice"


def front() -> tuple[MCPServer, ModuleType]:
    """The composed server, and the refund desk module mounted in it (its ORDERS and RESTOCKED)."""
    desk = load_refund_desk()
    shop = ask_when_you_must()
    server = MCPServer("Front desk")
    server.mount(desk.mcp)
    server.mount(shop.mcp, prefix="shop")
    server.mount(billing_server(), prefix="billing", hide={"customer_id": Resolve(current_customer)})
    return server, desk


if __name__ == "__main__":
    front()[0].run()
