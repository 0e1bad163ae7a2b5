"""An HTTP API described by OpenAPI 3.x, served as tools, resources and resource templates.

`openapi_components(spec, client)` turns each operation into a bridged tool
(or, by a `RouteMap`, a resource, a template, or nothing); the tool's call
sends the arguments with `client`, an `httpx.AsyncClient` whose base URL,
headers and auth are the upstream's. `MCPServer.from_openapi` and
`MCPServer.from_fastapi` build a server from them.

Arguments: path, query, header and cookie parameters keep their names; a
JSON or form body's properties are flattened beside them (the body of
another shape is one `body` argument). When a parameter and a body property
share a name the body property keeps it and the parameter becomes
`name__path` / `name__query` / `name__header` / `name__cookie`.
`hide={"customer_id": Resolve(current_customer)}` takes an argument out of
every tool that has it and fills it from the resolver graph: every argument
sent under that wire name, in any location (a renamed `customer_id__path`
too; header names in any case).

References are resolved with `referencing` (the `openapi` extra), imported
when a description is converted.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx

from ..errors import InvalidSignature, ResourceError, ToolError
from ..resolve import Resolve
from ..resources import Resource, ResourceTemplate
from ..tools import Tool
from ._openapi_call import capped_asgi_app

if TYPE_CHECKING:
    from ..context import Context
    from ._openapi_call import Argument, CallLimits, Operation
    from ._openapi_schema import Document

__all__ = [
    "DEFAULT_ROUTE_MAPS",
    "MCPType",
    "OpenAPIError",
    "RouteMap",
    "capped_asgi_app",
    "client_for",
    "openapi_components",
]

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
_NAME_LIMIT = 64
_SUCCESS = ("200", "201", "202", "203", "2XX", "2xx")
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_NEVER_FORWARDED = frozenset({"authorization", "cookie", "proxy-authorization", "host", "content-length"})


class OpenAPIError(ValueError):
    """The OpenAPI description cannot become tools (the message names the operation and why)."""


class MCPType(enum.Enum):
    """What an operation becomes."""

    TOOL = "tool"
    RESOURCE = "resource"
    """A resource at `resource://{name}` (a GET without path parameters)."""
    RESOURCE_TEMPLATE = "resource_template"
    """A template `resource://{name}/{param}/...` over the path parameters."""
    EXCLUDE = "exclude"


@dataclass(frozen=True)
class RouteMap:
    """The first map whose methods, path pattern and tags all match an operation decides its `mcp_type`.

    `methods`: `"*"` or upper-case methods; `pattern`: a regular expression
    searched in the path template (`/pets/{id}`); `tags`: the operation must
    carry all of them. No map matching: a tool.
    """

    mcp_type: MCPType
    methods: Collection[str] | Literal["*"] = "*"
    pattern: str | re.Pattern[str] = r".*"
    tags: Collection[str] = field(default_factory=frozenset)

    def matches(self, method: str, path: str, tags: Collection[str]) -> bool:
        if self.methods != "*" and method.upper() not in {m.upper() for m in self.methods}:
            return False
        if not re.search(self.pattern, path):
            return False
        return set(self.tags) <= set(tags)


DEFAULT_ROUTE_MAPS: tuple[RouteMap, ...] = (RouteMap(MCPType.TOOL),)
"""Every operation a tool: a model can call a GET as easily as a POST, and most clients use tools only."""


@dataclass
class _Route:
    method: str
    path: str
    operation: Mapping[str, Any]
    path_item: Mapping[str, Any]

    @property
    def tags(self) -> list[str]:
        return [t for t in self.operation.get("tags") or () if isinstance(t, str)]

    @property
    def label(self) -> str:
        return f"{self.method.upper()} {self.path}"


def openapi_components(
    spec: Mapping[str, Any],
    client: httpx.AsyncClient,
    *,
    route_maps: Sequence[RouteMap] | None = None,
    hide: Mapping[str, Resolve] | None = None,
    names: Mapping[str, str] | None = None,
    forward_headers: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> list[Tool | Resource | ResourceTemplate]:
    """The tools, resources and templates of an OpenAPI 3.x description, calling the API with `client`.

    `names` maps an operationId to the name to serve it under. `hide` maps an
    argument name to `Resolve(fn)` for every tool that has that argument (a
    name no tool has is refused: it is a typo). `forward_headers`: incoming
    HTTP request headers copied upstream (`authorization` and `cookie` never:
    the caller's token is for this server, not the API). `timeout` bounds each
    call as a whole; a response larger than `max_response_bytes` is an error.
    """
    from ._openapi_call import CallLimits

    try:
        from ._openapi_schema import Document
    except ImportError as exc:  # referencing absent
        raise ImportError(
            f"OpenAPI bridges need the 'openapi' extra: pip install 'mcp-resolve[openapi]' ({exc.name} is missing)"
        ) from None

    forwarded = tuple(h.lower() for h in forward_headers)
    refused = sorted(set(forwarded) & _NEVER_FORWARDED)
    if refused:
        raise ValueError(
            f"forward_headers: {', '.join(refused)} is never forwarded (the API has its own credentials)"
        )
    if not 0 < timeout < float("inf") or max_response_bytes < 1:
        raise ValueError(
            "from_openapi: timeout and max_response_bytes must be positive and finite (every call is bounded)"
        )
    limits = CallLimits(timeout=timeout, max_response_bytes=max_response_bytes, forward_headers=forwarded)
    document = Document(spec)
    return _build(
        document, client, tuple(route_maps or DEFAULT_ROUTE_MAPS), dict(hide or {}), dict(names or {}), limits
    )


def _routes(document: Document) -> list[_Route]:
    paths = document.spec.get("paths") or {}
    if not isinstance(paths, Mapping):
        raise OpenAPIError("'paths' must be an object")
    routes = []
    for path, item in paths.items():
        item = document.deref(item)
        if not isinstance(item, Mapping):
            continue
        for method in HTTP_METHODS:
            operation = item.get(method)
            if isinstance(operation, Mapping):
                routes.append(_Route(method, str(path), operation, item))
    return routes


def _build(
    document: Document,
    client: httpx.AsyncClient,
    route_maps: tuple[RouteMap, ...],
    hide: dict[str, Resolve],
    names: dict[str, str],
    limits: CallLimits,
) -> list[Tool | Resource | ResourceTemplate]:
    components: list[Tool | Resource | ResourceTemplate] = []
    taken: set[str] = set()
    used_hidden: set[str] = set()
    for route in _routes(document):
        kind = next(
            (m.mcp_type for m in route_maps if m.matches(route.method, route.path, route.tags)), MCPType.TOOL
        )
        if kind is MCPType.EXCLUDE:
            continue
        name = _unique(_component_name(route, names), taken)
        shape = _shape(document, route)
        if kind is MCPType.TOOL:
            hidden, used = _hidden_arguments(shape.operation, hide)
            used_hidden.update(used)
            components.append(_tool(name, route, shape, client, limits, hidden))
        else:
            components.append(_resource(name, route, shape, client, limits, kind))
    unused = sorted(set(hide) - used_hidden)
    if unused:
        raise InvalidSignature(
            f"from_openapi: hide names {', '.join(map(repr, unused))}, which no tool has as an argument"
        )
    return components


def _hidden_arguments(
    operation: Operation, hide: Mapping[str, Resolve]
) -> tuple[dict[str, Resolve], set[str]]:
    """Each argument a `hide` name covers, and the names that covered one.

    A name covers every argument it names or whose wire name it is, in every
    location: `customer_id` hides the body property and the path parameter
    renamed `customer_id__path` alike, so no copy stays for the model to set.
    Header names match whatever their case, as HTTP reads them.
    """
    headers = {key.lower(): key for key in hide}
    hidden: dict[str, Resolve] = {}
    used: set[str] = set()
    for argument, where in operation.arguments.items():
        key: str | None = None
        if argument in hide:
            key = argument
        elif where.wire in hide:
            key = where.wire
        elif where.location == "header":
            key = headers.get(where.wire.lower())
        if key is not None:
            hidden[argument] = hide[key]
            used.add(key)
    return hidden, used


def _component_name(route: _Route, names: Mapping[str, str]) -> str:
    operation_id = route.operation.get("operationId")
    if isinstance(operation_id, str) and operation_id in names:
        return names[operation_id]
    raw = (
        operation_id
        if isinstance(operation_id, str) and operation_id
        else f"{route.method}_{route.path.strip('/')}"
    )
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", raw).strip("_") or route.method
    return name[:_NAME_LIMIT]


def _unique(name: str, taken: set[str]) -> str:
    """Names that collide (after sanitising) get `_2`, `_3`... in document order."""
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = name[: _NAME_LIMIT - len(suffix)] + suffix, n + 1
    taken.add(candidate)
    return candidate


@dataclass
class _Shape:
    operation: Operation
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrapped: bool
    """The output schema wraps a non-object answer as `{"result": ...}`."""
    response_type: str
    description: str


def _parameters(document: Document, route: _Route) -> list[Mapping[str, Any]]:
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for source in (route.path_item.get("parameters") or (), route.operation.get("parameters") or ()):
        for raw in source:
            parameter = document.deref(raw)
            if isinstance(parameter, Mapping) and isinstance(parameter.get("name"), str):
                merged[(parameter["name"], str(parameter.get("in")))] = parameter
    return list(merged.values())


def _media(content: Any) -> tuple[str, Any] | None:
    """The media type to use from a `content` map: JSON first, then a form, then the first one."""
    if not isinstance(content, Mapping) or not content:
        return None
    kinds = [k for k in content if isinstance(k, str)]
    for kind in kinds:
        bare = kind.split(";", 1)[0].strip().lower()
        if bare == "application/json" or bare.endswith("+json"):
            return bare, content[kind]
    for kind in kinds:
        if kind.split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded":
            return "application/x-www-form-urlencoded", content[kind]
    return (kinds[0].split(";", 1)[0].strip().lower(), content[kinds[0]]) if kinds else None


def _shape(document: Document, route: _Route) -> _Shape:
    from ._openapi_call import Argument, Operation
    from ._openapi_schema import SchemaCollector

    collector = SchemaCollector(document, route.label)
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: dict[str, Argument] = {}

    body_type: str | None = None
    body_properties: dict[str, Any] = {}
    body_required: list[str] = []
    whole_body: Any = None
    body_is_required = False
    request_body = document.deref(route.operation.get("requestBody"))
    if isinstance(request_body, Mapping):
        chosen = _media(request_body.get("content"))
        if chosen is not None:
            body_type, media = chosen
            body_is_required = bool(request_body.get("required"))
            schema = document.deref(media.get("schema") if isinstance(media, Mapping) else None)
            flat = (
                isinstance(schema, Mapping)
                and isinstance(schema.get("properties"), Mapping)
                and schema.get("type", "object") == "object"
                and not any(k in schema for k in ("allOf", "anyOf", "oneOf"))
                and body_type in ("application/json", "application/x-www-form-urlencoded")
            )
            if flat:
                assert isinstance(schema, Mapping)
                body_properties = {str(k): collector.convert(v, 1) for k, v in schema["properties"].items()}
                body_required = [r for r in schema.get("required") or () if r in body_properties]
            else:
                whole_body = collector.convert(schema, 1) if schema is not None else {}
                if isinstance(request_body.get("description"), str) and isinstance(whole_body, dict):
                    whole_body.setdefault("description", request_body["description"])

    parameters = _parameters(document, route)
    names_seen = [
        str(p["name"])
        for p in parameters
        if not (p.get("in") == "header" and str(p["name"]).lower() in _IGNORED_HEADERS)
    ]
    for parameter in parameters:
        wire = str(parameter["name"])
        location = str(parameter.get("in"))
        if location not in ("path", "query", "header", "cookie"):
            continue
        if location == "header" and wire.lower() in _IGNORED_HEADERS:
            continue  # OpenAPI: such a definition "SHALL be ignored" (the client's own headers say them)
        clash = (
            wire in body_properties
            or names_seen.count(wire) > 1
            or (whole_body is not None and wire == "body")
        )
        name = f"{wire}__{location}" if clash else wire
        schema_source = parameter.get("schema")
        if schema_source is None:
            media = _media(parameter.get("content"))
            schema_source = media[1].get("schema") if media and isinstance(media[1], Mapping) else None
        schema = collector.convert(schema_source, 1) if schema_source is not None else {"type": "string"}
        if isinstance(schema, dict) and isinstance(parameter.get("description"), str):
            schema = {**schema, "description": schema.get("description") or parameter["description"]}
        properties[name] = schema
        arguments[name] = Argument(location, wire)  # type: ignore[arg-type]
        if location == "path" or parameter.get("required"):
            required.append(name)
    for key, schema in body_properties.items():
        properties[key] = schema
        arguments[key] = Argument("body", key)
    if body_is_required:
        required.extend(body_required)
    if whole_body is not None:
        properties["body"] = whole_body
        arguments["body"] = Argument("whole-body", "body")
        if body_is_required:
            required.append("body")

    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = list(dict.fromkeys(required))
    output_schema, wrapped, response_type = _output(document, route)
    if collector.defs:
        input_schema["$defs"] = collector.defs
    summary = route.operation.get("summary")
    description = route.operation.get("description")
    texts = [t.strip() for t in (summary, description) if isinstance(t, str) and t.strip()]
    if len(texts) == 2 and texts[1].startswith(texts[0]):
        texts = texts[1:]
    return _Shape(
        operation=Operation(route.method.upper(), route.path, arguments, body_type, route.label),
        input_schema=input_schema,
        output_schema=output_schema,
        wrapped=wrapped,
        response_type=response_type,
        description="\n\n".join(texts),
    )


def _output(document: Document, route: _Route) -> tuple[dict[str, Any] | None, bool, str]:
    from ._openapi_schema import SchemaCollector

    responses = route.operation.get("responses")
    if not isinstance(responses, Mapping):
        return None, False, "application/json"
    code = next((c for c in _SUCCESS if c in responses), None)
    if code is None:
        return None, False, "application/json"
    response = document.deref(responses[code])
    chosen = _media(response.get("content")) if isinstance(response, Mapping) else None
    if chosen is None:
        return None, False, "application/json"
    kind, media = chosen
    raw = media.get("schema") if isinstance(media, Mapping) else None
    if raw is None or not (kind == "application/json" or kind.endswith("+json")):
        return None, False, kind
    collector = SchemaCollector(document, route.label)
    schema = collector.root(raw)
    if not schema or set(schema) <= {"title", "description"}:
        return None, False, kind  # any JSON at all: nothing to promise
    kind_of = schema.get("type")
    if kind_of == "object" or (kind_of is None and "properties" in schema and "anyOf" not in schema):
        schema.setdefault("type", "object")
        return collector.with_defs(schema), False, kind
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return collector.with_defs(wrapped), True, kind


def _tool(
    name: str,
    route: _Route,
    shape: _Shape,
    client: httpx.AsyncClient,
    limits: CallLimits,
    hidden: Mapping[str, Resolve],
) -> Tool:
    from ._openapi_call import send
    from ._tool import bridged_tool

    operation = shape.operation

    async def call(arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        response = await send(client, operation, arguments, context.headers, limits)
        text = response.text()
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": text}] if text else [],
            "isError": False,
        }
        if shape.output_schema is None:
            return result
        if not response.is_json:
            raise ToolError(
                f"{operation.label} answered {response.content_type or 'no content type'}, not JSON"
            )
        try:
            value = response.json()
        except ValueError:
            raise ToolError(f"{operation.label} answered a body that is not valid JSON") from None
        if shape.wrapped:
            result["structuredContent"] = {"result": value}
        elif isinstance(value, dict):
            result["structuredContent"] = value
        else:
            raise ToolError(
                f"{operation.label} answered {type(value).__name__}, not the object its schema describes"
            )
        return result

    deprecated = route.operation.get("deprecated") is True
    method = route.method.upper()
    annotations: dict[str, Any] = {}
    if method in ("GET", "HEAD", "OPTIONS"):
        annotations["readOnlyHint"] = True
    elif method in ("PUT", "DELETE"):
        annotations["idempotentHint"] = True
    if method == "DELETE":
        annotations["destructiveHint"] = True
    return bridged_tool(
        name,
        shape.input_schema,
        call,
        hide=hidden,
        description=shape.description or route.label,
        output_schema=shape.output_schema,
        annotations=annotations or None,
        meta={"deprecated": True} if deprecated else None,
    )


def _resource(
    name: str,
    route: _Route,
    shape: _Shape,
    client: httpx.AsyncClient,
    limits: CallLimits,
    kind: MCPType,
) -> Resource | ResourceTemplate:
    from ._openapi_call import send

    operation = shape.operation
    path_arguments = [arg for arg, where in operation.arguments.items() if where.location == "path"]
    variables = {re.sub(r"\W", "_", arg) or "p": arg for arg in path_arguments}
    if kind is MCPType.RESOURCE and variables:
        raise OpenAPIError(f"{route.label}: a resource takes no path parameters; map it to RESOURCE_TEMPLATE")
    if kind is MCPType.RESOURCE_TEMPLATE and not variables:
        kind = MCPType.RESOURCE

    async def read(**values: str) -> str:
        arguments = {variables[k]: v for k, v in values.items()}
        try:
            response = await send(client, operation, arguments, None, limits)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return response.text()

    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(v, inspect.Parameter.KEYWORD_ONLY, annotation=str) for v in variables]
    )
    read.__annotations__ = {**{v: str for v in variables}, "return": str}
    read.__name__ = name
    options: dict[str, Any] = {
        "name": name,
        "description": shape.description or route.label,
        "mime_type": shape.response_type,
    }
    if kind is MCPType.RESOURCE:
        return Resource(read, uri=f"resource://{name}", **options)
    uri = f"resource://{name}/" + "/".join("{" + v + "}" for v in variables)
    return ResourceTemplate(read, uri=uri, **options)


def client_for(spec: Mapping[str, Any]) -> httpx.AsyncClient:
    """A client on the description's first absolute `servers` URL (no credentials)."""
    servers = spec.get("servers") if isinstance(spec, Mapping) else None
    for server in servers or ():
        url = server.get("url") if isinstance(server, Mapping) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")) and "{" not in url:
            return httpx.AsyncClient(base_url=url)
    raise OpenAPIError(
        "the description names no absolute server URL: pass client=httpx.AsyncClient(base_url=...)"
    )
