"""Question keys on the wire are the same in every process running the same code.

A retry may land on another worker or a restarted process, so a key must not
depend on object identity: closures from one factory and two instances of one
method share a qualified name and are told apart by their place in the graph.
"""

from pathlib import Path
from typing import Any

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from conftest import PYTHON
from mcp_resolve.client.pipes import open_stdio

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVER = """
from typing import Annotated

from pydantic import BaseModel

from mcp_resolve import Elicit, MCPServer, Resolve


class Ok(BaseModel):
    ok: bool


def asker(topic: str):
    async def ask() -> Elicit[Ok]:
        return Elicit(f"{topic}?", Ok)

    return ask


class Desk:
    def __init__(self, name: str) -> None:
        self.name = name

    async def confirm(self) -> Elicit[Ok]:
        return Elicit(f"{self.name} desk?", Ok)


async def plain() -> Elicit[Ok]:
    return Elicit("plain?", Ok)


async def named() -> Elicit[Ok]:
    return Elicit("named?", Ok, key="the_name")


left, right = Desk("left"), Desk("right")
mcp = MCPServer("keys")


@mcp.tool()
async def everything(
    a: Annotated[Ok, Resolve(asker("a"))],
    b: Annotated[Ok, Resolve(asker("b"))],
    left_ok: Annotated[Ok, Resolve(left.confirm)],
    right_ok: Annotated[Ok, Resolve(right.confirm)],
    same_left: Annotated[Ok, Resolve(left.confirm)],
    p: Annotated[Ok, Resolve(plain)],
    n: Annotated[Ok, Resolve(named)],
) -> str:
    return "ok"


if __name__ == "__main__":
    mcp.run()
"""

META = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}}}


async def keys_by_question(script: Path) -> dict[str, str]:
    """Start the server, call the tool once at 2026-07-28, and map each question's message to its key."""
    async with open_stdio([PYTHON, str(script)]) as pipe:
        await pipe.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "everything", "arguments": {}, "_meta": META},
            }
        )
        result: dict[str, Any] = (await pipe.receive())["result"]
    assert result["resultType"] == "input_required"
    return {q["params"]["message"]: key for key, q in result["inputRequests"].items()}


async def test_two_processes_running_the_same_code_use_the_same_keys(tmp_path: Path) -> None:
    script = tmp_path / "keys_server.py"
    script.write_text(SERVER)
    first = await keys_by_question(script)
    second = await keys_by_question(script)
    assert first == second
    # Every question is asked once (left.confirm twice is one resolver) under its own key.
    assert sorted(first) == ["a?", "b?", "left desk?", "named?", "plain?", "right desk?"]
    assert len(set(first.values())) == 6
    assert first["plain?"] == "__main__:plain"
    assert first["named?"] == "the_name"
    # Closures of one factory and two instances of one method: one qualified name, told apart in order.
    assert first["a?"] == "__main__:asker.<locals>.ask"
    assert first["b?"] == "__main__:asker.<locals>.ask#2"
    assert first["left desk?"] == "__main__:Desk.confirm"
    assert first["right desk?"] == "__main__:Desk.confirm#2"
