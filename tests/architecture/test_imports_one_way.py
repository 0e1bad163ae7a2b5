"""Imports point one way: an import made inside a function defers a cost, it never hides a cycle.

A module may import another inside a function to keep a cost off the path that does not need it
(uvicorn's httptools protocol, pydantic-settings, the auth code of an open server). It may not do
so because the other module imports it back: that is a cycle, hidden until the function runs.
Read from the source (AST), so it costs no import: every function-local import of the modules
below is checked against the whole package's import graph (imports under TYPE_CHECKING aside).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mcp_resolve

PACKAGE = Path(mcp_resolve.__file__).parent
CHECKED = (
    "mcp_resolve.transports",
    "mcp_resolve.settings",
    "mcp_resolve.sealing",
    "mcp_resolve._state_keys",
    "mcp_resolve._environment",
    "mcp_resolve.cli",
)
"""The modules whose function-local imports are checked (packages include their modules)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _known(name: str) -> str | None:
    """The package module `name` is, or is an attribute of (`a.b.c` -> `a.b` when `c` is a name)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = module.split(".")
        if node.level:
            if MODULES[module].name != "__init__.py":
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
        else:
            base = []
        stem = ".".join([*base, *([node.module] if node.module else [])])
        names = [stem, *(f"{stem}.{alias.name}" for alias in node.names)]
    found = {_known(name) for name in names}
    return {name for name in found if name is not None and name != module}


def _edges() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each module's imports: (at import time, inside functions)."""
    eager: dict[str, set[str]] = {name: set() for name in MODULES}
    local: dict[str, set[str]] = {name: set() for name in MODULES}

    def visit(module: str, node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (local if in_function else eager)[module] |= _imported(module, child)
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            visit(module, child, inside)

    for name, path in MODULES.items():
        visit(name, ast.parse(path.read_text(encoding="utf-8")), False)
    return eager, local


EAGER, LOCAL = _edges()
EVERY = {name: EAGER[name] | LOCAL[name] for name in MODULES}


def _reaches(start: str, goal: str) -> list[str] | None:
    """A chain of imports from `start` to `goal`, or None."""
    paths, todo = {start: [start]}, [start]
    while todo:
        current = todo.pop()
        for target in sorted(EVERY[current]):
            if target not in paths:
                paths[target] = [*paths[current], target]
                if target == goal:
                    return paths[target]
                todo.append(target)
    return None


def _checked(module: str) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in CHECKED)


LOCAL_IMPORTS = sorted(
    (module, target) for module in MODULES if _checked(module) for target in LOCAL[module] - EAGER[module]
)


def test_the_graph_is_read() -> None:
    """The walk finds what it checks: the deferred imports this test exists for are seen."""
    assert (
        "mcp_resolve.transports.http._app",
        "mcp_resolve.transports.http._auth.protected",
    ) in LOCAL_IMPORTS
    assert ("mcp_resolve.sealing", "mcp_resolve.settings") in LOCAL_IMPORTS
    assert "mcp_resolve.transports.http._exchange.endpoint" in EAGER["mcp_resolve.transports.http._app"]


@pytest.mark.parametrize(("module", "target"), LOCAL_IMPORTS, ids=[f"{m}->{t}" for m, t in LOCAL_IMPORTS])
def test_a_function_local_import_hides_no_cycle(module: str, target: str) -> None:
    back = _reaches(target, module)
    assert back is None, (
        f"{module} imports {target} inside a function, and it imports back: {' -> '.join(back)}"
    )


def test_settings_and_sealing_do_not_import_each_other() -> None:
    assert "mcp_resolve.sealing" not in EVERY["mcp_resolve.settings"]
    assert _reaches("mcp_resolve.settings", "mcp_resolve.sealing") is None


def test_sealing_reads_no_environment() -> None:
    """The settings are the one home of environment reading: sealing only asks them for the keys."""
    tree = ast.parse(MODULES["mcp_resolve.sealing"].read_text(encoding="utf-8"))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "os" not in imported and "os" not in names
    assert not {"environ", "getenv", "environb"} & (names | attributes)
