"""MCPServer's parts share state through components the facade owns, and the layers below know no server class.

The registry is what a server offers, with the one public lookup every
other part uses (`registry.tool(name)`); the deployment record is where the
keys and stores live, and the facade's attributes of the same names read
and set it. `protocol/`, `transports/` and `stores/` type the server they
serve with `Protocol`s they own, so none of them imports
`mcp_resolve.server`, and no module reaches into another package's private
attributes (the tasks extension, moving onto the core's hooks, aside).
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

import mcp_resolve
from mcp_resolve import MCPServer, MemoryReplayStore, RequestStateSecurity

SRC = Path(mcp_resolve.__file__).parent
BELOW_THE_SERVER = ("protocol", "transports", "stores", "resolve", "auth")
KEYS = RequestStateSecurity(keys=["a-shared-secret-of-at-least-32-bytes!!"])


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, at run time or under TYPE_CHECKING, as absolute names."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_layer_below_the_server_imports_it() -> None:
    offenders = [
        f"{path.relative_to(SRC)} imports {name}"
        for layer in BELOW_THE_SERVER
        for path in sorted((SRC / layer).rglob("*.py"))
        for name in sorted(_imported(path))
        if name == "mcp_resolve.server" or name.startswith("mcp_resolve.server.")
    ]
    assert offenders == []


def _private_names_by_package() -> dict[Path, set[str]]:
    defined: dict[Path, set[str]] = {}
    for path in SRC.rglob("*.py"):
        names = defined.setdefault(path.parent, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return defined


def test_no_module_reads_another_packages_private_attributes() -> None:
    """`x._name` outside `self`/`cls` must name something defined in the reader's own package."""
    defined = _private_names_by_package()
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "tasks":  # becoming an extension on the core's hooks, separately
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")):
                continue
            if node.attr.startswith("__") or (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            ):
                continue
            if node.attr not in defined[path.parent]:
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


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
