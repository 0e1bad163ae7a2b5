"""The 2026-07-28 request-metadata headers: mirrored method, name and tool parameters.

Streamable HTTP copies body fields into headers so gateways can route without
parsing JSON. Once something routes on a header and we execute the body, the
two must be proven equal, or `Mcp-Name: read_only_tool` could carry a body
calling another tool. Client emit and server check share this module so both
ends encode, decode and locate values identically.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import HEADER_MISMATCH, INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, MCPError
from ..protocol.jsonrpc import IncomingRequest

__all__ = [
    "METHOD_HEADER",
    "NAME_FIELDS",
    "NAME_HEADER",
    "PARAM_HEADER_PREFIX",
    "PROTOCOL_VERSION_HEADER",
    "check_param_headers",
    "check_standard_headers",
    "decode_header_value",
    "encode_header_value",
    "header_params",
    "modern_rejection",
    "param_headers",
]

PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
PARAM_HEADER_PREFIX = "mcp-param-"
X_MCP_HEADER = "x-mcp-header"

NAME_FIELDS: Mapping[str, str] = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The body field each name-bearing method mirrors into `Mcp-Name`."""

HeaderParams = dict[tuple[str, ...], str]
"""Property path inside the tool arguments -> the `{Name}` of its `Mcp-Param-{Name}` header."""

_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)
_PLAIN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")  # visible ASCII, no edge whitespace
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE_TYPES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1
# Keywords whose values are subschemas; `properties` alone keeps a path "statically reachable".
_SCHEMA_VALUED = frozenset(
    {"items", "contains", "additionalProperties", "propertyNames", "unevaluatedItems"}
    | {"unevaluatedProperties", "not", "if", "then", "else", "contentSchema"}
)
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMA_MAPS = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})
_MISSING = object()


def encode_header_value(value: str) -> str:
    """Plain when header-safe, else the `=?base64?...?=` sentinel (also for plain text that looks like one)."""
    if value == "" or (_PLAIN.fullmatch(value) and not _SENTINEL.fullmatch(value)):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def decode_header_value(raw: str) -> str | None:
    """The value a header carries, or None when it is malformed (bad characters or bad base64)."""
    raw = raw.strip(" \t")
    if not _FIELD_VALUE.fullmatch(raw):
        return None
    encoded = _SENTINEL.fullmatch(raw)
    if encoded is None:
        return raw
    try:
        return base64.b64decode(encoded.group(1), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


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
    sent = decode_header_value(raw)
    if sent is None:
        return "Header mismatch: the Mcp-Name header holds invalid characters or malformed base64"
    if sent != body_value:
        return f"Header mismatch: Mcp-Name header value {sent!r} does not match body value {body_value!r}"
    return None


def _positions(schema: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every subschema with its `properties` path from the root (None once off that chain)."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                stack.extend((None if path is None else (*path, name), sub) for name, sub in value.items())
            elif key in _SCHEMA_VALUED:
                stack.append((None, value))
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def header_params(input_schema: Any) -> HeaderParams:
    """The `x-mcp-header` annotations of a tool's input schema; ValueError says why they are invalid."""
    found: HeaderParams = {}
    seen: set[str] = set()
    for path, node in _positions(input_schema):
        if X_MCP_HEADER not in node:
            continue
        name = node[X_MCP_HEADER]
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ValueError(f"x-mcp-header {name!r} is not a non-empty HTTP token")
        if path is None or not path:
            raise ValueError(
                f"x-mcp-header {name!r} is not on a property reachable through 'properties' only"
            )
        if node.get("type") not in _PRIMITIVE_TYPES:
            raise ValueError(
                f"x-mcp-header {name!r} is on a property that is not a string, integer or boolean"
            )
        if name.lower() in seen:
            raise ValueError(f"x-mcp-header {name!r} is declared twice (names are case-insensitive)")
        seen.add(name.lower())
        found[path] = name
    return found


def _lookup(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = arguments
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _as_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER:
        return str(value)
    if isinstance(value, str):
        return value
    return None


def param_headers(params: HeaderParams, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """The `Mcp-Param-*` headers a client sends for one call (absent or null values send none)."""
    headers: dict[str, str] = {}
    for path, name in params.items():
        text = _as_text(_lookup(arguments or {}, path))
        if text is not None:
            headers[f"Mcp-Param-{name}"] = encode_header_value(text)
    return headers


def _same(body_value: Any, sent: str) -> bool:
    if isinstance(body_value, bool):
        return sent == ("true" if body_value else "false")
    if isinstance(body_value, (int, float)):
        try:
            return Decimal(sent) == Decimal(str(body_value))
        except InvalidOperation:
            return False
    return isinstance(body_value, str) and sent == body_value


def check_param_headers(
    params: HeaderParams, arguments: Mapping[str, Any] | None, headers: Mapping[str, str]
) -> str | None:
    """Why the `Mcp-Param-*` headers disagree with the call's arguments, or None when they agree."""
    for path, name in params.items():
        value = _lookup(arguments or {}, path)
        raw = headers.get(PARAM_HEADER_PREFIX + name.lower())
        if value is _MISSING or value is None:
            if raw is not None:
                return f"Header mismatch: Mcp-Param-{name} is sent but the argument is absent"
            continue
        if raw is None:
            return f"Header mismatch: the Mcp-Param-{name} header is required when the argument is given"
        sent = decode_header_value(raw)
        if sent is None:
            return f"Header mismatch: Mcp-Param-{name} holds invalid characters or malformed base64"
        if not _same(value, sent):
            return f"Header mismatch: Mcp-Param-{name} header does not match the argument value"
    return None


def modern_rejection(
    message: IncomingRequest, headers: Mapping[str, str], tool_params: Callable[[Any], HeaderParams]
) -> MCPError | None:
    """The transport-level checks of a 2026-07-28 request, first failure wins.

    The order is the one the spec's reference clients expect: the `_meta`
    envelope, then the version header against it, then the version itself,
    then the mirrored method/name headers and a tool's `Mcp-Param-*` headers.
    """
    meta = message.params.get("_meta")
    required = (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY)
    missing = [key for key in required if not isinstance(meta, dict) or key not in meta]
    if missing or not isinstance(meta, dict):
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
    if mismatch is None and message.method == "tools/call":
        params = tool_params(message.params.get("name"))
        arguments = message.params.get("arguments")
        if params:
            mismatch = check_param_headers(
                params, arguments if isinstance(arguments, dict) else None, headers
            )
    return None if mismatch is None else MCPError(HEADER_MISMATCH, mismatch)
