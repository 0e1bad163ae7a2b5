"""The 2026-07-28 envelope: a request's `_meta` checked on arrival, a result's filled in on the way out.

The era has no handshake: every request names its protocol version, the
client's capabilities and (optionally) who it is and how much log it wants
in `_meta`, and `server/discover` is how a client learns the versions and
capabilities beforehand. A request whose envelope is unusable is refused
before anything runs (an unsupported version with the versions this server
speaks, so the client can pick another). Every result leaves with its
`resultType`, the cache hints of a cacheable method and the server's own
`serverInfo`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    LOG_LEVEL_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ...context import LOG_LEVELS
from ...errors import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, MCPError
from ..extension_ids import check_declared_extensions

if TYPE_CHECKING:
    from ..serves import DescribesServer

__all__ = ["CACHEABLE_METHODS", "check_envelope", "discover", "finish_result"]

CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


def check_envelope(meta: dict[str, Any]) -> None:
    """Refuse a request whose `_meta` envelope is unusable: an unsupported version, or a malformed part."""
    version = meta.get(PROTOCOL_VERSION_META_KEY)
    if version not in MODERN_PROTOCOL_VERSIONS:
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {
                "supported": list(MODERN_PROTOCOL_VERSIONS),
                "requested": version if isinstance(version, str) else str(version),
            },
        )
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
    if not isinstance(capabilities, dict):
        raise MCPError(
            INVALID_PARAMS, f"Invalid params: _meta needs an object at {CLIENT_CAPABILITIES_META_KEY!r}"
        )
    if "extensions" in capabilities:
        check_declared_extensions(capabilities)
    client_info = meta.get(CLIENT_INFO_META_KEY)
    if client_info is not None and not (
        isinstance(client_info, dict) and isinstance(client_info.get("name"), str)
    ):
        raise MCPError(
            INVALID_PARAMS, f"Invalid params: {CLIENT_INFO_META_KEY!r} must be an Implementation object"
        )
    log_level = meta.get(LOG_LEVEL_META_KEY)
    if log_level is not None and log_level not in LOG_LEVELS:
        raise MCPError(INVALID_PARAMS, f"Invalid params: unknown log level {log_level!r} in _meta")


def discover(server: DescribesServer) -> dict[str, Any]:
    """The `server/discover` result: the versions this server speaks, its capabilities and instructions."""
    ttl_ms, scope = server.cache_hint("server/discover")
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
        "capabilities": server.capabilities(modern=True),
        "ttlMs": ttl_ms,
        "cacheScope": scope,
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def finish_result(server: DescribesServer, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """`result` as it goes out: its `resultType`, a cacheable method's hints and `serverInfo`, unless set."""
    result.setdefault("resultType", "complete")
    if method in CACHEABLE_METHODS and result["resultType"] == "complete":
        ttl_ms, scope = server.cache_hint(method)
        result.setdefault("ttlMs", ttl_ms)
        result.setdefault("cacheScope", scope)
    meta = result.setdefault("_meta", {})
    meta.setdefault(SERVER_INFO_META_KEY, server.server_info())
    return result
