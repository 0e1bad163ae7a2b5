"""A small server run by `mcp.run(transport="streamable-http", ...)` with the limits a test gives, for stream tests.

argv: port, then a JSON object with optional "limits" (ServerLimits fields), "options" (HttpOptions
fields) and "trusted_proxies". Tools: `hello` (answers at once) and `ask_name` (elicits).
"""

from __future__ import annotations

import json
import sys

from pydantic import BaseModel

from mcp_resolve import Context, MCPServer
from mcp_resolve.transports.http._fleet.limits import ServerLimits

mcp = MCPServer("streams")


class Name(BaseModel):
    name: str


@mcp.tool()
def hello() -> str:
    return "hello"


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    outcome = await ctx.elicit("Your name?", Name)
    return f"{outcome.action}"


if __name__ == "__main__":
    port, given = int(sys.argv[1]), json.loads(sys.argv[2])
    options = given.get("options", {})
    if "trusted_proxies" in given:
        options["trusted_proxies"] = given["trusted_proxies"]
    limits = ServerLimits(**given.get("limits", {}))
    mcp.run(
        transport="streamable-http", host="127.0.0.1", port=port, log_level="info", limits=limits, **options
    )
