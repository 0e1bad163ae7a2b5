"""The lifespan is entered once however many users arrive at once, and left once by the last one out.

Two clients reaching a server in the same instant (the first one's lifespan
still entering) must share that one entry, and so must each server mounted in it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_resolve import Client, MCPServer

pytestmark = pytest.mark.anyio


async def test_users_arriving_at_once_enter_the_lifespans_once() -> None:
    log: list[str] = []

    def life(name: str) -> Any:
        @asynccontextmanager
        async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, str]]:
            log.append(f"{name} in")
            await anyio.sleep(0.05)  # an await while entering: the window a second user arrives in
            try:
                yield {"who": name}
            finally:
                log.append(f"{name} out")

        return lifespan

    child = MCPServer("Child", lifespan=life("child"))
    parent = MCPServer("Parent", lifespan=life("parent"))
    parent.mount(child, prefix="c")

    async def one() -> None:
        async with Client(parent, mode="legacy") as client:
            assert [t.name for t in (await client.list_tools()).tools] == []

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(one)
    assert log == ["parent in", "child in", "child out", "parent out"]
    async with anyio.create_task_group() as group:  # and again, once all had left
        group.start_soon(one)
        group.start_soon(one)
    assert log == ["parent in", "child in", "child out", "parent out"] * 2
