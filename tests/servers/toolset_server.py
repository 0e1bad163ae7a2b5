"""A server for the pydantic-ai toolset tests (`tests/pydantic_ai/test_pydantic_ai_toolset.py`): lists that change, logs, `_meta`.

`open_counter(name)` registers a tool while clients are connected and
announces it (`notifications/tools/list_changed`), so a client's cached tool
list must be dropped. `shout` logs at debug and info, for log levels.
`echo_context` returns the request's `_meta` entry `trace` and its `X-Team`
header, so a test sees what a toolset sent (it also runs as a task when
asked); `only_as_a_task` runs only as one; `environment(name)` the process's
working directory and a variable. `build(cache_ttl_ms)` sets the
`ttlMs` the 2026-07-28 lists carry (0 by default: "ask again every time").

    python tests/servers/toolset_server.py [--ttl-ms N]    # stdio
"""

from __future__ import annotations

import argparse
import os

from mcp_resolve import Context, MCPServer


def build(cache_ttl_ms: int = 0) -> MCPServer:
    mcp = MCPServer(
        "toolset-server", instructions="Open counters with open_counter.", cache_ttl_ms=cache_ttl_ms
    )

    @mcp.tool()
    async def open_counter(name: str) -> str:
        """Register a tool now, and tell every client the tool list changed."""
        mcp.add_tool(lambda: f"{name} is open", name=name, description="A counter opened at run time.")
        await mcp.notify_list_changed("tools")
        return f"opened {name}"

    @mcp.tool()
    async def shout(ctx: Context) -> str:
        """Log one line at debug and one at info."""
        await ctx.debug("a debug line")
        await ctx.info("an info line")
        return "shouted"

    @mcp.tool(task_support="optional")
    async def echo_context(ctx: Context) -> dict[str, str | None]:
        """What the request carried: `_meta.trace` and the X-Team header (HTTP). Runs as a task if asked."""
        headers = ctx.headers or {}
        return {"trace": ctx.meta.get("trace"), "team": headers.get("x-team")}

    @mcp.tool(task_support="required")
    async def only_as_a_task() -> str:
        """A tool the server runs only as a task (a client without the extension is refused)."""
        return "done as a task"

    @mcp.tool()
    async def environment(name: str) -> dict[str, str | None]:
        """The server process's working directory and the environment variable `name` (stdio)."""
        return {"cwd": os.getcwd(), "value": os.environ.get(name)}

    @mcp.resource("notes://today", mime_type="text/plain")
    async def today() -> str:
        return "ship the toolset"

    @mcp.prompt(description="Ask for a summary.")
    async def summary(topic: str) -> str:
        return f"Summarize {topic}."

    return mcp


mcp = build()

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl-ms", type=int, default=0)
    build(parser.parse_args().ttl_ms).run()
