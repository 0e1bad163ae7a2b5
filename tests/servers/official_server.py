"""An official `mcp` SDK server (our interop peer) for our Client to drive over stdio.

It speaks whichever era the client opens with, so it proves our Client talks
the protocol rather than our own dialect: tools (one with structured output,
one that asks the person through the SDK's own resolver), resources, a
template, a prompt and completion. With `OFFICIAL_LEGACY_ONLY` set it
serves only the handshake era, like a server from before 2026-07-28, so a
client's `auto` mode must fall back to `initialize`.
"""

from __future__ import annotations

import os
import warnings
from typing import Annotated

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Elicit, Resolve
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp_types import Completion, PromptReference
from pydantic import BaseModel

warnings.simplefilter("ignore")  # the SDK flags logging as deprecated on 2026-07-28; keep stderr readable

mcp = MCPServer("official-peer", version="9.9.9")


class Sum(BaseModel):
    total: int


@mcp.tool()
def add(a: int, b: int) -> Sum:
    """Add two numbers."""
    return Sum(total=a + b)


@mcp.tool()
async def shout(text: str, ctx: Context) -> str:
    """Upper-case the text, logging on the way."""
    await ctx.info(f"shouting {text}")
    return text.upper()


class Colour(BaseModel):
    colour: str


async def ask_colour() -> Elicit[Colour]:
    return Elicit("Favourite colour?", Colour)


@mcp.tool()
async def paint(wall: str, colour: Annotated[Colour, Resolve(ask_colour)]) -> str:
    """Paint a wall in the colour the person picks."""
    return f"{wall} painted {colour.colour}"


@mcp.resource("note://hello", mime_type="text/plain")
def hello_note() -> str:
    return "hello from the official server"


@mcp.resource("item://{item_id}")
def item(item_id: str) -> str:
    return f"item {item_id}"


@mcp.prompt()
def summarise(topic: str) -> str:
    """Summarise a topic."""
    return f"Summarise {topic} in one line."


@mcp.completion()
async def complete(ref, argument, context):  # type: ignore[no-untyped-def]
    if isinstance(ref, PromptReference) and argument.name == "topic":
        return Completion(values=[t for t in ("cats", "cars") if t.startswith(argument.value)])
    return None


async def serve_handshake_only() -> None:
    """The SDK's handshake-only loop instead of its dual-era one: a server from before 2026-07-28."""
    server = mcp._lowlevel_server
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        await serve_loop(
            server, read, write, lifespan_state=state, init_options=server.create_initialization_options()
        )


if __name__ == "__main__":
    if os.environ.get("OFFICIAL_LEGACY_ONLY"):
        anyio.run(serve_handshake_only)
    else:
        mcp.run()
