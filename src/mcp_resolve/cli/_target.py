"""What every subcommand starts from: `FILE[:OBJECT]`, imported by path, and the server it names.

The file is imported as a script would run it, and OBJECT (default: the variable `mcp`, else the
first `MCPServer` in the module) is the server. Importing a server is registering it, and
registration analyses every resolver graph, so a bad graph surfaces as `InvalidSignature` before
anything is served.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import types
from pathlib import Path
from typing import Any

from ..server import MCPServer

__all__ = ["CLIError", "absolute_target", "import_file", "load_server", "split_target"]


class CLIError(Exception):
    """A problem with what was asked on the command line: reported in one line, exit status 1."""


def split_target(spec: str) -> tuple[Path, str | None]:
    """`path/to/server.py:obj` -> (path, "obj"); a colon not followed by a Python name stays in the path."""
    path_text, sep, obj = spec.rpartition(":")
    if sep and path_text and obj and all(part.isidentifier() for part in obj.split(".")):
        return Path(path_text), obj
    return Path(spec), None


def absolute_target(spec: str) -> str:
    """`FILE[:OBJECT]` with FILE made absolute: what a child process (a worker, the Inspector) is given."""
    path, obj = split_target(spec)
    return os.fspath(path.resolve()) + (f":{obj}" if obj else "")


def _module_name(path: Path) -> str:
    """The stem when it is free, so resolver question keys read naturally and match across workers."""
    stem = path.stem
    if stem.isidentifier() and stem not in sys.modules:
        return stem
    return "mcp_resolve_app_" + re.sub(r"\W", "_", stem)


def import_file(path: Path) -> types.ModuleType:
    """Import a file as a script would run it: its folder first on sys.path, so sibling imports work."""
    if not path.is_file():
        raise CLIError(f"no such file: {path}")
    path = path.resolve()
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    sys.modules[name] = module  # pydantic resolves the module's annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_server(spec: str) -> MCPServer:
    """The `MCPServer` that `FILE[:OBJECT]` names."""
    path, obj = split_target(spec)
    module = import_file(path)
    if obj is not None:
        value: Any = module
        for part in obj.split("."):
            if not hasattr(value, part):
                raise CLIError(f"{path} has no {obj!r}")
            value = getattr(value, part)
        if not isinstance(value, MCPServer):
            raise CLIError(f"{path}:{obj} is a {type(value).__name__}, not an MCPServer")
        return value
    found = getattr(module, "mcp", None)
    if isinstance(found, MCPServer):
        return found
    for value in vars(module).values():
        if isinstance(value, MCPServer):
            return value
    for value in vars(module).values():
        kind = type(value)
        if kind.__name__ in ("MCPServer", "FastMCP") and kind.__module__.split(".")[0] in ("mcp", "fastmcp"):
            raise CLIError(
                f"{path} builds {kind.__module__.split('.')[0]}'s {kind.__name__}, not mcp-resolve's: "
                "change its import to `from mcp_resolve import MCPServer`"
            )
    raise CLIError(f"{path} defines no MCPServer; name one with {path}:OBJECT")
