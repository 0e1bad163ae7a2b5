"""Hostile input against composition: a client sending the hidden parameter, names that meet after prefixing.

A guard (`mount(..., hide={"customer_id": Resolve(...)})`) is only worth
something if nothing a client sends can reach the hidden parameter: every
shape of `customer_id` is dropped and the resolver's value is used. Names
that would collide once prefixed (tools, prompts, resources, templates,
and across two mounts) are refused with both sides named, before anything
is filed. A mounted template serves only URIs under its prefix, and its
own value checks still apply there.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcp_resolve import Client, MCPServer, Resolve

pytestmark = pytest.mark.anyio

HOSTILE_VALUES: list[Any] = [
    "bob",
    "",
    None,
    42,
    ["alice", "bob"],
    {"$ref": "#/customer"},
    "x" * 100_000,
    "alice\u0000bob",
]


def alice() -> str:
    return "alice"


def ledger(*, closed_schema: bool = False) -> MCPServer:
    billing = MCPServer("Billing")
    schema = {
        "type": "object",
        "properties": {"customer_id": {"type": "string"}, "status": {"type": "string"}},
        "required": ["customer_id", "status"],
        "additionalProperties": False,
    }

    @billing.tool(input_schema=schema if closed_schema else None)
    def invoices(customer_id: str, status: str) -> str:
        return f"{status} invoices of {customer_id}"

    @billing.resource("files://docs/{name}")
    def doc(name: str) -> str:
        return f"doc {name}"

    return billing


@pytest.mark.parametrize("closed_schema", [False, True])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_shape_of_the_hidden_parameter_a_client_sends_is_ignored(
    mode: str, closed_schema: bool
) -> None:
    front = MCPServer("Front")
    front.mount(ledger(closed_schema=closed_schema), prefix="billing", hide={"customer_id": Resolve(alice)})
    async with Client(front, mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        assert "customer_id" not in tool.input_schema["properties"]
        assert tool.input_schema["required"] == ["status"]
        if closed_schema:  # a client that validates against the schema refuses to send it at all
            assert tool.input_schema["additionalProperties"] is False
        for value in HOSTILE_VALUES:
            result = await client.call_tool("billing_invoices", {"status": "open", "customer_id": value})
            assert not result.is_error, value
            assert result.content[0].text == "open invoices of alice"  # type: ignore[union-attr]


async def test_the_hidden_parameter_cannot_be_smuggled_under_another_spelling() -> None:
    front = MCPServer("Front")
    front.mount(ledger(), prefix="billing", hide={"customer_id": Resolve(alice)})
    for arguments in (
        {"status": "open", "customerId": "bob"},
        {"status": "open", "customer_id ": "bob"},
        {"status": "open", "arguments": {"customer_id": "bob"}},
    ):
        result = await front.call_tool("billing_invoices", arguments)
        assert result.content[0].text == "open invoices of alice"  # type: ignore[union-attr]
    direct = await front.call_tool("billing_invoices", {"status": "open"})
    assert direct.content[0].text == "open invoices of alice"  # type: ignore[union-attr]


def _refused(front: MCPServer, mounted: MCPServer, prefix: str | None, *sides: str) -> None:
    before = (dict(front.registry.tools), dict(front.registry.resources), dict(front.registry.templates))
    with pytest.raises(ValueError) as refused:
        front.mount(mounted, prefix=prefix)
    for side in sides:
        assert re.search(re.escape(side), str(refused.value)), (side, str(refused.value))
    after = (dict(front.registry.tools), dict(front.registry.resources), dict(front.registry.templates))
    assert after == before  # nothing of the refused mount was filed


def test_names_that_collide_after_prefixing_are_refused_naming_both_sides() -> None:
    front = MCPServer("Front")

    @front.tool()
    def shop_order() -> str:
        return "front's"

    @front.prompt()
    def shop_greet() -> str:
        return "front's"

    @front.resource("files://shop/docs/{name}")
    def front_doc(name: str) -> str:
        return name

    @front.resource("files://shop/readme")
    def readme() -> str:
        return "front's"

    tool_clash = MCPServer("Shop")

    @tool_clash.tool()
    def order() -> str:
        return "shop's"

    _refused(
        front, tool_clash, "shop", "tool 'shop_order' from mounted server 'Shop'", "this server's own tool"
    )

    prompt_clash = MCPServer("Shop")

    @prompt_clash.prompt()
    def greet() -> str:
        return "shop's"

    _refused(front, prompt_clash, "shop", "prompt 'shop_greet'", "this server's own prompt")

    resource_clash = MCPServer("Shop")

    @resource_clash.resource("files://readme")
    def shop_readme() -> str:
        return "shop's"

    _refused(front, resource_clash, "shop", "resource 'files://shop/readme'", "this server's own resource")

    template_clash = MCPServer("Shop")

    @template_clash.resource("files://docs/{name}")
    def shop_doc(name: str) -> str:
        return name

    _refused(
        front, template_clash, "shop", "resource template 'files://shop/docs/{name}'", "this server's own"
    )


def test_two_mounts_without_prefixes_may_not_share_a_name() -> None:
    front = MCPServer("Front")
    front.mount(ledger())
    _refused(
        front, ledger(), None, "tool 'invoices' from mounted server 'Billing'", "clashes with mounted server"
    )


def test_bad_prefixes_and_self_mounts_are_refused() -> None:
    front = MCPServer("Front")
    for prefix in ("", "a/b", 3):
        with pytest.raises(ValueError, match="prefix must be"):
            front.mount(ledger(), prefix=prefix)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'Front' cannot mount itself"):
        front.mount(front, prefix="me")
    middle, inner = MCPServer("Middle"), MCPServer("Inner")
    front.mount(middle, prefix="m")
    middle.mount(inner, prefix="i")
    with pytest.raises(ValueError, match="'Inner' cannot mount 'Front', which serves it already"):
        inner.import_server(front, prefix="loop")


@pytest.mark.parametrize(
    "uri",
    [
        "files://docs/readme",  # the mounted server's own URI: not served under the parent's names
        "files://billing/docs/..%2F..%2Fetc%2Fpasswd",  # its template's value checks still apply
        "files://billing/docs/a/b",
        "files://billingdocs/readme",
    ],
)
async def test_a_mounted_template_serves_only_safe_uris_under_its_prefix(uri: str) -> None:
    front = MCPServer("Front")
    front.mount(ledger(), prefix="billing")
    async with Client(front, mode="auto") as client:
        with pytest.raises(Exception, match="Unknown resource"):
            await client.read_resource(uri)
        served = await client.read_resource("files://billing/docs/readme")
    assert served.contents[0].uri == "files://billing/docs/readme"


def test_a_clash_further_up_refuses_the_whole_mount() -> None:
    top, middle = MCPServer("Top"), MCPServer("Middle")
    top.mount(middle, prefix="m")

    @top.tool()
    def m_c_x() -> str:
        return "top's"

    leaf = MCPServer("Leaf")

    @leaf.tool()
    def a() -> str:
        return "leaf's"

    @leaf.tool()
    def x() -> str:
        return "leaf's"

    with pytest.raises(
        ValueError, match=re.escape("tool 'm_c_x' from mounted server 'Middle' (prefix 'm') clashes")
    ):
        middle.mount(leaf, prefix="c")
    assert not middle.registry.tools and list(top.registry.tools) == ["m_c_x"]  # nothing filed anywhere
