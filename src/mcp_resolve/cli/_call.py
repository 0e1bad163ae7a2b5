"""`mcp-resolve call SERVER TOOL key=value ...`: call one tool from the shell, answering its questions here.

Each `key=value` is read against the tool's input schema: a string parameter takes the text as
it is, a number or boolean is parsed as one, an object or array as JSON. A key the schema does
not have is sent anyway, with a note: the server decides what to do with it (mcp-resolve ignores
it, which is how the README shows that a resolved amount cannot be set by the caller). The
result prints its structured content as JSON when it has some (a wrapped `{"result": value}` as
the value itself), else its text; a failed tool
prints its message on stderr and exits with status 1. `--json` prints the whole result.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from ._connect import Connection
from ._list import listing_deadline
from ._target import CLIError
from ._terminal import Terminal, console, pretty, safe

__all__ = ["call_tool", "parse_arguments"]

TRUE = {"true", "yes", "y", "1", "on"}
FALSE = {"false", "no", "n", "0", "off"}


def _as(text: str, kind: str) -> Any:
    if kind == "string":
        return text
    if kind == "integer":
        return int(text)
    if kind == "number":
        number = float(text)
        if not math.isfinite(number):  # nan and inf are not JSON numbers
            raise ValueError("not a finite number")
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if kind == "boolean":
        if text.lower() in TRUE:
            return True
        if text.lower() in FALSE:
            return False
        raise ValueError("not a boolean")
    if kind == "null":
        if text != "null":
            raise ValueError("not null")
        return None
    value = json.loads(text)  # object, array
    expected = {"object": dict, "array": list}.get(kind)
    if expected is not None and not isinstance(value, expected):
        raise ValueError(f"not a JSON {kind}")
    return value


MAX_REF_DEPTH = 32
"""How many `$ref`s deep a parameter's schema is followed (a recursive model stops there)."""


def _resolve(spec: dict[str, Any], root: dict[str, Any]) -> dict[str, Any] | None:
    """The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`) points at, else None."""
    ref = spec.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def _kinds(spec: dict[str, Any], root: dict[str, Any] | None = None, depth: int = 0) -> list[str]:
    """The JSON types `spec` allows; `any` for a branch that says none (JSON when it parses, else text)."""
    if depth > MAX_REF_DEPTH:
        return ["any"]
    if "$ref" in spec:
        target = _resolve(spec, root or {})
        return ["any"] if target is None else _kinds(target, root, depth + 1)
    kind = spec.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    if isinstance(kind, str):
        return [kind]
    kinds: list[str] = []
    branches = [*spec.get("anyOf", []), *spec.get("oneOf", []), *spec.get("allOf", [])]
    for option in branches:
        found = _kinds(option, root, depth + 1) if isinstance(option, dict) else []
        kinds.extend(found or ["any"])  # a branch that says no type takes anything
    if "enum" in spec:
        names = {str: "string", bool: "boolean", int: "integer", float: "number"}
        kinds.extend(sorted({names.get(type(value), "string") for value in spec["enum"]}))
    if not kinds and branches:
        kinds.append("any")
    return kinds


def _as_any(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_value(name: str, text: str, spec: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """`text` typed by the schema of one parameter; CLIError says which parameter and why.

    `root` is the whole input schema, where `$ref`s point (`$defs`).
    """
    kinds = _kinds(spec, root)
    if not kinds:  # no type said: JSON when it parses, else the text
        return _as_any(text)
    # Most specific first, so `1` for integer|string is a number and `abc` falls through to the text.
    order = ["null", "boolean", "integer", "number", "object", "array", "string", "any"]
    for kind in sorted(set(kinds), key=lambda k: order.index(k) if k in order else len(order)):
        if kind == "any":
            return _as_any(text)
        try:
            value = _as(text, kind)
        except ValueError:
            continue
        if kind in ("integer", "number") and "string" in kinds and json.dumps(value) != text:
            continue  # `007` or `1e3` for int|str: the number would change what was typed
        return value
    raise CLIError(f"{name}={text}: expected {' or '.join(kinds)}")


def parse_arguments(tool: dict[str, Any], words: list[str]) -> tuple[dict[str, Any], list[str]]:
    """`key=value` words as the tool's arguments, and notes about keys its schema does not have."""
    schema = tool.get("inputSchema", {})
    properties: dict[str, Any] = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    notes: list[str] = []
    for word in words:
        key, sep, text = word.partition("=")
        if not sep or not key:
            raise CLIError(f"arguments are key=value, got {word!r}")
        if key in properties:
            arguments[key] = parse_value(key, text, properties[key], schema)
            continue
        arguments[key] = parse_value(key, text, {})
        takes = ", ".join(properties) or "no arguments"
        notes.append(f"note: {tool['name']} has no parameter {key!r} (it takes {takes}); sent anyway")
    missing = [name for name in schema.get("required", []) if name not in arguments]
    if missing:
        raise CLIError(f"{tool['name']} needs {', '.join(f'{name}=...' for name in missing)}")
    return arguments, notes


async def call_tool(
    connection: Connection, terminal: Terminal, tool_name: str, words: list[str], *, as_json: bool
) -> int:
    errors = console(stderr=True)
    async with connection.client(terminal) as client:
        with listing_deadline(connection.timeout):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        if tool_name not in tools:
            raise CLIError(f"no tool {tool_name!r} (there are: {safe(', '.join(tools) or 'none')})")
        definition = tools[tool_name].model_dump(by_alias=True, exclude_none=True, mode="json")
        arguments, notes = parse_arguments(definition, words)
        for note in notes:
            errors.print(safe(note), markup=False)
        result = await client.call_tool(tool_name, arguments)
    dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    if as_json:
        sys.stdout.write(pretty(dumped, ascii_only=sys.stdout.isatty()) + "\n")
        return 1 if result.is_error else 0
    texts = [block.get("text", "") for block in dumped.get("content", []) if block.get("type") == "text"]
    if result.is_error:
        message = "\n".join(texts)
        errors.print(
            f"{safe(tool_name)} failed: "
            + (safe(message, multiline=True) if sys.stderr.isatty() else message),
            markup=False,
        )
        return 1
    structured = result.structured_content
    if isinstance(structured, dict) and list(structured) == ["result"]:
        structured = structured["result"]  # a value that is not an object travels wrapped: unwrap it
        if isinstance(structured, str):
            print(_shown(structured))
            return 0
    if structured is not None:
        _print_json(structured)
        return 0
    for block in dumped.get("content", []):
        if block.get("type") == "text":
            print(_shown(block["text"]))
        else:
            size = len(block.get("data", "")) * 3 // 4
            print(
                _shown(f"<{block.get('type')} {block.get('mimeType', '')} {size} bytes>".replace("  ", " "))
            )
    return 0


def _shown(text: str) -> str:
    """What the server sent, for stdout: control characters escaped at a terminal, as sent into a pipe."""
    return safe(text, multiline=True) if sys.stdout.isatty() else text


def _print_json(value: Any) -> None:
    """Coloured on a terminal, plain otherwise (so it pipes into `jq`)."""
    if sys.stdout.isatty():
        console().print_json(json.dumps(value))
    else:
        sys.stdout.write(pretty(value) + "\n")
