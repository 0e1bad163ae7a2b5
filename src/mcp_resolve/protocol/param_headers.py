"""Tool arguments mirrored into `Mcp-Param-{Name}` HTTP headers (2026-07-28, SEP-2243).

A tool's input schema may mark a property `"x-mcp-header": "Name"`; on the
modern HTTP wire the client then repeats that argument's value in a header,
so proxies can route on it without parsing bodies, and the server checks the
header against the body so the two cannot disagree. Both sides live here
because they must agree on every byte: which declarations are valid, how a
value is encoded, and how a received header is decoded.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "HEADER_PREFIX",
    "InvalidHeaderDeclaration",
    "check_param_headers",
    "decode_header_value",
    "encode_header_value",
    "header_declarations",
    "param_headers",
]

HEADER_PREFIX = "Mcp-Param-"
_SENTINEL_START, _SENTINEL_END = "=?base64?", "?="
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SAFE_VALUE = re.compile(r"[\x20-\x7e]*")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_PRIMITIVES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1

Path = tuple[str, ...]


class InvalidHeaderDeclaration(ValueError):
    """An `x-mcp-header` annotation the spec forbids; the tool must not be offered (server) or used (client)."""


def header_declarations(input_schema: Mapping[str, Any]) -> dict[Path, str]:
    """Every `x-mcp-header` in the schema, as property path -> header name.

    Raises InvalidHeaderDeclaration for an empty or non-token name, a name
    used twice (case-insensitively), a non-primitive property, or an
    annotation not reachable through `properties` alone.
    """
    found: dict[Path, str] = {}
    _collect(input_schema, (), found, reachable=True)
    seen: dict[str, Path] = {}
    for path, name in found.items():
        other = seen.setdefault(name.lower(), path)
        if other != path:
            raise InvalidHeaderDeclaration(
                f"x-mcp-header {name!r} on {'.'.join(path)} repeats the one on {'.'.join(other)}"
            )
    return found


def _collect(schema: Any, path: Path, found: dict[Path, str], *, reachable: bool) -> None:
    if isinstance(schema, list):
        for item in schema:
            _collect(item, path, found, reachable=False)
        return
    if not isinstance(schema, Mapping):
        return
    if "x-mcp-header" in schema:
        name = schema["x-mcp-header"]
        where = ".".join(path) or "(root)"
        if not reachable or not path:
            raise InvalidHeaderDeclaration(
                f"x-mcp-header on {where} is not reachable through 'properties' alone"
            )
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise InvalidHeaderDeclaration(
                f"x-mcp-header {name!r} on {where} is not a valid HTTP header name"
            )
        if schema.get("type") not in _PRIMITIVES:
            raise InvalidHeaderDeclaration(
                f"x-mcp-header {name!r} on {where} needs a string, integer or boolean property, "
                f"not {schema.get('type', 'an untyped one')!r}"
            )
        found[path] = name
    for key, value in schema.items():
        if key == "properties" and isinstance(value, Mapping):
            for prop, sub in value.items():
                _collect(sub, (*path, str(prop)), found, reachable=reachable)
        elif key != "x-mcp-header" and isinstance(value, (Mapping, list)):
            _collect(value, path, found, reachable=False)


def encode_header_value(value: str | int | bool) -> str:
    """A value as its header text: plain when it is safe ASCII, else `=?base64?...?=` of its UTF-8."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    plain = (
        _SAFE_VALUE.fullmatch(text) is not None
        and text == text.strip(" \t")
        and not (text.startswith(_SENTINEL_START) and text.endswith(_SENTINEL_END))
    )
    if plain:
        return text
    return f"{_SENTINEL_START}{base64.b64encode(text.encode()).decode()}{_SENTINEL_END}"


def decode_header_value(raw: str) -> str:
    """The text a header carries; raises ValueError for a sentinel whose Base64 is malformed."""
    raw = raw.strip(" \t")
    if len(raw) >= len(_SENTINEL_START) + len(_SENTINEL_END) and (
        raw.startswith(_SENTINEL_START) and raw.endswith(_SENTINEL_END)
    ):
        encoded = raw[len(_SENTINEL_START) : -len(_SENTINEL_END)]
        if not _BASE64.fullmatch(encoded):
            raise ValueError("malformed Base64 in a =?base64?...?= header value")
        try:
            return base64.b64decode(encoded, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("malformed Base64 in a =?base64?...?= header value") from None
    return raw


def _value_at(arguments: Mapping[str, Any], path: Path) -> Any:
    value: Any = arguments
    for step in path:
        if not isinstance(value, Mapping) or step not in value:
            return None
        value = value[step]
    return value


def param_headers(declarations: Mapping[Path, str], arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """The `Mcp-Param-*` headers a client sends for these arguments (absent and null values send none)."""
    headers: dict[str, str] = {}
    for path, name in declarations.items():
        value = _value_at(arguments or {}, path)
        if isinstance(value, (str, int, bool)) and not isinstance(value, float):
            headers[HEADER_PREFIX + name] = encode_header_value(value)
    return headers


def check_param_headers(
    declarations: Mapping[Path, str], arguments: Mapping[str, Any] | None, headers: Mapping[str, str]
) -> None:
    """Raise ValueError naming the first `Mcp-Param-*` header that is missing, malformed or disagrees with the body.

    `headers` must be keyed by lower-case names (as HTTP frameworks give them).
    """
    for path, name in declarations.items():
        value = _value_at(arguments or {}, path)
        raw = headers.get((HEADER_PREFIX + name).lower())
        if value is None:
            continue
        if raw is None:
            raise ValueError(f"header {HEADER_PREFIX}{name} is missing but the body sets {'.'.join(path)}")
        try:
            text = decode_header_value(raw)
        except ValueError as exc:
            raise ValueError(f"header {HEADER_PREFIX}{name}: {exc}") from None
        if not _same(value, text):
            raise ValueError(
                f"header {HEADER_PREFIX}{name} does not match the body value of {'.'.join(path)}"
            )


def _same(value: Any, text: str) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            number = float(text)
        except ValueError:
            return False
        return abs(number) <= _MAX_SAFE_INTEGER and number == value
    return isinstance(value, str) and text == value
