"""The 2026-07-28 request-metadata headers: the mirrored protocol version, method and name.

Streamable HTTP copies body fields into headers so gateways can route without
parsing JSON. Once something routes on a header and we execute the body, the
two must be proven equal, or `Mcp-Name: read_only_tool` could carry a body
calling another tool. (A tool's `Mcp-Param-*` headers are checked where the
tool is known: `protocol.param_headers`, from `MCPServer`'s tools/call.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import HEADER_MISMATCH, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, MCPError
from ..protocol.jsonrpc import IncomingRequest
from ..protocol.param_headers import decode_header_value

__all__ = [
    "METHOD_HEADER",
    "NAME_FIELDS",
    "NAME_HEADER",
    "PROTOCOL_VERSION_HEADER",
    "check_standard_headers",
    "modern_rejection",
]

PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"

NAME_FIELDS: Mapping[str, str] = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The body field each name-bearing method mirrors into `Mcp-Name`."""


def check_standard_headers(method: str, params: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """Why `Mcp-Method`/`Mcp-Name` disagree with the body, or None when they agree."""
    sent_method = headers.get(METHOD_HEADER)
    if sent_method is None:
        return "Header mismatch: the Mcp-Method header is required"
    if sent_method.strip(" \t") != method:
        return f"Header mismatch: Mcp-Method header {sent_method!r} does not match body method {method!r}"
    field = NAME_FIELDS.get(method)
    if field is None:
        return None
    body_value = params.get(field)
    if not isinstance(body_value, str):
        return None  # a body without the name is the handler's invalid-params error to report
    raw = headers.get(NAME_HEADER)
    if raw is None:
        return f"Header mismatch: the Mcp-Name header is required for {method}"
    try:
        sent = decode_header_value(raw)
    except ValueError:
        return "Header mismatch: the Mcp-Name header holds malformed base64"
    if sent != body_value:
        return f"Header mismatch: Mcp-Name header value {sent!r} does not match body value {body_value!r}"
    return None


def modern_rejection(message: IncomingRequest, headers: Mapping[str, str]) -> MCPError | None:
    """The transport-level checks of a 2026-07-28 request, first failure wins.

    The order is the one the spec's reference clients expect: the `_meta`
    envelope, then the version header against it, then the version itself,
    then the mirrored method and name headers.
    """
    meta = message.params.get("_meta")
    if not (
        isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta and CLIENT_CAPABILITIES_META_KEY in meta
    ):
        required = (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY)
        missing = [key for key in required if not isinstance(meta, dict) or key not in meta]
        return MCPError(INVALID_PARAMS, f"Invalid params: _meta is missing {', '.join(missing)}")
    version, header = meta[PROTOCOL_VERSION_META_KEY], headers.get(PROTOCOL_VERSION_HEADER)
    if header is None:
        return MCPError(HEADER_MISMATCH, "Header mismatch: the MCP-Protocol-Version header is required")
    if header != version:
        return MCPError(
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version header {header!r} does not match _meta version {version!r}",
        )
    if version not in MODERN_PROTOCOL_VERSIONS:
        data = {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": str(version)}
        return MCPError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)
    mismatch = check_standard_headers(message.method, message.params, headers)
    return None if mismatch is None else MCPError(HEADER_MISMATCH, mismatch)
