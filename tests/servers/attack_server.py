"""A server whose tools ask every kind of question at once, for fuzzing the question paths.

Issue 22, item 2: over HTTP on the handshake era, a call that failed fast
while another of its questions was on its way answered 500. Each tool here
combines questions (a form, the client's LLM, its roots) with one another,
with a question that depends on an answer, and with a resolver that fails
at once, in both orders, so that whatever a client declared and however it
answers, every early failure on a question path is met.

No resolver here raises anything but `ToolError`: an unexpected exception
is the server author's bug and is rightly logged with its traceback, while
everything these tools meet comes from the client and must not be.

`python tests/servers/attack_server.py` serves stdio.
"""

from __future__ import annotations

from typing import Annotated

from mcp_types import CreateMessageResult, CreateMessageResultWithTools, ListRootsResult
from pydantic import BaseModel

from mcp_resolve import Elicit, ElicitationResult, ListRoots, MCPServer, Resolve, Sample, ToolError
from mcp_resolve.tools import Tool

mcp = MCPServer("Question Desk")
LOOKUP = {"name": "lookup", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}


class Ok(BaseModel):
    ok: bool


async def confirm(item: str) -> Elicit[Ok]:
    return Elicit(f"Take {item}?", Ok)


async def headline(item: str) -> Sample:
    return Sample(f"Name {item}", max_tokens=5)


async def headline_with_tools(item: str) -> Sample:
    return Sample(f"Look {item} up", max_tokens=5, tools=[LOOKUP])


async def folders() -> ListRoots:
    return ListRoots()


async def refuse(item: str) -> str:
    raise ToolError(f"no {item}")


async def headline_after_confirm(item: str, ok: Annotated[Ok, Resolve(confirm)]) -> Sample:
    return Sample(f"Name {item} ({'taken' if ok.ok else 'left'})", max_tokens=5)


Confirmed = Annotated[Ok, Resolve(confirm)]
Headline = Annotated[CreateMessageResult, Resolve(headline)]
Refused = Annotated[str, Resolve(refuse)]


@mcp.tool()
async def ask_and_sample(item: str, ok: Confirmed, text: Headline) -> str:
    return f"{item}: {ok.ok}"


@mcp.tool()
async def sample_and_ask(item: str, text: Headline, ok: Confirmed) -> str:
    return f"{item}: {ok.ok}"


@mcp.tool()
async def ask_roots_and_sample(
    item: str, ok: Confirmed, roots: Annotated[ListRootsResult, Resolve(folders)], text: Headline
) -> str:
    return f"{item}: {len(roots.roots)} roots"


@mcp.tool()
async def ask_and_refuse(item: str, ok: Confirmed, never: Refused) -> str:
    return "never"


@mcp.tool()
async def refuse_and_ask(item: str, never: Refused, ok: Confirmed) -> str:
    return "never"


@mcp.tool()
async def ask_then_sample(
    item: str, text: Annotated[CreateMessageResult, Resolve(headline_after_confirm)]
) -> str:
    return item


@mcp.tool()
async def ask_and_sample_with_tools(
    item: str, ok: Confirmed, text: Annotated[CreateMessageResultWithTools, Resolve(headline_with_tools)]
) -> str:
    return item


@mcp.tool()
async def branch(item: str, outcome: Annotated[ElicitationResult[Ok], Resolve(confirm)]) -> str:
    return f"{item}: {outcome.action}"


TOOLS = sorted(component.name for component in mcp.components() if isinstance(component, Tool))
"""Every tool name, for the fuzzer."""


if __name__ == "__main__":
    mcp.run()
