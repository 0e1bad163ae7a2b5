"""Inside a mounted server's tool, the request acts in that server's namespace, whichever way it is called.

`ctx.read_resource` reads the mounted server's own resources under its own
URIs, `ctx.notify_resource_updated` reaches the parent's subscribers under
the prefixed URI; a prompt removed from the mounted server leaves the
parent; `parent.call_tool` runs the mounted server's middleware and
lifespan_context as a client's call does; and that middleware never sees a
value a client sent for a hidden parameter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_resolve import Client, Context, MCPServer, Resolve

pytestmark = pytest.mark.anyio


async def test_a_mounted_tools_context_reads_and_notifies_in_its_own_namespace() -> None:
    child = MCPServer("Child")
    parent = MCPServer("Parent")

    @child.resource("data://feed")
    def feed() -> str:
        return "child feed"

    @parent.resource("data://feed")  # the parent happens to own the child's unprefixed URI
    def parent_feed() -> str:
        return "parent secret"

    @child.tool()
    async def read_own(ctx: Context) -> str:
        contents = list(await ctx.read_resource("data://feed"))
        await ctx.notify_resource_updated("data://feed")
        return str(contents[0].content)

    parent.mount(child, prefix="c")
    heard: list[str] = []

    async def every(method: str, params: dict[str, Any]) -> None:
        heard.append(f"{method} {params.get('uri', '')}")

    async with Client(parent, mode="legacy", notification_handler=every) as client:
        await client.request("resources/subscribe", {"uri": "data://c/feed"})
        result = await client.call_tool("c_read_own", {})
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
    assert not result.is_error and result.content[0].text == "child feed"
    assert heard == ["notifications/resources/updated data://c/feed"]


async def test_a_prompt_removed_from_the_mounted_server_leaves_the_parent() -> None:
    child = MCPServer("Child")
    parent = MCPServer("Parent")

    @child.prompt()
    def greet() -> str:
        return "hi"

    parent.mount(child, prefix="c")
    assert "c_greet" in parent.registry.prompts
    child.remove_prompt("greet")
    assert "c_greet" not in parent.registry.prompts

    @child.prompt(name="greet")
    def greet_again() -> str:
        return "hello"

    assert "c_greet" in parent.registry.prompts  # the name is free again, and followed


def child_with_audit(seen: list[Any]) -> MCPServer:
    @asynccontextmanager
    async def child_life(_server: MCPServer) -> AsyncIterator[dict[str, str]]:
        yield {"who": "child"}

    async def audit(request: Any, call_next: Any) -> Any:
        seen.append(request.params.get("arguments"))
        return await call_next(request)

    child = MCPServer("Billing", lifespan=child_life, middleware=[audit])

    @child.tool()
    def refund(order_id: str, customer_id: str, ctx: Context) -> str:
        return f"refund {order_id} for {customer_id} in {ctx.lifespan_context['who']}"

    return child


async def alice() -> str:
    return "alice"


async def test_a_direct_call_of_a_mounted_tool_runs_its_servers_middleware_and_lifespan() -> None:
    seen: list[Any] = []
    parent = MCPServer("Front")
    parent.mount(child_with_audit(seen), prefix="billing")
    async with parent.running():
        result = await parent.call_tool("billing_refund", {"order_id": "7", "customer_id": "bob"})
    assert result.content[0].text == "refund 7 for bob in child"  # type: ignore[union-attr]
    assert seen == [{"order_id": "7", "customer_id": "bob"}]


@pytest.mark.parametrize("direct", [False, True])
async def test_the_mounted_middleware_never_sees_a_spoofed_hidden_value(direct: bool) -> None:
    seen: list[Any] = []
    parent = MCPServer("Front")
    parent.mount(child_with_audit(seen), prefix="billing", hide={"customer_id": Resolve(alice)})
    sent = {"order_id": "7", "customer_id": "bob"}
    if direct:
        async with parent.running():
            text = (await parent.call_tool("billing_refund", sent)).content[0].text  # type: ignore[union-attr]
    else:
        async with Client(parent, mode="legacy") as client:
            text = (await client.call_tool("billing_refund", sent)).content[0].text  # type: ignore[union-attr]
    assert text == "refund 7 for alice in child"
    assert seen == [{"order_id": "7"}]


async def test_an_imported_tools_context_notifies_the_parents_clients_and_its_server_does_not() -> None:
    child = MCPServer("Child")

    @child.resource("data://feed")
    def feed() -> str:
        return "child feed"

    @child.tool()
    async def touch(ctx: Context) -> str:
        await ctx.notify_resource_updated("data://feed")
        return "ok"

    parent = MCPServer("Parent")
    parent.import_server(child, prefix="c")
    heard: list[str] = []

    async def every(method: str, params: dict[str, Any]) -> None:
        heard.append(f"{method} {params.get('uri', '')}")

    async with Client(parent, mode="legacy", notification_handler=every) as client:
        await client.request("resources/subscribe", {"uri": "data://c/feed"})
        await child.notify_resource_updated("data://feed")  # the server on its own: a copy follows nothing
        await client.call_tool("c_touch", {})
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
        await client.list_tools()
    assert heard == ["notifications/resources/updated data://c/feed"]
