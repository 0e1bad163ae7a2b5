"""`load_mcp_toolsets`: one toolset per server of an `mcpServers` JSON file, as Claude Desktop and Cursor write it.

    {"mcpServers": {
        "desk": {"command": "python", "args": ["server.py"], "env": {"TOKEN": "${DESK_TOKEN}"}, "cwd": "/srv"},
        "notes": {"url": "${NOTES_URL:-http://127.0.0.1:8000/mcp}", "headers": {"X-Team": "refunds"}}
    }}

Every string value may name environment variables: `${NAME}` (which must be
set) or `${NAME:-default}` (the default when NAME is not set). Each toolset
is prefixed with its server's name, so two servers' tools never collide.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import TypeAdapter
from pydantic_ai.toolsets import AbstractToolset
from typing_extensions import TypedDict

from .building import DEFAULT_INIT_TIMEOUT, DEFAULT_READ_TIMEOUT
from .connection import ToolsetClient
from .toolset import MCPToolset

__all__ = ["expand_env_vars", "load_mcp_toolsets"]

_VARIABLE = re.compile(r"\$\{([^}:\s]+)(:-([^}]*))?\}")


class _Server(TypedDict, total=False):
    """One `mcpServers` entry: `command` (with `args`, `env`, `cwd`) for stdio, or `url` (with `headers`).

    Other keys (`type`, `disabled`, ...) are ignored, so a file shared with
    other clients loads; they are not honoured either.
    """

    command: str
    args: list[str] | None
    env: dict[str, str] | None
    cwd: str | None
    url: str
    headers: dict[str, str] | None


class _Config(TypedDict):
    mcpServers: dict[str, _Server]


_CONFIG = TypeAdapter(_Config)


def expand_env_vars(value: Any) -> Any:
    """`value` with `${NAME}` and `${NAME:-default}` replaced in every string, however deeply nested.

    Raises `ValueError` naming the variable when one without a default is not set.
    """
    if isinstance(value, str):
        return _VARIABLE.sub(_variable, value)
    if isinstance(value, dict):
        return {key: expand_env_vars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_env_vars(item) for item in value]
    return value


def _variable(match: re.Match[str]) -> str:
    name, has_default, default = match.group(1), match.group(2) is not None, match.group(3)
    if name in os.environ:
        return os.environ[name]
    if has_default:
        return default or ""
    raise ValueError(
        f"Environment variable ${{{name}}} is not defined (give a default with ${{{name}:-...}})"
    )


def load_mcp_toolsets(config_path: str | Path) -> list[AbstractToolset[Any]]:
    """One `MCPToolset` per server in the file, each wrapped in a `PrefixedToolset` named after the server.

    Raises `FileNotFoundError` when there is no such file, `ValueError` when
    it is not JSON, when an entry has neither `command` nor `url`, or when a
    variable without a default is not set, and pydantic's `ValidationError`
    (a `ValueError`) when the file is not of the `mcpServers` shape.
    """
    path = Path(config_path)
    if not path.exists():
        raise FileNotFoundError(f"Config file {path} not found")
    config = _CONFIG.validate_python(expand_env_vars(pydantic_core.from_json(path.read_bytes())))
    toolsets: list[AbstractToolset[Any]] = []
    for name, server in config["mcpServers"].items():
        if "command" in server:
            client = ToolsetClient(
                [server["command"], *(server.get("args") or [])],
                env=server.get("env"),
                cwd=server.get("cwd"),
                init_timeout=DEFAULT_INIT_TIMEOUT,
                read_timeout=DEFAULT_READ_TIMEOUT,
            )
            toolset: MCPToolset[Any] = MCPToolset(client, id=name)
        elif "url" in server:
            toolset = MCPToolset(server["url"], id=name, headers=server.get("headers"))
        else:
            raise ValueError(f"MCP server {name!r} in {path} has neither `command` nor `url`")
        toolsets.append(toolset.prefixed(name))
    return toolsets
