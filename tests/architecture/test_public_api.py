"""The public surface: what users import keeps importing, and no private module leaks into the docs.

`public_api.txt` is the list of public names, package by package. A name that disappears from a
package's `__all__` (or stops importing) fails here; a new one is added to the file on purpose.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

from conftest import ROOT
from mcp_resolve import _moved

SNAPSHOT = Path(__file__).with_name("public_api.txt")
PUBLIC_PACKAGES = [
    "mcp_resolve",
    "mcp_resolve.apps",
    "mcp_resolve.auth",
    "mcp_resolve.bridges",
    "mcp_resolve.bridges.openapi",
    "mcp_resolve.client",
    "mcp_resolve.client.auth",
    "mcp_resolve.client.tasks",
    "mcp_resolve.client.url_elicitation",
    "mcp_resolve.pydantic_ai",
    "mcp_resolve.resolve",
    "mcp_resolve.server",
    "mcp_resolve.server.apps",
    "mcp_resolve.stores",
    "mcp_resolve.tasks",
    "mcp_resolve.telemetry",
    "mcp_resolve.transports.http",
]
DOC_FILES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
FROM_IMPORT = re.compile(r"^\s*from\s+(mcp_resolve[\w.]*)\s+import\s+\(?([\w\s,]+?)\)?\s*$", re.M)
PLAIN_IMPORT = re.compile(r"^\s*import\s+(mcp_resolve[\w.]*)", re.M)
DOTTED = re.compile(r"\bmcp_resolve(?:\.\w+)+")


def snapshot() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for line in SNAPSHOT.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            package, _, name = line.partition(":")
            names.setdefault(package, []).append(name)
    return names


def current() -> dict[str, list[str]]:
    return {package: sorted(importlib.import_module(package).__all__) for package in PUBLIC_PACKAGES}


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_public_name_still_imports(package: str) -> None:
    module = importlib.import_module(package)
    expected = snapshot().get(package, [])
    missing = sorted(set(expected) - set(module.__all__))
    assert not missing, f"{package} no longer offers {missing}"
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_the_snapshot_lists_every_public_package() -> None:
    assert sorted(snapshot()) == sorted(PUBLIC_PACKAGES)


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def _documented_imports() -> list[tuple[Path, str, list[str]]]:
    found = []
    for path in DOC_FILES:
        text = path.read_text()
        for match in FROM_IMPORT.finditer(text):
            names = [name.strip() for name in match.group(2).replace("\n", " ").split(",") if name.strip()]
            found.append((path, match.group(1), names))
        for match in PLAIN_IMPORT.finditer(text):
            found.append((path, match.group(1), []))
    return found


def test_documented_imports_name_only_public_modules_and_all_import() -> None:
    imports = _documented_imports()
    assert len(imports) > 50  # the pages do import things: the scan must be finding them
    for path, module_name, names in imports:
        where = f"{path.relative_to(ROOT)}: {module_name}"
        assert not _is_private(module_name), f"{where} is a private module"
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # a documented path must not be a moved one
            module = importlib.import_module(module_name)
        for name in names:
            assert not _is_private(name), f"{where} imports the private {name}"
            assert hasattr(module, name) or importlib.util.find_spec(f"{module_name}.{name}"), f"{where}.{name}"


def test_documented_dotted_paths_are_not_private() -> None:
    for path in DOC_FILES:
        if path.name == "architecture.md":
            continue  # the maintainers' map names private modules on purpose
        for match in DOTTED.finditer(path.read_text()):
            assert not _is_private(match.group(0)), f"{path.relative_to(ROOT)}: {match.group(0)}"


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_module_path_still_imports_with_a_deprecation_warning(old: str) -> None:
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(old)):
        module = importlib.import_module(old)
    new = importlib.import_module(_moved.MOVED[old])
    public = [name for name in vars(new) if not name.startswith("__")]
    assert public, new
    for name in public[:20]:
        assert getattr(module, name) is getattr(new, name)


if __name__ == "__main__":  # after adding a public name on purpose: PYTHONPATH=tests python this_file.py
    lines = ["# Public names, package:name; tests/architecture/test_public_api.py keeps them importable."]
    for package, names in current().items():
        lines += [f"{package}:{name}" for name in names]
    SNAPSHOT.write_text("\n".join(lines) + "\n")
