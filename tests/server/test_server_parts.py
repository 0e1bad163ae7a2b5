"""MCPServer's parts share state through components the facade owns.

The registry is what a server offers, with the one public lookup every
other part uses (`registry.tool(name)`); the deployment record is where the
keys and stores live, and the facade's attributes of the same names read
and set it. (The layering and the private-attribute rule are checked in
tests/architecture/.)
"""

from __future__ import annotations

import logging

import pytest

from mcp_resolve import MCPServer, MemoryReplayStore, RequestStateSecurity

KEYS = RequestStateSecurity(keys=["a-shared-secret-of-at-least-32-bytes!!"])


def test_the_registry_files_what_the_decorators_register_and_looks_it_up_by_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mcp = MCPServer("Parts")

    @mcp.tool()
    def lookup(sku: str) -> str:
        return sku

    @mcp.resource("stock://{sku}")
    def stock(sku: str) -> str:
        return sku

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"hello {name}"

    tool = mcp.registry.tool("lookup")
    assert tool is not None and tool.fn is lookup and mcp.registry.tools == {"lookup": tool}
    assert mcp.registry.tool("missing") is None
    assert list(mcp.registry.templates) == ["stock://{sku}"] and not mcp.registry.resources
    greeting = mcp.registry.prompt("greet")
    assert greeting is not None and greeting.name == "greet"
    assert mcp.components() == [tool, greeting, mcp.registry.templates["stock://{sku}"]]
    with caplog.at_level(logging.WARNING, logger="mcp_resolve"):
        mcp.add_tool(lambda sku: sku, name="lookup")
    assert "Tool already exists: lookup (the new one replaces it)" in caplog.messages
    mcp.remove_tool("lookup")
    assert mcp.registry.tool("lookup") is None
    with pytest.raises(KeyError):
        mcp.remove_tool("lookup")


def test_the_duplicate_policy_is_the_servers_own(caplog: pytest.LogCaptureFixture) -> None:
    mcp = MCPServer("Quiet", warn_on_duplicate_tools=False)
    with caplog.at_level(logging.WARNING, logger="mcp_resolve"):
        mcp.add_tool(lambda sku: sku, name="lookup")
        mcp.add_tool(lambda sku: sku, name="lookup")
    assert not [m for m in caplog.messages if "already exists" in m]


def test_a_store_set_on_the_server_is_the_one_its_deployment_serves_with() -> None:
    mcp = MCPServer("Desk", request_state_security=KEYS)
    assert mcp.redis is None and mcp.session_store is None and mcp.deployment.redis is None
    assert mcp.request_state_security is KEYS and mcp.deployment.request_state_security is KEYS
    claims = MemoryReplayStore(max_claims=5)
    mcp.replay_store = claims
    assert mcp.deployment.replay_store is claims

    @mcp.tool(single_use=True)
    def refund(order: str) -> str:
        return order

    # The deployment sees the tools registered after it was chosen, and the store set since.
    assert mcp.deployment.process_local_stores() == [
        "the replay store of its single_use tools (MemoryReplayStore)"
    ]
    with pytest.raises(RuntimeError, match="refusing to start 2 workers"):
        mcp.deployment.check(2)
