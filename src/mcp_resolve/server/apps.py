"""MCP Apps where the official SDK keeps it (`mcp.server.apps`): official Apps code ports by its import.

The same names as `mcp_resolve.apps`, which holds them.
"""

from ..apps import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    Apps,
    ResourceCsp,
    ResourcePermissions,
    Visibility,
    client_supports_apps,
)

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "Apps",
    "ResourceCsp",
    "ResourcePermissions",
    "Visibility",
    "client_supports_apps",
]
