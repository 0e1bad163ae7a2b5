"""The refund desk as one worker of the soak fleet (`benchmarks/soak.py` starts two, or three behind nginx).

The desk's own resolvers and questions (examples/refund_desk/server.py),
with two changes a fleet and a ledger need: single-use claims go to a
replay store the workers share, and the refund body writes a row to
a SQLite ledger, keyed by a `flow_id` the client passes, so "refunded once"
is counted by the server and not inferred from what a client saw.

Configured only through the environment (the soak driver sets them):
`MCP_RESOLVE_STATE_KEYS` (shared sealing keys), `SOAK_LEDGER_DB` (a file
path), and either `SOAK_REPLAY_DB` (a SQLite replay store the workers of
the two-worker leg share) or `MCP_RESOLVE_REDIS_URL` (every store on Redis:
the fleet leg). Served with `uvicorn soak_server:app` or `mcp-resolve run FILE --http`.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Annotated

import anyio.to_thread

from mcp_resolve import AcceptedElicitation, ElicitationResult, MCPServer, Resolve, SqliteReplayStore

REFUND_DESK = Path(__file__).resolve().parent.parent / "examples" / "refund_desk" / "server.py"
LEDGER_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS refunds ("
    " flow_id TEXT NOT NULL, order_id TEXT NOT NULL, cents INTEGER NOT NULL,"
    " restocked INTEGER NOT NULL, pid INTEGER NOT NULL, at REAL NOT NULL)"
)
"""No uniqueness on flow_id on purpose: a refund recorded twice must show, not be absorbed."""


def _import_refund_desk() -> ModuleType:
    """The example under one fixed module name, so its question keys are the same in every worker."""
    name = "refund_desk"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REFUND_DESK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


desk = _import_refund_desk()
Restock = desk.Restock
Receipt = desk.Receipt
refund_amount = desk.refund_amount
ask_restock = desk.ask_restock


class Ledger:
    """An append-only table of refunds; one connection per process, writes off the event loop."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _record(self, flow_id: str, order_id: str, cents: int, restocked: bool) -> None:
        with self._lock:
            if self._conn is None:
                self._conn = sqlite3.connect(
                    self.path, timeout=30, isolation_level=None, check_same_thread=False
                )
                self._conn.execute("PRAGMA busy_timeout = 30000")
            self._conn.execute(
                "INSERT INTO refunds VALUES (?, ?, ?, ?, ?, ?)",
                (flow_id, order_id, cents, int(restocked), os.getpid(), time.time()),
            )

    async def record(self, flow_id: str, order_id: str, cents: int, restocked: bool) -> None:
        await anyio.to_thread.run_sync(self._record, flow_id, order_id, cents, restocked)


def create_ledger(path: str) -> None:
    """Create the ledger file before any worker starts (switching to WAL while others open it can fail)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(LEDGER_SCHEMA)


ledger = Ledger(os.environ.get("SOAK_LEDGER_DB", "soak-ledger.sqlite3"))
mcp = MCPServer(
    "Refund Desk",
    instructions=desk.mcp.instructions,
    replay_store=SqliteReplayStore(os.environ["SOAK_REPLAY_DB"]) if "SOAK_REPLAY_DB" in os.environ else None,
)


@mcp.tool(single_use=True)
async def refund_order(
    order_id: str,
    reason: str,
    flow_id: str,
    cents: Annotated[int, Resolve(refund_amount)],
    restock: Annotated[ElicitationResult[Restock], Resolve(ask_restock)],
) -> Receipt:
    """Refund an order. The amount comes from the order record, never from the caller."""
    restocked = isinstance(restock, AcceptedElicitation) and restock.data.restock
    await ledger.record(flow_id, order_id, cents, restocked)
    return Receipt(order_id=order_id, reason=reason, cents=cents, restocked=restocked)


app = mcp.streamable_http_app()
