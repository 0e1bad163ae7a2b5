"""Composition: `mcp.mount(other, prefix=...)` (live) and `mcp.import_server(...)` (a copy), in memory, both eras.

Names follow FastMCP's (`prefix_tool`, `scheme://prefix/path`); the mounted
server keeps its resolvers, overrides, lifespan, middleware, completion and
`notify_*` calls; clashes are refused naming both sides; `hide=` takes a
parameter out of a mounted tool and fills it from the parent's resolvers.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from mcp_resolve import CacheHint, Client, Context, Elicit, MCPServer, Resolve
from mcp_resolve.cli._check import check
from mcp_resolve.cli._graph import graph
from mcp_resolve.protocol.jsonrpc import IncomingRequest
from mcp_resolve.protocol.session import Connection
from servers.state_wire import FROZEN, MODERN_META, accept

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


def who_default() -> str:
    return "alice"


def billing_account() -> str:
    return "acct-1"


async def who(ctx: Context) -> str:
    return "alice"


def billing(*, plain: bool = True) -> MCPServer:
    child = MCPServer("Billing")

    @child.tool()
    async def refund(
        order_id: str, customer_id: str, account: Annotated[str, Resolve(billing_account)]
    ) -> str:
        """Refund an order."""
        return f"refund {order_id} for {customer_id} from {account}"

    @child.resource("data://orders/{order_id}")
    async def order(order_id: str) -> str:
        return f"order {order_id}"

    @child.resource("data://status")
    def status() -> str:
        return "ok"

    if plain:

        @child.resource("plain-name")
        def no_scheme() -> str:
            return "no scheme"

    @child.prompt()
    def greet(name: str) -> str:
        return f"hi {name}"

    @child.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
        return [f"{argument.name}-from-billing"]

    return child


def test_names_follow_fastmcps_prefixing() -> None:
    parent = MCPServer("Front")
    parent.mount(billing(), prefix="billing")
    registry = parent.registry
    assert list(registry.tools) == ["billing_refund"]
    assert list(registry.prompts) == ["billing_greet"]
    assert set(registry.resources) == {"data://billing/status", "plain-name"}
    assert list(registry.templates) == ["data://billing/orders/{order_id}"]
    assert registry.templates["data://billing/orders/{order_id}"].definition()["uriTemplate"] == (
        "data://billing/orders/{order_id}"
    )


def test_prefix_none_keeps_the_names() -> None:
    parent = MCPServer("Front")
    parent.mount(billing())
    assert list(parent.registry.tools) == ["refund"]
    assert "data://status" in parent.registry.resources


@pytest.mark.parametrize("mode", MODES)
async def test_a_mounted_server_is_served_through_the_parent(mode: str) -> None:
    parent = MCPServer("Front")
    parent.mount(billing(), prefix="billing")
    async with Client(parent, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"billing_refund"}
        result = await client.call_tool("billing_refund", {"order_id": "7", "customer_id": "bob"})
        assert result.content[0].text == "refund 7 for bob from acct-1"  # type: ignore[union-attr]
        read = await client.read_resource("data://billing/orders/42")
        assert read.contents[0].uri == "data://billing/orders/42"
        assert read.contents[0].text == "order 42"  # type: ignore[union-attr]
        assert (await client.read_resource("data://billing/status")).contents[0].text == "ok"  # type: ignore[union-attr]
        prompt = await client.get_prompt("billing_greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "hi Ada"  # type: ignore[union-attr]
        completion = await client.complete(
            {"type": "ref/prompt", "name": "billing_greet"}, {"name": "name", "value": ""}
        )
        assert completion.completion.values == ["name-from-billing"]
        failed = await client.call_tool("billing_refund", {"order_id": 7})
        assert failed.is_error and "Error executing tool billing_refund" in failed.content[0].text  # type: ignore[union-attr]


async def test_the_mounted_servers_overrides_apply_to_its_tools() -> None:
    child = billing()
    parent = MCPServer("Front")
    parent.mount(child, prefix="billing")
    child.dependency_overrides[billing_account] = lambda: "acct-test"
    result = await parent.call_tool("billing_refund", {"order_id": "1", "customer_id": "c"})
    assert result.content[0].text == "refund 1 for c from acct-test"  # type: ignore[union-attr]


async def test_mount_is_live_and_import_server_is_a_copy() -> None:
    live, copied = (
        billing(),
        billing(plain=False),
    )  # "plain-name" has no scheme to prefix: only one may have it
    parent = MCPServer("Front")
    parent.mount(live, prefix="live")
    parent.import_server(copied, prefix="copy")

    @live.tool()
    def later() -> str:
        return "later"

    @copied.tool()
    def not_here() -> str:
        return "no"

    assert "live_later" in parent.registry.tools
    assert "copy_not_here" not in parent.registry.tools
    assert (await parent.call_tool("live_later", {})).content[0].text == "later"  # type: ignore[union-attr]
    live.remove_tool("later")
    assert "live_later" not in parent.registry.tools
    assert "copy_refund" in parent.registry.tools


def test_clashes_are_refused_naming_both_sides() -> None:
    parent = MCPServer("Front")

    @parent.tool()
    def billing_refund() -> str:
        return "mine"

    expected = "tool 'billing_refund' from mounted server 'Billing' (prefix 'billing') clashes with this server's own"
    with pytest.raises(ValueError, match=re.escape(expected)):
        parent.mount(billing(), prefix="billing")
    assert list(parent.registry.tools) == ["billing_refund"]  # all or nothing: nothing of billing was filed
    assert not parent.registry.prompts


def test_a_later_registration_that_would_clash_is_refused_on_either_side() -> None:
    child = billing()
    parent = MCPServer("Front")
    parent.mount(child, prefix="billing")

    @parent.tool()
    def billing_audit() -> str:
        return "parent's"

    with pytest.raises(ValueError, match="clashes with this server's own tool 'billing_audit'"):

        @child.tool()
        def audit() -> str:
            return "child's"

    assert "audit" not in child.registry.tools  # refused before the mounted server filed it
    with pytest.raises(
        ValueError, match="tool 'billing_refund' is already served by mounted server 'Billing'"
    ):

        @parent.tool()
        def billing_refund() -> str:
            return "parent's"


def test_two_mounts_whose_names_meet_after_prefixing_are_refused() -> None:
    first, second = MCPServer("First"), MCPServer("Second")

    @first.tool()
    def b_c() -> str:
        return "first"

    @second.tool()
    def c() -> str:
        return "second"

    parent = MCPServer("Front")
    parent.mount(first, prefix="a")
    expected = "tool 'a_b_c' from mounted server 'Second' (prefix 'a_b') clashes with mounted server 'First' (prefix 'a')"
    with pytest.raises(ValueError, match=re.escape(expected)):
        parent.mount(second, prefix="a_b")
    assert (parent.registry.tool("a_b_c") is not None) and len(parent.registry.tools) == 1


async def test_nested_mounts_follow_each_other() -> None:
    inner, middle, outer = MCPServer("Inner"), MCPServer("Middle"), MCPServer("Outer")
    outer.mount(middle, prefix="m")
    middle.mount(inner, prefix="i")

    @inner.tool()
    def ping() -> str:
        return "pong"

    assert list(outer.registry.tools) == ["m_i_ping"]
    assert (await outer.call_tool("m_i_ping", {})).content[0].text == "pong"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_the_mounted_lifespan_runs_with_the_parents_and_its_tools_see_their_own(mode: str) -> None:
    events: list[str] = []

    @asynccontextmanager
    async def child_life(_server: MCPServer) -> AsyncIterator[dict[str, str]]:
        events.append("child in")
        yield {"who": "child"}
        events.append("child out")

    @asynccontextmanager
    async def parent_life(_server: MCPServer) -> AsyncIterator[dict[str, str]]:
        events.append("parent in")
        yield {"who": "parent"}
        events.append("parent out")

    child = MCPServer("Child", lifespan=child_life)
    parent = MCPServer("Parent", lifespan=parent_life)

    @child.tool()
    def whose(ctx: Context) -> str:
        return ctx.lifespan_context["who"]

    @parent.tool()
    def mine(ctx: Context) -> str:
        return ctx.lifespan_context["who"]

    parent.mount(child, prefix="c")
    async with Client(parent, mode=mode) as client:
        assert events == ["parent in", "child in"]
        assert (await client.call_tool("c_whose")).content[0].text == "child"  # type: ignore[union-attr]
        assert (await client.call_tool("mine")).content[0].text == "parent"  # type: ignore[union-attr]
    assert events == ["parent in", "child in", "child out", "parent out"]


@pytest.mark.parametrize("mode", MODES)
async def test_the_mounted_middleware_sees_only_its_own_requests_under_its_own_names(mode: str) -> None:
    seen: list[str] = []

    async def watch(ctx: Any, call_next: Any) -> Any:
        seen.append(f"{ctx.method} {(ctx.params or {}).get('name') or (ctx.params or {}).get('uri')}")
        result = await call_next(ctx)
        result["content"][0]["text"] += " (billing)" if ctx.method == "tools/call" else ""
        return result

    child = MCPServer("Child", middleware=[watch])

    @child.tool()
    def hello() -> str:
        return "hello"

    parent = MCPServer("Parent")

    @parent.tool()
    def own() -> str:
        return "own"

    parent.mount(child, prefix="c")
    async with Client(parent, mode=mode) as client:
        assert (await client.call_tool("c_hello")).content[0].text == "hello (billing)"  # type: ignore[union-attr]
        assert (await client.call_tool("own")).content[0].text == "own"  # type: ignore[union-attr]
    assert seen == ["tools/call hello"]


async def test_list_changed_on_a_mounted_server_reaches_the_parents_clients() -> None:
    child = MCPServer("Child")
    parent = MCPServer("Parent")
    parent.mount(child, prefix="c")
    heard: list[str] = []

    async def every(method: str, params: dict[str, Any]) -> None:
        heard.append(f"{method} {params.get('uri', '')}".strip())

    async with Client(parent, mode="legacy", notification_handler=every) as client:
        await client.request("resources/subscribe", {"uri": "data://c/feed"})

        @child.tool()
        def added() -> str:
            return "new"

        assert await child.notify_list_changed("tools") == 0  # the child has no clients of its own
        await child.notify_resource_updated("data://feed")
        tools = [tool.name for tool in (await client.list_tools()).tools]
    assert tools == ["c_added"]
    assert heard == ["notifications/tools/list_changed", "notifications/resources/updated data://c/feed"]


async def test_a_copy_does_not_forward_notifications() -> None:
    child = MCPServer("Child")
    parent = MCPServer("Parent")
    parent.import_server(child, prefix="c")
    heard: list[str] = []

    async def every(method: str, params: dict[str, Any]) -> None:
        heard.append(method)

    async with Client(parent, mode="legacy", notification_handler=every) as client:
        await child.notify_list_changed("tools")
        await client.list_tools()
    assert heard == []


# -- hide= -------------------------------------------------------------------------------------
def guarded() -> tuple[MCPServer, MCPServer]:
    parent = MCPServer("Front")
    child = billing()
    parent.mount(child, prefix="billing", hide={"customer_id": Resolve(who)})
    return parent, child


@pytest.mark.parametrize("mode", MODES)
async def test_a_hidden_parameter_leaves_the_schema_and_a_client_value_is_ignored(mode: str) -> None:
    parent, _child = guarded()
    async with Client(parent, mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        assert set(tool.input_schema["properties"]) == {"order_id"}
        assert tool.input_schema["required"] == ["order_id"]
        sent = await client.call_tool("billing_refund", {"order_id": "7", "customer_id": "mallory"})
    assert sent.content[0].text == "refund 7 for alice from acct-1"  # type: ignore[union-attr]


async def test_the_parents_overrides_fill_a_hidden_parameter() -> None:
    parent = MCPServer("Front")
    parent.mount(billing(), prefix="billing", hide={"refund.customer_id": Resolve(who_default)})
    parent.dependency_overrides[who_default] = lambda: "carol"
    result = await parent.call_tool("billing_refund", {"order_id": "7"})
    assert result.content[0].text == "refund 7 for carol from acct-1"  # type: ignore[union-attr]


def test_hide_must_name_something() -> None:
    with pytest.raises(ValueError, match="parameter 'customer'"):
        MCPServer("Front").mount(billing(), prefix="b", hide={"customer": Resolve(who_default)})
    with pytest.raises(ValueError, match="tool 'refnud'"):
        MCPServer("Front").mount(billing(), prefix="b", hide={"refnud.customer_id": Resolve(who_default)})
    with pytest.raises(TypeError, match="takes Resolve"):
        MCPServer("Front").mount(billing(), prefix="b", hide={"customer_id": who_default})  # type: ignore[dict-item]


def test_check_and_graph_show_the_hidden_parameter() -> None:
    parent, _child = guarded()
    drawn = graph(parent, "billing_refund")
    assert drawn.splitlines()[0] == "tool billing_refund(order_id)  hides: customer_id"
    assert "who -> billing_refund.customer_id" in drawn
    assert (
        check(parent)
        == "OK Front: 1 tool, 1 prompt, 2 resources, 1 template, 2 resolvers, 1 hidden parameter"
    )


class Account(BaseModel):
    customer: str


async def ask_customer() -> Account | Elicit[Account]:
    return Elicit("Which customer is this for?", Account)


async def account_name(account: Annotated[Account, Resolve(ask_customer)]) -> str:
    return account.customer


@pytest.mark.parametrize("mode", MODES)
async def test_a_hidden_parameter_may_ask_the_person_over_rounds(mode: str) -> None:
    parent = MCPServer("Front")
    parent.mount(billing(), prefix="billing", hide={"customer_id": Resolve(account_name)})
    asked: list[str] = []

    async def answer(question: Any) -> dict[str, Any]:
        asked.append(question.message)
        return {"action": "accept", "content": {"customer": "dora"}}

    async with Client(parent, mode=mode, elicitation_handler=answer) as client:
        result = await client.call_tool("billing_refund", {"order_id": "9"})
    assert result.content[0].text == "refund 9 for dora from acct-1"  # type: ignore[union-attr]
    assert asked == ["Which customer is this for?"]


# -- single use, and whose requestState ---------------------------------------------------------
async def _send(connection: Connection, params: dict[str, Any]) -> dict[str, Any]:
    async def sink(message: dict[str, Any]) -> None:
        pass

    request = IncomingRequest(id=1, method="tools/call", params={**params, "_meta": MODERN_META})
    return await connection.respond(request, sink)


async def test_a_mounted_single_use_tool_is_claimed_once_through_the_parents_sealed_state(
    refund_desk: ModuleType,
) -> None:
    front = MCPServer("Front")
    front.mount(refund_desk.mcp, prefix="desk")
    assert front.registry.offers_single_use()
    connection = Connection(front)
    call = {"name": "desk_refund_order", "arguments": {"order_id": "ORD-7002", "reason": "too small"}}
    first = (await _send(connection, call))["result"]
    round2 = {
        **call,
        "requestState": first["requestState"],
        "inputResponses": accept(first["inputRequests"], {"full": True}),
    }
    second = (await _send(connection, round2))["result"]
    round3 = {
        **call,
        "requestState": second["requestState"],
        "inputResponses": accept(second["inputRequests"], {"restock": True}),
    }

    # The parent sealed these rounds: the desk served alone cannot open them.
    alone = await _send(Connection(refund_desk.mcp), {**round3, "name": "refund_order"})
    assert alone["error"] == FROZEN

    receipt = (await _send(connection, round3))["result"]["structuredContent"]
    assert receipt == {"order_id": "ORD-7002", "reason": "too small", "cents": 4800, "restocked": True}
    replayed = await _send(connection, round3)
    assert replayed["error"] == FROZEN and "result" not in replayed


async def test_a_mounted_task_tool_runs_as_a_task() -> None:
    child = MCPServer("Jobs")

    @child.tool(task_support="required")
    async def crunch(n: int) -> int:
        return n * 2

    front = MCPServer("Front")
    front.mount(child, prefix="jobs")
    assert "io.modelcontextprotocol/tasks" in front.capabilities(modern=True)["extensions"]
    async with Client(front) as client:
        result = await client.call_tool("jobs_crunch", {"n": 21})
    assert result.structured_content == {"result": 42}


async def test_a_mounted_servers_read_hint_applies_to_its_resources() -> None:
    child = MCPServer("Docs", cache_hints={"resources/read": CacheHint(ttl_ms=60_000, scope="public")})

    @child.resource("docs://guide")
    def guide() -> str:
        return "read me"

    front = MCPServer("Front")

    @front.resource("docs://own")
    def own() -> str:
        return "mine"

    front.mount(child, prefix="d")
    async with Client(front) as client:
        mounted = await client.request("resources/read", {"uri": "docs://d/guide"})
        front_own = await client.request("resources/read", {"uri": "docs://own"})
    assert (mounted["ttlMs"], mounted["cacheScope"]) == (60_000, "public")
    assert (front_own["ttlMs"], front_own["cacheScope"]) == (0, "private")  # the front's default
