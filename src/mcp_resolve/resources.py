"""Static resources and URI-template resources.

A template's variables are the function's model-facing arguments; like a
tool, a template function may also take the Context and resolved parameters,
so reading a resource can ask the person a question on either era. The
values a template extracts pass its `ResourceSecurity` checks before the
function runs (`_resource_security.py`).

A crash in a resource function becomes `UnexpectedResourceError` (its text
withheld from the client); `ResourceError` and `MCPError` pass as raised.
"""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pydantic_core
from mcp_types import Annotations, BlobResourceContents, Icon, InputRequiredResult, TextResourceContents
from pydantic import BaseModel

from ._resource_security import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from ._signature import ArgumentError, HandlerSignature, Overrides
from ._uri_template import UriTemplate
from .context import Context
from .errors import InvalidSignature, MCPError, ResourceError, UnexpectedResourceError

__all__ = [
    "BinaryResource",
    "DirectoryResource",
    "FileResource",
    "FunctionResource",
    "HttpResource",
    "Resource",
    "ResourceTemplate",
    "TextResource",
    "UnsafeParameter",
]


def _contents(
    uri: str, mime_type: str | None, value: Any, meta: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The `contents` of a read. Each item carries the resource's `_meta` (where hosts read an MCP
    App's `_meta.ui`, as the official SDK has it), unless the function built the item with a
    `_meta` of its own; a value becomes one item."""
    built: list[TextResourceContents | BlobResourceContents] | None = None
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        built = [value]
    elif (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value)
    ):
        built = list(value)
    if built is not None:
        items = [v.model_dump(by_alias=True, exclude_none=True, mode="json") for v in built]
        if meta:
            for item in items:
                item.setdefault("_meta", dict(meta))
        return items
    entry: dict[str, Any] = {"uri": uri}
    if meta:
        entry["_meta"] = dict(meta)
    if isinstance(value, (bytes, bytearray)):
        entry["mimeType"] = mime_type or "application/octet-stream"
        entry["blob"] = base64.b64encode(value).decode()
        return [entry]
    if isinstance(value, str):
        entry["mimeType"] = mime_type or "text/plain"
        entry["text"] = value
        return [entry]
    entry["mimeType"] = mime_type or "application/json"
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    entry["text"] = pydantic_core.to_json(value, fallback=str, indent=2).decode()  # indented, as the official
    return [entry]


class _ResourceBase:
    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        uri: str,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        overrides: Overrides | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
    ) -> None:
        """Built by `@mcp.resource`, or by hand for `mcp.add_resource` (which binds the server's overrides)."""
        self.fn = fn
        self.uri = uri
        self.name = name or getattr(fn, "__name__", uri)
        self.title = title
        self.description: str | None = description or inspect.getdoc(fn) or ""
        """Sent even when empty, as the official SDK does (None, for a ready-made kind without one: not sent)."""
        self.mime_type = mime_type
        self.annotations = (
            Annotations.model_validate(annotations) if isinstance(annotations, dict) else annotations
        )
        self.meta = meta
        self.icons = [Icon.model_validate(icon) for icon in icons] if icons else None
        self.signature = HandlerSignature.analyse(
            fn, str(self.name), Overrides() if overrides is None else overrides, model_suffix="Arguments"
        )

    def _describe(self, uri_key: str) -> dict[str, Any]:
        entry: dict[str, Any] = {uri_key: self.uri, "name": self.name}
        if self.title:
            entry["title"] = self.title
        if self.description is not None:
            entry["description"] = self.description
        entry["mimeType"] = self.mime_type or "text/plain"  # the official's default, named or not
        if self.annotations is not None:
            entry["annotations"] = self.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
        if self.icons:
            entry["icons"] = [
                icon.model_dump(by_alias=True, exclude_none=True, mode="json") for icon in self.icons
            ]
        if self.meta:
            entry["_meta"] = self.meta
        return entry

    def use_overrides(self, overrides: Overrides) -> None:
        """Resolve through `overrides` from now on (a prebuilt resource joining a server)."""
        self.signature.use_overrides(overrides)

    _crash_message = "Error reading resource {uri}"

    async def _read(self, uri: str, arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        try:
            value = await self.signature.run_detached(arguments, context, failing=f"reading resource {uri}")
        except (MCPError, ResourceError, ArgumentError):
            raise
        except Exception as exc:
            raise UnexpectedResourceError(self._crash_message.format(uri=uri)) from exc
        if isinstance(value, InputRequiredResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        return {"contents": _contents(uri, self.mime_type, value, self.meta)}


_OWN_KEYWORDS = frozenset(
    {"uri", "name", "title", "description", "mime_type", "icons", "annotations", "meta", "overrides"}
)


class Resource(_ResourceBase):
    """A resource at one fixed URI: served by a function, or by a subclass's `read()`.

    As the official SDK's base, a subclass overriding `async def read(self)`
    (text, or bytes sent as a base64 blob) is built with keywords only
    (`MyResource(uri=..., name=..., ...)`, its own annotated fields too) and
    served through `mcp.add_resource(...)`. It is a plain class, not a
    pydantic model: its own fields are set, not validated.
    """

    def __init__(self, fn: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        if fn is None:
            super().__init__(self._subclass_reader(kwargs), **kwargs)
            self.description = kwargs.get("description")  # left out when None, as by the official
            return
        super().__init__(fn, **kwargs)
        if self.signature.argument_names:
            raise InvalidSignature(
                f"resource {self.uri}: a static resource takes no arguments "
                f"(got {', '.join(self.signature.argument_names)}); use a URI template like 'x://{{id}}'"
            )

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        uri: str,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        annotations: Annotations | dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Resource:
        """A resource built before any server, for `MCPServer(resources=[...])` or `mcp.add_resource()`.

        The official SDK's `FunctionResource.from_function`; the server it
        joins supplies its `dependency_overrides`.
        """
        return cls(
            fn,
            uri=uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            meta=meta,
            overrides=Overrides(),
            icons=icons,
        )

    def _subclass_reader(self, kwargs: dict[str, Any]) -> Callable[..., Any]:
        """For a subclass built official-style: its `read()` as the function; its own fields are set
        and taken out of `kwargs`, which gets the official's defaults."""
        if type(self).read is Resource.read:
            raise TypeError(
                f"{type(self).__name__}: pass a function, or subclass Resource and override read()"
            )
        if "uri" not in kwargs:
            raise TypeError(f"{type(self).__name__} needs uri=")
        annotated = {name for cls in type(self).__mro__ for name in getattr(cls, "__annotations__", {})}
        for key in [k for k in kwargs if k not in _OWN_KEYWORDS]:
            if key not in annotated:
                raise TypeError(f"{type(self).__name__} got an unexpected keyword {key!r}")
            setattr(self, key, kwargs.pop(key))
        kwargs.setdefault("mime_type", "text/plain")
        kwargs["name"] = kwargs.get("name") or kwargs["uri"]
        kwargs.setdefault("overrides", Overrides())

        async def own_read() -> Any:
            return await self.read()

        return own_read

    def definition(self) -> dict[str, Any]:
        return self._describe("uri")

    async def read(self) -> Any:
        """The content: text, or bytes (sent as a base64 blob). A subclass overrides it, as the
        official SDK's abstract `read`; a function resource calls its function with no client."""
        result = await self.read_result(Context())
        contents = result.get("contents")
        if not contents:
            raise RuntimeError(f"resource {self.uri} asked for input: read it through a client")
        first = contents[0]
        return first["text"] if "text" in first else base64.b64decode(first["blob"])

    async def read_result(self, context: Context) -> dict[str, Any]:
        """The `resources/read` result (`{"contents": [...]}`) for `context`'s request."""
        return await self._read(self.uri, {}, context)


FunctionResource = Resource
"""The official SDK's name for a resource served by a function."""


class _ContentResource(Resource):
    """A resource whose content is not a function of yours: the base of the official SDK's ready-made kinds.

    Each kind is built with the official keywords (`uri`, `name`, `title`,
    `description`, `mime_type`, `icons`, `annotations`, `meta`, then its own)
    and served like any resource (`mcp.add_resource(...)`, `MCPServer(resources=[...])`).
    """

    def __init__(
        self,
        *,
        uri: str,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str = "text/plain",
        icons: Sequence[Icon | dict[str, Any]] | None = None,
        annotations: Annotations | dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            self.load,
            uri=uri,
            name=name or uri,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            meta=meta,
            overrides=Overrides(),
            icons=icons,
        )
        self.description = description  # not the docstring of `load`; left out when None, as by the official

    async def load(self) -> str | bytes:
        """The content: text, or bytes sent as a base64 blob."""
        raise NotImplementedError

    async def read(self) -> str | bytes:
        return await self.load()


class TextResource(_ContentResource):
    """A resource with fixed text (the official SDK's `TextResource`)."""

    def __init__(self, *, text: str, **fields: Any) -> None:
        self.text = text
        super().__init__(**fields)

    async def load(self) -> str:
        return self.text


class BinaryResource(_ContentResource):
    """A resource with fixed bytes, sent as a base64 blob (the official SDK's `BinaryResource`)."""

    def __init__(self, *, data: bytes, **fields: Any) -> None:
        self.data = data  # labelled `text/plain` unless `mime_type` says otherwise, as by the official
        super().__init__(**fields)

    async def load(self) -> bytes:
        return self.data


def _default_encoding(mime_type: str) -> str | None:
    """The official's rule: the `charset` the MIME type names, else `utf-8-sig` for text, else bytes."""
    essence, *parameters = (part.strip() for part in mime_type.split(";"))
    for parameter in parameters:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    textual = essence.startswith("text/") or essence.endswith(("/json", "+json", "/xml", "+xml"))
    return "utf-8-sig" if textual else None


_UNSET: Any = object()


class FileResource(_ContentResource):
    """A file read on every `resources/read` (the official SDK's `FileResource`).

    `path` must be absolute. The file is sent as text decoded with `encoding`,
    or as a blob when `encoding` is None; left out, it follows the MIME type
    (its `charset`, else `utf-8-sig` for `text/*`, JSON and XML, else bytes).
    """

    def __init__(self, *, path: str | Path, encoding: str | None = _UNSET, **fields: Any) -> None:
        self.path = Path(path)
        if not self.path.is_absolute():
            raise ValueError("Path must be absolute")
        super().__init__(**fields)
        self.encoding = _default_encoding(self.mime_type or "text/plain") if encoding is _UNSET else encoding
        if self.encoding is not None:
            try:
                b"x".decode(self.encoding)
            except LookupError as exc:  # an unknown codec fails now, not at the first read
                raise ValueError(str(exc)) from None
            except UnicodeError:
                pass

    async def load(self) -> str | bytes:
        if self.encoding is None:
            return await anyio.to_thread.run_sync(self.path.read_bytes)
        return await anyio.to_thread.run_sync(partial(self.path.read_text, encoding=self.encoding))


class DirectoryResource(_ContentResource):
    """A directory's file names as JSON, `{"files": [...]}` (the official SDK's `DirectoryResource`)."""

    def __init__(
        self, *, path: str | Path, recursive: bool = False, pattern: str | None = None, **fields: Any
    ) -> None:
        self.path = Path(path)
        if not self.path.is_absolute():
            raise ValueError("Path must be absolute")
        self.recursive = recursive
        self.pattern = pattern
        fields.setdefault("mime_type", "application/json")
        super().__init__(**fields)

    def list_files(self) -> list[Path]:
        """The files under `path` (recursively, matching `pattern`, when asked)."""
        if not self.path.is_dir():
            raise NotADirectoryError(f"Not a directory: {self.path}")
        found = (
            self.path.rglob(self.pattern or "*") if self.recursive else self.path.glob(self.pattern or "*")
        )
        return list(found)

    async def load(self) -> str:
        files = await anyio.to_thread.run_sync(self.list_files)
        names = [str(f.relative_to(self.path)) for f in files if f.is_file()]
        return json.dumps({"files": names}, indent=2)


class HttpResource(_ContentResource):
    """The body of a GET of `url`, fetched on every read (the official SDK's `HttpResource`).

    Sent as text (the response's charset) labelled `application/json` unless
    `mime_type` says otherwise, as by the official. Unlike it, the fetch has
    one overall deadline (`timeout` seconds, connecting and reading together)
    and a body cap (`max_bytes`); an error status, a timeout or a larger
    body is a crash of the read (`Error reading resource URI`, the detail in
    the log). Redirects are not followed.
    """

    def __init__(
        self, *, url: str, timeout: float = 30.0, max_bytes: int = 10 * 1024 * 1024, **fields: Any
    ) -> None:
        if timeout <= 0 or max_bytes <= 0:
            raise ValueError("timeout and max_bytes must be positive")
        self.url = url
        self.timeout = timeout
        self.max_bytes = max_bytes
        fields.setdefault("mime_type", "application/json")
        super().__init__(**fields)

    async def load(self) -> str:
        import httpx  # here: a server without an HttpResource never loads it

        body = bytearray()
        with anyio.fail_after(self.timeout):  # one deadline for the whole fetch
            async with (
                httpx.AsyncClient(timeout=self.timeout) as client,
                client.stream("GET", self.url) as response,
            ):
                response.raise_for_status()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > self.max_bytes:
                        raise ValueError(f"{self.url} answered more than {self.max_bytes} bytes")
                return bytes(body).decode(response.encoding or "utf-8", errors="replace")


class UnsafeParameter(ValueError):
    """A URI matched a template but a value it extracted failed the template's `ResourceSecurity`.

    Raised rather than reported as no match, so the search stops here and a
    later, laxer template cannot serve the URI. The server answers it as an
    unknown resource.
    """

    def __init__(self, template: str, parameter: str) -> None:
        super().__init__(
            f"parameter {parameter!r} of resource template {template} failed its security checks"
        )
        self.template = template
        self.parameter = parameter


class ResourceTemplate(_ResourceBase):
    """Resources whose URIs follow a template such as `orders://{order_id}`."""

    _crash_message = "Error creating resource from template {uri}"

    def __init__(
        self, fn: Callable[..., Any], *, security: ResourceSecurity = DEFAULT_RESOURCE_SECURITY, **kwargs: Any
    ) -> None:
        parsed = UriTemplate(kwargs["uri"])  # the template first: its faults are the ones to name
        super().__init__(fn, **kwargs)
        self.security = security
        """The checks every extracted value passes before the function runs."""
        self.parsed = parsed
        """The template's RFC 6570 reading (`_uri_template.py`): its variables and `match`."""
        variables = self.parsed.variables
        if set(variables) != set(self.signature.argument_names):
            raise InvalidSignature(
                f"resource template {self.uri}: URI variables {sorted(variables)} must match the function's "
                f"arguments {sorted(self.signature.argument_names)}"
            )

    def definition(self) -> dict[str, Any]:
        return self._describe("uriTemplate")

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """The decoded variables of `uri` (a list for an exploded `{/x*}`), or None when it does not match.

        Raises UnsafeParameter when it matches but a value fails `self.security`.
        """
        variables = self.parsed.match(uri)
        if variables is None:
            return None
        refused = self.security.validate(variables)
        if refused is not None:
            raise UnsafeParameter(self.uri, refused)
        return variables

    async def read(self, uri: str, variables: dict[str, str | list[str]], context: Context) -> dict[str, Any]:
        return await self._read(uri, variables, context)
