"""The tasks extension sits on the core's hooks, never under the core: the import rules, read from the source.

The core (`tools.py`, `server/`, `protocol/`) offers hooks (`server/hooks.py`)
and imports nothing of `mcp_resolve.tasks`, not even for type checking; the
extension speaks no protocol era of its own (no `protocol.modern`, at module
or function level), and reads the core through public accessors, never
another package's private attributes. Checked on the syntax tree, so a local
import inside a function counts as much as one at the top.

And what that layering must not change: every server still serves `tasks/*`,
and a server whose tools never run as tasks loads no more of the extension
than its registration.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from conftest import ROOT
from mcp_resolve import Client, MCPError, MCPServer
from mcp_resolve.tasks import TASKS_EXTENSION

SRC = ROOT / "src"
PACKAGE = SRC / "mcp_resolve"
MODERN = "2026-07-28"


def module_name(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, src: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in `path`, wherever it stands (functions, TYPE_CHECKING).

    `from pkg import name` yields both `pkg` and `pkg.name`, since `name` may be a
    submodule; `importlib.import_module("...")` and `__import__("...")` with a
    literal name count too.
    """
    name = module_name(path, src)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    yield node.lineno, first.value


def core_files(src: Path) -> list[Path]:
    package = src / "mcp_resolve"
    return [
        package / "tools.py",
        *sorted((package / "server").glob("*.py")),
        *sorted((package / "protocol").glob("*.py")),
    ]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def core_imports_of_tasks(src: Path) -> list[str]:
    return [
        f"{path.relative_to(src)}:{line} imports {module}"
        for path in core_files(src)
        for line, module in imported_modules(path, src)
        if within(module, "mcp_resolve.tasks")
    ]


def tasks_imports_of_an_era(src: Path) -> list[str]:
    return [
        f"{path.relative_to(src)}:{line} imports {module}"
        for path in sorted((src / "mcp_resolve" / "tasks").rglob("*.py"))
        for line, module in imported_modules(path, src)
        if within(module, "mcp_resolve.protocol.modern")
    ]


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def private_reaches_of_tasks(src: Path) -> list[str]:
    """`obj._name` in tasks/, read or set, where `obj` is not `self` and `_name` is not the tasks package's own."""
    files = sorted((src / "mcp_resolve" / "tasks").rglob("*.py"))
    trees = {path: ast.parse(path.read_text(), str(path)) for path in files}
    own: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _on_self(node):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                own.add(node.value)  # __slots__ entries
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if (
                not isinstance(node, ast.Attribute)
                or not node.attr.startswith("_")
                or node.attr.startswith("__")
            ):
                continue
            if _on_self(node):
                continue
            if node.attr not in own:
                found.append(f"{path.relative_to(src)}:{node.lineno} reaches .{node.attr}")
    return found


def test_the_core_imports_nothing_of_the_tasks_extension() -> None:
    assert len(core_files(SRC)) > 10  # tools.py, server/ and protocol/ were found
    assert core_imports_of_tasks(SRC) == []


def test_the_tasks_extension_imports_no_protocol_era() -> None:
    assert tasks_imports_of_an_era(SRC) == []


def test_the_tasks_extension_reaches_no_private_attribute_of_the_core() -> None:
    assert private_reaches_of_tasks(SRC) == []


def test_the_rules_see_local_and_relative_imports(tmp_path: Path) -> None:
    """The checks above find what they forbid, wherever and however it is written."""
    core = tmp_path / "mcp_resolve"
    for folder in ("server", "protocol", "tasks"):
        (core / folder).mkdir(parents=True)
        (core / folder / "__init__.py").write_text("")
    (core / "tools.py").write_text("def f():\n    from .tasks.runner import wait_for_task\n")
    (core / "server" / "_methods.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import tasks\n"
    )
    (core / "protocol" / "a.py").write_text(
        "import importlib\nimportlib.import_module('mcp_resolve.tasks.methods')\n"
    )
    (core / "tasks" / "runner.py").write_text(
        "async def run(server, trigger):\n"
        "    from ..protocol.modern import BatchQuestioner\n"
        "    server._task_runner = object()\n"
        "    return server._tools, trigger._scope, BatchQuestioner\n"
    )
    (core / "tasks" / "methods.py").write_text("from ..protocol import modern\n")
    assert sorted(core_imports_of_tasks(tmp_path)) == [
        "mcp_resolve/protocol/a.py:2 imports mcp_resolve.tasks.methods",
        "mcp_resolve/server/_methods.py:3 imports mcp_resolve.tasks",
        "mcp_resolve/tools.py:2 imports mcp_resolve.tasks.runner",
        "mcp_resolve/tools.py:2 imports mcp_resolve.tasks.runner.wait_for_task",
    ]
    assert sorted(tasks_imports_of_an_era(tmp_path)) == [
        "mcp_resolve/tasks/methods.py:1 imports mcp_resolve.protocol.modern",
        "mcp_resolve/tasks/runner.py:2 imports mcp_resolve.protocol.modern",
        "mcp_resolve/tasks/runner.py:2 imports mcp_resolve.protocol.modern.BatchQuestioner",
    ]
    assert sorted(private_reaches_of_tasks(tmp_path)) == [
        "mcp_resolve/tasks/runner.py:3 reaches ._task_runner",
        "mcp_resolve/tasks/runner.py:4 reaches ._scope",
        "mcp_resolve/tasks/runner.py:4 reaches ._tools",
    ]


# -- what the layering keeps ------------------------------------------------------------------
async def tasks_request(client: Client, method: str, params: dict[str, object]) -> object:
    meta = {CLIENT_CAPABILITIES_META_KEY: {"extensions": {TASKS_EXTENSION: {}}}}
    return await client.request(method, {**params, "_meta": meta})


@pytest.mark.anyio
async def test_a_server_without_task_tools_still_serves_tasks_methods() -> None:
    """Every server carries the extension: an unknown task is "not found" there, as on a task server."""
    mcp = MCPServer("plain")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    assert all(mcp.serves(method) for method in ("tasks/get", "tasks/update", "tasks/cancel"))
    async with Client(mcp, mode=MODERN) as client:
        with pytest.raises(MCPError) as caught:
            await tasks_request(client, "tasks/get", {"taskId": "A" * 32})
    assert (caught.value.code, caught.value.message) == (-32602, "Failed to retrieve task: Task not found")


LAZY = textwrap.dedent(
    """
    import sys

    import anyio
    from mcp_resolve import Client, MCPServer

    def loaded():
        return sorted(m for m in sys.modules if m.startswith(("mcp_resolve.tasks.", "mcp_resolve.stores.tasks")))

    mcp = MCPServer("lazy")

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.tool(task_support="optional")
    def later(text: str) -> str:
        return text

    async def main():
        async with Client(mcp) as client:
            await client.call_tool("echo", {"text": "hi"})
            print(loaded())
            handle = await client.call_tool_task("later", {"text": "hi"})
            await handle.result()
            print(loaded())

    anyio.run(main)
    """
)


@pytest.mark.slow
def test_a_server_whose_tools_never_run_as_tasks_loads_only_the_registration() -> None:
    run = subprocess.run(
        [sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=60, cwd=SRC.parent, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    before, after = run.stdout.splitlines()
    assert before == "['mcp_resolve.tasks._extension']"
    for module in ("mcp_resolve.tasks.methods", "mcp_resolve.tasks.runner", "mcp_resolve.stores.tasks"):
        assert f"'{module}'" in after
