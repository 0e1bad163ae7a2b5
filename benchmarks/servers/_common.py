"""What every benchmark server shares: the workload data and the command line that serves it.

Kept free of any framework import, so importing it costs the same for all
three servers and an idle server's memory is its framework's, not ours.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

STOCK = {"Dune": 3, "Emma": 0, "Ulysses": 12}
FAN_OUT_DELAY = 0.02  # W3: each of the four resolvers awaits this long

# W4: the refund desk's order records (examples/refund_desk/server.py).
ORDERS: dict[str, tuple[tuple[str, int, bool], ...]] = {
    "ORD-7001": (("ebook-dune", 999, False),),
    "ORD-7002": (("trail-boots", 2400, True), ("wool-socks", 2400, True)),
}


def delivery_for(stock: int) -> str:
    return "2 days" if stock > 0 else "3 weeks"


def production_module() -> Any:
    """`servers/_production.py` when the driver asked for a production setting (BENCH_JWKS, BENCH_REDIS,
    BENCH_TRACING, BENCH_STREAMS), else None: a plain bench server imports nothing more."""
    if not any(
        os.environ.get(name) for name in ("BENCH_JWKS", "BENCH_REDIS", "BENCH_TRACING", "BENCH_STREAMS")
    ):
        return None
    from . import _production

    return _production


def serve_from_argv(run_stdio: Callable[[], None], http_app: Callable[[], Any]) -> None:
    """`stdio` (default) or `http PORT`; writes our pid where $BENCH_PID_FILE says, so the driver can watch us."""
    pid_file = os.environ.get("BENCH_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    args = sys.argv[1:] or ["stdio"]
    if args[0] == "http":
        import uvicorn

        # uvicorn picks httptools and uvloop when installed (mcp-resolve installs both); `run.py
        # --http-stack h11` asks every server for the pure-Python parser on the stdlib loop instead.
        # `production.py` picks the event loop alone with $BENCH_LOOP (asyncio or uvloop; httptools either way).
        stack: dict[str, Any] = (
            {"http": "h11", "loop": "asyncio"} if os.environ.get("BENCH_HTTP_STACK") == "h11" else {}
        )
        if os.environ.get("BENCH_LOOP"):
            stack["loop"] = os.environ["BENCH_LOOP"]
        uvicorn.run(
            http_app(), host="127.0.0.1", port=int(args[1]), log_level="warning", access_log=False, **stack
        )
    else:
        run_stdio()


# -- W4's models, the same for every framework's refund desk ---------------------------------------
class Order(BaseModel):
    order_id: str
    lines: list[tuple[str, int, bool]]


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
