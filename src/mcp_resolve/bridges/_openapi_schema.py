"""OpenAPI schemas as the JSON Schemas MCP tools carry: references kept as `$defs`, never expanded.

A `$ref` is looked up with `referencing` (python-jsonschema's resolver: JSON
Pointer escapes, 2020-12 base URIs and anchors are its job, not ours). Each
referenced schema is copied once into the tool's `$defs` and every reference
to it points there, so a recursive schema (a tree node that holds nodes)
stays finite: a reference met again is a pointer, not another expansion.

A 3.1 document's schemas are JSON Schema 2020-12 and pass unchanged apart
from their references. A 3.0 document's dialect differs in a few words:
`nullable` becomes a `null` type, the boolean `exclusiveMinimum` /
`exclusiveMaximum` become numbers, `example` becomes `examples`.

Every walk is bounded (depth, nodes, `$defs`), and an enum longer than
`MAX_ENUM` keeps its type but loses its list: the upstream API still checks
the value, and a schema listing 100 000 values would cost every `tools/list`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT4, DRAFT202012

from .openapi import OpenAPIError

__all__ = ["MAX_DEPTH", "MAX_ENUM", "MAX_NODES", "Document", "SchemaCollector"]

MAX_DEPTH = 128
"""Nesting of one tool's schema (through references): deeper is refused."""
MAX_NODES = 100_000
"""Schema objects walked for one tool: more is refused."""
MAX_DEFS = 2_000
"""Distinct referenced schemas in one tool's `$defs`."""
MAX_ENUM = 500
"""An enum with more values keeps its type and drops the list."""
_MAX_REF_HOPS = 32

_BASE_URI = "urn:mcp-resolve:openapi"
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "additionalItems",
        "contentSchema",
    }
)
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_OPENAPI_ONLY = frozenset({"discriminator", "xml", "externalDocs"})


class Document:
    """One OpenAPI 3.x description and the resolver its references are looked up with."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        if not isinstance(spec, Mapping):
            raise OpenAPIError(
                f"an OpenAPI description is a mapping (a parsed JSON/YAML document), not {type(spec).__name__}"
            )
        version = spec.get("openapi")
        if not isinstance(version, str) or not version.startswith("3."):
            found = f"swagger {spec['swagger']}" if "swagger" in spec else repr(version)
            raise OpenAPIError(f"only OpenAPI 3.x descriptions are supported (found {found})")
        self.spec = spec
        self.is_31 = not version.startswith("3.0")
        """3.1 and later: schemas are JSON Schema 2020-12 and pass unchanged."""
        dialect = DRAFT202012 if self.is_31 else DRAFT4
        resource = dialect.create_resource(spec)
        self._resolver = Registry().with_resource(_BASE_URI, resource).resolver(base_uri=_BASE_URI)

    def lookup(self, ref: Any) -> Any:
        """What a local reference (`#/components/...`) points at; others are refused."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise OpenAPIError(
                f"reference {str(ref)[:200]!r} is not local to the document: bundle the description "
                "into one document first (nothing is fetched)"
            )
        try:
            return self._resolver.lookup(ref).contents
        except Unresolvable:
            raise OpenAPIError(f"reference {ref[:200]!r} points at nothing in the document") from None

    def deref(self, value: Any) -> Any:
        """An OpenAPI object (parameter, request body, response, schema) with its `$ref` chain followed."""
        for _ in range(_MAX_REF_HOPS):
            if not (isinstance(value, Mapping) and "$ref" in value):
                return value
            value = self.lookup(value["$ref"])
        raise OpenAPIError(f"a chain of more than {_MAX_REF_HOPS} references ($ref to $ref)")


class SchemaCollector:
    """Converts the schemas of one tool, gathering what they reference into one `$defs`."""

    def __init__(self, document: Document, where: str) -> None:
        self.document = document
        self.where = where
        """The operation, for error messages."""
        self.defs: dict[str, Any] = {}
        self._names: dict[str, str] = {}
        self._nodes = 0

    def convert(self, schema: Any, depth: int = 0) -> Any:
        """`schema` in the served dialect, its references pointing into `self.defs`."""
        if depth > MAX_DEPTH:
            raise OpenAPIError(f"{self.where}: schema nested deeper than {MAX_DEPTH} levels")
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, Mapping):
            return {}
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise OpenAPIError(f"{self.where}: schema larger than {MAX_NODES} nodes")
        if "$ref" in schema:
            pointer = {"$ref": f"#/$defs/{self._define(schema['$ref'], depth)}"}
            if not self.document.is_31:
                return pointer  # 3.0: a reference's siblings are ignored
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return {**pointer, **self._convert_keywords(rest, depth)} if rest else pointer
        return self._convert_keywords(schema, depth)

    def root(self, schema: Any) -> dict[str, Any]:
        """A top-level schema: a reference at the top is inlined (MCP wants `type` at the root)."""
        target = self.document.deref(schema)
        converted = self.convert(target)
        return converted if isinstance(converted, dict) else {}

    def with_defs(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self.defs:
            schema["$defs"] = self.defs
        return schema

    def _define(self, ref: Any, depth: int) -> str:
        key = str(ref)
        name = self._names.get(key)
        if name is not None:
            return name
        if len(self.defs) >= MAX_DEFS:
            raise OpenAPIError(f"{self.where}: more than {MAX_DEFS} referenced schemas")
        name = self._def_name(key)
        self._names[key] = name
        self.defs[name] = {}  # placeholder: a reference back to it is a pointer, not a loop
        self.defs[name] = self.convert(self.document.lookup(ref), depth + 1)
        return name

    def _def_name(self, ref: str) -> str:
        base = ref.rsplit("/", 1)[-1] if ref.startswith("#/components/schemas/") else ref.lstrip("#/")
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", base.replace("~1", "/").replace("~0", "~")) or "schema"
        name, n = base, 2
        while name in self.defs:
            name, n = f"{base}_{n}", n + 1
        return name

    def _convert_keywords(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {k: self.convert(v, depth + 1) for k, v in value.items()}
            elif key in _SCHEMA_ONE and isinstance(value, (Mapping, bool)):
                out[key] = self.convert(value, depth + 1)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.convert(v, depth + 1) for v in value]
            elif (
                key == "enum" and isinstance(value, list) and len(value) > MAX_ENUM
            ) or key in _OPENAPI_ONLY:
                continue
            else:
                out[key] = value
        if not self.document.is_31:
            _from_30(out)
        return out


def _from_30(schema: dict[str, Any]) -> None:
    """OpenAPI 3.0's schema words in JSON Schema 2020-12, in place."""
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(bound)
        if isinstance(flag, bool):
            if flag and limit in schema:
                schema[bound] = schema.pop(limit)
            else:
                del schema[bound]
    if "example" in schema:
        schema.setdefault("examples", [schema.pop("example")])
    if schema.pop("nullable", False) is True:
        kind = schema.get("type")
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
            if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
                schema["enum"] = [*schema["enum"], None]
        elif kind is None:
            inner = dict(schema)
            schema.clear()
            schema["anyOf"] = [inner, {"type": "null"}]
