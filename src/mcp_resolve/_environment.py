"""Whether the operator set anything: the one check made before the settings are read.

The `MCP_RESOLVE_*` variables are read by a pydantic-settings model
(`mcp_resolve.settings`). Without any of them set, every setting is its
default, and loading that model (pydantic-settings and what it imports:
dotenv, argparse, its sources; about 1 MB) buys nothing. Server
construction and the stdio transport ask here first, so a server nobody
configured through the environment never loads it.
"""

from __future__ import annotations

import os

__all__ = ["ENV_PREFIX", "settings_in_environment"]

ENV_PREFIX = "MCP_RESOLVE_"


def settings_in_environment() -> bool:
    """Whether any `MCP_RESOLVE_*` variable is set (any case, as the settings read them)."""
    return any(name.upper().startswith(ENV_PREFIX) for name in os.environ)
