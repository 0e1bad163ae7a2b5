"""The layering docs/architecture.md describes, checked on the source: what may import what.

Every `import` and `from ... import` in src/mcp_resolve counts, those under `if TYPE_CHECKING:`
and inside functions too: a type-only import still ties a lower layer to a higher one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "mcp_resolve"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything a module imports from mcp_resolve, relative ones resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "mcp_resolve" or module.startswith("mcp_resolve."):
                for alias in node.names:
                    yield node.lineno, f"{module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mcp_resolve"):
                    yield node.lineno, alias.name


EDGES = [
    (_module_name(path), line, target)
    for path in sorted(PACKAGE.rglob("*.py"))
    for line, target in _imports(path)
]


def _under(name: str, *packages: str) -> bool:
    return any(name == f"mcp_resolve.{p}" or name.startswith(f"mcp_resolve.{p}.") for p in packages)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{source}:{line} imports {target}"
        for source, line, target in EDGES
        if _under(source, *importers) and _under(target, *forbidden)
    ]


def test_the_scan_sees_the_package() -> None:
    assert len(EDGES) > 500
    assert any(_under(source, "protocol") for source, _, _ in EDGES)


RULES = {
    "the resolver engine imports nothing above it": (
        ("resolve",),
        ("server", "protocol", "transports", "client", "tasks", "stores", "auth", "telemetry", "cli",
         "pydantic_ai", "sealing", "settings", "replay", "tools", "resources", "prompts"),
    ),
    "nothing below the server imports it": (
        ("resolve", "protocol", "stores", "auth", "transports"),
        ("server",),
    ),
    "an extension reaches the core through the server's hooks, not the eras": (
        ("tasks",),
        ("protocol.modern", "protocol.handshake", "server._facade", "server._methods", "server._serving"),
    ),
    "the core does not import the tasks extension": (
        ("tools", "resources", "prompts", "server", "protocol", "resolve"),
        ("tasks",),
    ),
    "the protocol layer knows no transport and no client": (
        ("protocol",),
        ("transports", "client", "cli"),
    ),
    "the client imports no server-side transport": (
        ("client",),
        ("transports.http", "transports.stdio", "server._serving", "server._deployment"),
    ),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_layering(rule: str) -> None:
    importers, forbidden = RULES[rule]
    assert _violations(importers, forbidden) == [], rule


SHARED_PRIVATE = {
    # SqliteReplayStore keeps its claims in the file the SQLite task store uses: one file per host.
    ("mcp_resolve.replay", "mcp_resolve.stores._sqlite"),
}


def test_a_private_module_is_imported_only_inside_its_own_package() -> None:
    """`a.b._c` belongs to `a.b`: only modules under `a.b` import it (`mcp_resolve._x` is shared)."""
    wrong = []
    for source, line, target in EDGES:
        if any(source == s and target.startswith(t + ".") for s, t in SHARED_PRIVATE):
            continue
        parts = target.split(".")
        for index, part in enumerate(parts[:-1] if not (PACKAGE.parent / Path(*parts)).exists() else parts):
            if index > 1 and part.startswith("_") and not part.startswith("__"):
                owner = ".".join(parts[:index])
                if not (source == owner or source.startswith(owner + ".")):
                    wrong.append(f"{source}:{line} imports {target}")
                break
    assert wrong == []
