"""A test server exercising the core: every return shape, the Context's side channels, errors, resources, prompts.

Run as a script it serves stdio; tests also import it (a fresh module each
time) to serve it in memory. `CORE_PAGE_SIZE` in the environment sets the
list page size so pagination can be exercised over stdio too.

The concurrency helpers count instead of timing: `rendezvous(n)` returns only
once `n` calls are inside it at the same moment, so a server that ran requests
one after another would never answer; `block()` waits forever and records its
own cancellation, which `wait_cancelled()` reports.
"""

from __future__ import annotations

import base64
import os
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from mcp_types import AudioContent, EmbeddedResource, ImageContent, TextResourceContents
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from mcp_resolve import AcceptedElicitation, Context, MCPServer, Resolve, ToolError

mcp = MCPServer(
    "everything-core",
    version="1.2.3",
    instructions="A server for testing the core.",
    page_size=int(os.environ.get("CORE_PAGE_SIZE", "100")),
)

PNG_BYTES = b"\x89PNG\r\n\x1a\n-not-really-an-image"
WAV_BYTES = b"RIFF----WAVEfmt -not-really-audio"
INVENTORY = {"Dune": 7, "Neuromancer": 0}


# -- return shapes ------------------------------------------------------------------------
@mcp.tool()
async def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"


class Weather(BaseModel):
    city: str
    celsius: float


@mcp.tool()
async def weather(city: str) -> Weather:
    """A pydantic model return."""
    return Weather(city=city, celsius=21.5)


@dataclass
class Point:
    x: int
    y: int


@mcp.tool()
async def point(x: int, y: int) -> Point:
    """A dataclass return."""
    return Point(x=x, y=y)


class Book(TypedDict):
    title: str
    pages: int


@mcp.tool()
async def book(title: str) -> Book:
    """A TypedDict return."""
    return {"title": title, "pages": 412}


@mcp.tool()
async def add(a: int, b: int) -> int:
    """A primitive return, wrapped as {"result": ...}."""
    return a + b


@mcp.tool()
async def picture() -> ImageContent:
    return ImageContent(data=base64.b64encode(PNG_BYTES).decode(), mime_type="image/png")


@mcp.tool()
async def sound() -> AudioContent:
    return AudioContent(data=base64.b64encode(WAV_BYTES).decode(), mime_type="audio/wav")


@mcp.tool()
async def attachment() -> EmbeddedResource:
    return EmbeddedResource(
        resource=TextResourceContents(uri="memo://attached", mime_type="text/plain", text="attached memo")
    )


# -- the seed's resolver tool --------------------------------------------------------------
class Stock(BaseModel):
    title: str
    copies: int


async def check_stock(title: str) -> Stock:
    return Stock(title=title, copies=INVENTORY.get(title, 0))


@mcp.tool()
async def reserve_book(title: str, stock: Annotated[Stock, Resolve(check_stock)], ctx: Context) -> str:
    """Reserve a copy of a book."""
    if stock.copies == 0:
        return f"{title!r} is out of stock."
    return f"Reserved {title!r} ({stock.copies - 1} copies left)."


# -- Context side channels and questions ---------------------------------------------------
class Name(BaseModel):
    name: str = Field(description="Your name")


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the person mid-call with ctx.elicit (handshake era only)."""
    answer = await ctx.elicit("What is your name?", Name)
    if isinstance(answer, AcceptedElicitation):
        return f"Hello, {answer.data.name}!"
    return f"No name ({answer.action})."


@mcp.tool()
async def ask_model(prompt: str, ctx: Context) -> str:
    """Sample the client's LLM mid-call with ctx.sample (handshake era only)."""
    result = await ctx.sample(prompt, max_tokens=50)
    return f"{result.model} said: {result.content.text}"  # type: ignore[union-attr]


@mcp.tool()
async def client_roots(ctx: Context) -> list[str]:
    """The client's roots, asked mid-call with ctx.list_roots (handshake era only)."""
    return [str(root.uri) for root in (await ctx.list_roots()).roots]


@mcp.tool()
async def whoami(ctx: Context) -> dict[str, Any]:
    """What the Context knows about this request."""
    info = ctx.client_info
    return {
        "protocol": ctx.protocol_version,
        "client": info.name if info else None,
        "elicitation": ctx.client_capabilities.elicitation is not None,
        "headers": ctx.headers,
        "has_request_id": ctx.request_id is not None,
    }


@mcp.tool()
async def chatty(steps: int, ctx: Context) -> str:
    """Logs at several levels and reports progress once per step."""
    await ctx.debug("debug detail")
    await ctx.info("starting")
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    await ctx.warning({"done": steps})
    return f"did {steps} steps"


@mcp.tool()
async def fail(reason: str) -> str:
    """Always a tool error."""
    raise ToolError(f"refused: {reason}")


@mcp.tool()
async def crash() -> str:
    """An unexpected exception: a tool error without internals."""
    raise KeyError("secret-internal-key")


@mcp.tool()
async def noisy() -> str:
    """Writes to stdout from Python and from a child process: neither may reach the protocol stream."""
    print("stray print from a tool")
    await anyio.run_process([sys.executable, "-c", "print('stray output from a child')"], stdout=None)
    return "made noise"


# -- concurrency and cancellation (count, never time) --------------------------------------
_arrivals = 0
_everyone_here = anyio.Event()
_cancelled_blocks = 0
_block_cancelled = anyio.Event()
_block_started = anyio.Event()


@mcp.tool()
async def rendezvous(n: int) -> int:
    """Return only when `n` calls are in here at once: proof that requests run concurrently."""
    global _arrivals, _everyone_here
    _arrivals += 1
    seen = _arrivals
    if _arrivals >= n:
        _everyone_here.set()
    await _everyone_here.wait()
    return seen


@mcp.tool()
async def block(ctx: Context) -> str:
    """Wait forever; a cancellation is counted (and announced to `wait_cancelled`)."""
    global _cancelled_blocks
    _block_started.set()
    await ctx.info("blocking")
    try:
        await anyio.Event().wait()
    except anyio.get_cancelled_exc_class():
        _cancelled_blocks += 1
        _block_cancelled.set()
        raise
    return "unreachable"


@mcp.tool()
async def wait_cancelled() -> int:
    """Answer once a `block` call has been cancelled: the number cancelled so far."""
    await _block_cancelled.wait()
    return _cancelled_blocks


# -- resources -----------------------------------------------------------------------------
@mcp.resource("memo://static", mime_type="text/plain", description="A fixed memo.")
async def static_memo() -> str:
    return "the static memo"


@mcp.resource("data://config")
async def config() -> dict[str, Any]:
    return {"debug": False, "level": 3}


@mcp.resource("users://{user_id}/profile", mime_type="application/json")
async def profile(user_id: str) -> dict[str, Any]:
    return {"user_id": user_id, "name": f"User {user_id}"}


@mcp.resource("files://{name}")
async def file_bytes(name: str) -> bytes:
    return name.encode() * 2


# -- prompts and completion ----------------------------------------------------------------
@mcp.prompt()
async def review(code: str, language: str = "python") -> str:
    """Review some code."""
    return f"Please review this {language} code:\n{code}"


@mcp.prompt(title="A conversation")
async def conversation(topic: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": {"type": "text", "text": f"Tell me about {topic}."}},
        {"role": "assistant", "content": {"type": "text", "text": f"{topic} is a big subject."}},
    ]


LANGUAGES = ["python", "perl", "php", "rust", "ruby"]


@mcp.completion()
async def complete(ref: dict[str, Any], argument: dict[str, Any], context: Context) -> list[str]:
    if ref.get("type") == "ref/prompt" and ref.get("name") == "review" and argument.get("name") == "language":
        return [lang for lang in LANGUAGES if lang.startswith(argument.get("value", ""))]
    if ref.get("type") == "ref/resource" and argument.get("name") == "user_id":
        return [uid for uid in ("u1", "u2", "u10") if uid.startswith(argument.get("value", ""))]
    return []


if __name__ == "__main__":
    mcp.run()
