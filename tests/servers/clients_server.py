"""A small server for the third-party client tests: sampling and roots resolvers, a resource, a prompt.

The refund desk covers elicitation; this server covers what it does not, so
each client's other callbacks (a sampling model, a roots list) and its
resource and prompt calls are exercised against our wire. `add` needs no
resolver, for clients that cannot answer any question (the Inspector CLI).

Run it as a script to serve stdio, or with `--http --port N` for HTTP.
"""

from __future__ import annotations

import sys
from typing import Annotated

from mcp_types import CreateMessageResult, ListRootsResult, TextContent

from mcp_resolve import ListRoots, MCPServer, Resolve, Sample

mcp = MCPServer("clients-interop", version="1.0.0")


async def headline(topic: str) -> Sample:
    return Sample(f"Write a one-line headline about {topic}.", max_tokens=50)


@mcp.tool()
async def summarize(topic: str, sampled: Annotated[CreateMessageResult, Resolve(headline)]) -> str:
    """Headline a topic with the client's own LLM."""
    text = sampled.content.text if isinstance(sampled.content, TextContent) else "<non-text>"
    return f"headline[{sampled.model}]: {text}"


async def client_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def workspace(roots: Annotated[ListRootsResult, Resolve(client_roots)]) -> list[str]:
    """The client's roots, as URIs."""
    return [str(root.uri) for root in roots.roots]


@mcp.tool()
async def add(a: int, b: int) -> int:
    """Add two integers; asks nothing, so any client can call it."""
    return a + b


@mcp.resource("notes://today", mime_type="text/plain", description="Today's note.")
async def today() -> str:
    return "ship the client interop docs"


@mcp.resource("notes://{day}", mime_type="text/plain")
async def note_for(day: str) -> str:
    return f"note for {day}"


@mcp.prompt(description="Ask for a code review.")
async def review(code: str) -> str:
    return f"Please review this code:\n{code}"


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 8000
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port)
    else:
        mcp.run()
