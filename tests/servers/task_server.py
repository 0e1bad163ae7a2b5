"""A task server for restart tests: tasks in a SQLite file, a short lease, one slow tool and one that asks.

python task_server.py --db tasks.db [--port N] [--lease SECONDS]   # stdio without --port
"""

from __future__ import annotations

import argparse
from typing import Annotated

import anyio
from pydantic import BaseModel

from mcp_resolve import Elicit, MCPServer, Resolve
from mcp_resolve.stores import SqliteTaskStore
from mcp_resolve.tasks import TaskOptions


class Ok(BaseModel):
    ok: bool


async def ask_ok(note: str) -> Elicit[Ok]:
    return Elicit(f"Confirm {note}?", Ok, key="ok")


def build(db: str, lease: float) -> MCPServer:
    mcp = MCPServer(
        "task-server",
        task_store=SqliteTaskStore(db),
        task_options=TaskOptions(poll_interval_ms=50, lease_seconds=lease),
    )

    @mcp.tool(task_support="optional")
    async def slow(seconds: float = 60) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds:g} s"

    @mcp.tool(task_support="optional")
    async def confirm(note: str, ok: Annotated[Ok, Resolve(ask_ok)]) -> str:
        return f"{note}: {'confirmed' if ok.ok else 'refused'}"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--port", type=int)
    parser.add_argument("--lease", type=float, default=30.0)
    options = parser.parse_args()
    mcp = build(options.db, options.lease)
    if options.port is None:
        mcp.run()
    else:
        mcp.run(transport="streamable-http", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
