"""A task server for the store-bound tests: open (no authentication), default bounds unless told otherwise.

python task_bounds_server.py --port N [--redis URL --prefix P] [--ttl-ms MS] [--max-bytes-per-principal B]

`keep(blob)` is a task that finishes at once, keeping its (large) argument
for the task's TTL, as any task keeps its call; `confirm` parks on a question.
"""

from __future__ import annotations

import argparse
from typing import Annotated, Any

from pydantic import BaseModel

from mcp_resolve import Elicit, MCPServer, Resolve
from mcp_resolve.tasks import TaskOptions


class Ok(BaseModel):
    ok: bool


async def ask_ok() -> Elicit[Ok]:
    return Elicit("Go?", Ok, key="ok")


def build(options: argparse.Namespace) -> MCPServer:
    bounds: dict[str, Any] = {"poll_interval_ms": 50}
    if options.ttl_ms is not None:
        bounds["ttl_ms"] = options.ttl_ms
    if options.max_bytes_per_principal is not None:
        bounds["max_bytes_per_principal"] = options.max_bytes_per_principal
    store = None
    if options.redis is not None:
        from mcp_resolve.stores._redis.connection import RedisConnection
        from mcp_resolve.stores._redis.tasks import RedisTaskStore

        store = RedisTaskStore(RedisConnection(options.redis, prefix=options.prefix))
    mcp = MCPServer("task-bounds", task_store=store, task_options=TaskOptions(**bounds))

    @mcp.tool(task_support="optional")
    async def keep(blob: str) -> int:
        return len(blob)

    @mcp.tool(task_support="optional")
    async def confirm(ok: Annotated[Ok, Resolve(ask_ok)]) -> str:
        return f"ok={ok.ok}"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--redis")
    parser.add_argument("--prefix", default="mcp-resolve")
    parser.add_argument("--ttl-ms", type=int)
    parser.add_argument("--max-bytes-per-principal", type=int)
    options = parser.parse_args()
    build(options).run(transport="streamable-http", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
