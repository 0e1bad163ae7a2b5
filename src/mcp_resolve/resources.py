"""Static resources and URI-template resources.

A template's variables are the function's model-facing arguments; like a
tool, a template function may also take the Context and resolved parameters,
so reading a resource can ask the person a question on either era.
"""

from __future__ import annotations

import base64
import inspect
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import pydantic_core
from mcp_types import Annotations, BlobResourceContents, InputRequiredResult, TextResourceContents
from pydantic import BaseModel

from .context import Context
from .errors import InvalidSignature
from .signature import HandlerSignature, Overrides

__all__ = ["Resource", "ResourceTemplate"]

_VARIABLE = re.compile(r"{(\w+)}")


def _contents(uri: str, mime_type: str | None, value: Any) -> list[dict[str, Any]]:
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [value.model_dump(by_alias=True, exclude_none=True, mode="json")]
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value)
    ):
        return [v.model_dump(by_alias=True, exclude_none=True, mode="json") for v in value]
    entry: dict[str, Any] = {"uri": uri}
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
    entry["text"] = pydantic_core.to_json(value, fallback=str).decode()
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
    ) -> None:
        """Built by `@mcp.resource`, or by hand for `mcp.add_resource` (which binds the server's overrides)."""
        self.fn = fn
        self.uri = uri
        self.name = name or getattr(fn, "__name__", uri)
        self.title = title
        self.description = description if description is not None else inspect.getdoc(fn)
        self.mime_type = mime_type
        self.annotations = (
            Annotations.model_validate(annotations) if isinstance(annotations, dict) else annotations
        )
        self.meta = meta
        self.signature = HandlerSignature.analyse(
            fn, str(self.name), Overrides() if overrides is None else overrides, model_suffix="Arguments"
        )

    def _describe(self, uri_key: str) -> dict[str, Any]:
        entry: dict[str, Any] = {uri_key: self.uri, "name": self.name}
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        if self.mime_type:
            entry["mimeType"] = self.mime_type
        if self.annotations is not None:
            entry["annotations"] = self.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
        if self.meta:
            entry["_meta"] = self.meta
        return entry

    async def _read(self, uri: str, arguments: dict[str, Any], context: Context) -> dict[str, Any]:
        value = await self.signature.run_detached(arguments, context, failing=f"reading resource {uri}")
        if isinstance(value, InputRequiredResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        return {"contents": _contents(uri, self.mime_type, value)}


class Resource(_ResourceBase):
    """A resource at one fixed URI."""

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(fn, **kwargs)
        if self.signature.argument_names:
            raise InvalidSignature(
                f"resource {self.uri}: a static resource takes no arguments "
                f"(got {', '.join(self.signature.argument_names)}); use a URI template like 'x://{{id}}'"
            )

    def definition(self) -> dict[str, Any]:
        return self._describe("uri")

    async def read(self, context: Context) -> dict[str, Any]:
        return await self._read(self.uri, {}, context)


class ResourceTemplate(_ResourceBase):
    """Resources whose URIs follow a template such as `orders://{order_id}`."""

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(fn, **kwargs)
        variables = _VARIABLE.findall(self.uri)
        if set(variables) != set(self.signature.argument_names):
            raise InvalidSignature(
                f"resource template {self.uri}: URI variables {sorted(variables)} must match the function's "
                f"arguments {sorted(self.signature.argument_names)}"
            )
        pattern = ""
        for piece in re.split(r"({\w+})", self.uri):
            match = _VARIABLE.fullmatch(piece)
            pattern += f"(?P<{match.group(1)}>[^/]+)" if match else re.escape(piece)
        self.pattern = re.compile(pattern)

    def definition(self) -> dict[str, Any]:
        return self._describe("uriTemplate")

    def match(self, uri: str) -> dict[str, str] | None:
        found = self.pattern.fullmatch(uri)
        return {k: unquote(v) for k, v in found.groupdict().items()} if found else None

    async def read(self, uri: str, variables: dict[str, str], context: Context) -> dict[str, Any]:
        return await self._read(uri, variables, context)
