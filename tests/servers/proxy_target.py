"""A stdio server for the proxy tests to put behind `MCPServer.as_proxy`: one process per upstream session.

`session` names this process (so a test sees which upstream session served
it), `get_orders` echoes the customer it was given, and the rest misbehave
on purpose: a flood of log notifications, a call that never answers, a crash.
"""

from __future__ import annotations

import os
import secrets

import anyio
from pydantic import BaseModel

from mcp_resolve import Context, MCPServer

mcp = MCPServer("proxy-target")
SESSION = secrets.token_hex(8)
calls: list[str] = []


@mcp.tool()
def session(note: str = "") -> str:
    """This process's name, and the notes it was given before (only its own session's)."""
    calls.append(note)
    return f"{SESSION} {','.join(calls)}"


@mcp.tool()
def get_orders(customer_id: str, status: str = "open") -> str:
    """The orders of a customer."""
    return f"orders of {customer_id} ({status})"


class Confirm(BaseModel):
    sure: bool


@mcp.tool()
async def delete_item(item: str, ctx: Context) -> str:
    """Delete an item once the person confirms (asked mid-call: the handshake era)."""
    answer = await ctx.elicit(f"Delete {item}?", Confirm)
    if answer.action != "accept" or not answer.data.sure:
        return f"kept {item}"
    return f"deleted {item}"


@mcp.tool()
async def flood(count: int, ctx: Context) -> str:
    """Send `count` log messages, then answer (count < 0: never stop)."""
    sent = 0
    while count < 0 or sent < count:
        await ctx.info(f"line {sent}")
        sent += 1
    return f"sent {sent}"


@mcp.tool()
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "unreachable"


@mcp.tool()
def crash() -> str:
    """Exit the process mid-call."""
    os._exit(3)


if __name__ == "__main__":
    mcp.run()
