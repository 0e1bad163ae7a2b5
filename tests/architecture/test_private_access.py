"""No module reaches into another package's private attributes (`obj._name`).

A part of the server, a transport or an extension gets what it needs through a public method,
property or component; `self._x` and `cls._x` are a class's own business, and a package's
modules may share its privates among themselves. Counted from the AST: an attribute access
`x._name` (not a dunder) whose name no module of the same package defines.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "src" / "mcp_resolve"


def _defined_privates(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.rpartition(".")[2])
    return {name for name in names if name.startswith("_")}


def _private_reads(tree: ast.AST) -> list[tuple[int, str, str]]:
    reads = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            reads.append((node.lineno, node.attr, ast.unparse(node)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and node.args[1].value.startswith("_")
            and not node.args[1].value.startswith("__")
        ):
            reads.append((node.lineno, node.args[1].value, ast.unparse(node)))
    return reads


def test_no_module_reads_another_packages_private_attributes() -> None:
    trees = {path: ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")}
    defined: dict[Path, set[str]] = {}
    for path, tree in trees.items():
        defined.setdefault(path.parent, set()).update(_defined_privates(tree))
    assert sum(len(reads) for reads in map(_private_reads, trees.values())) > 0  # the scan sees reads
    crossing = [
        f"{path.relative_to(PACKAGE)}:{line}: {text}"
        for path, tree in trees.items()
        for line, name, text in _private_reads(tree)
        if name not in defined[path.parent]
    ]
    assert crossing == []


def test_the_scan_would_see_a_crossing() -> None:
    planted = ast.parse("def f(server):\n    return server._tools, getattr(server, '_prompts')\n")
    assert {name for _, name, _ in _private_reads(planted)} == {"_tools", "_prompts"}
    assert _defined_privates(planted) == set()
