"""A FastMCP server (a peer we did not write) for our proxy to serve: run over stdio by the proxy tests.

Written on FastMCP's public API only: a plain tool, one that asks the person
mid-call (`ctx.elicit`), one that reports progress, and a resource.
"""

from __future__ import annotations

from fastmcp import Context, FastMCP

mcp = FastMCP("fastmcp-target")


@mcp.tool
def echo(text: str, sender: str = "nobody") -> str:
    """Echo the text, signed."""
    return f"{sender}: {text}"


@mcp.tool
async def greet_asked(ctx: Context) -> str:
    """Greet the person by the name they give."""
    answer = await ctx.elicit("Your name?", response_type=str)
    if answer.action != "accept":
        return "Hello, stranger!"
    return f"Hello, {answer.data}!"


@mcp.tool
async def count(upto: int, ctx: Context) -> str:
    """Count up, reporting each step as progress."""
    for step in range(1, upto + 1):
        await ctx.report_progress(step, upto)
    return str(upto)


@mcp.resource("data://motto")
def motto() -> str:
    return "proxies all the way down"


if __name__ == "__main__":
    mcp.run(show_banner=False)
