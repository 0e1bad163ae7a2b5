"""What the toolset hands back: pydantic-ai's MCP models (resources, prompts, capabilities) and `MCPError`.

They carry pydantic-ai's names and fields so code written against
`pydantic_ai.mcp` reads the same values here, but they are our own: that
module needs FastMCP installed, and this extra must not. Each model converts
from the `mcp_types` wire model our `Client` already returns (`from_mcp_sdk`,
as pydantic-ai names it: `mcp_types` is the official SDK's types package).
"""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types
from pydantic_ai import messages

from ..errors import MCPError as _ProtocolError

__all__ = [
    "BaseResource",
    "ContentBlock",
    "EmbeddedResource",
    "Icon",
    "MCPError",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptResult",
    "PromptRole",
    "Resource",
    "ResourceAnnotations",
    "ResourceLink",
    "ResourceTemplate",
    "ServerCapabilities",
]


class MCPError(_ProtocolError, RuntimeError):
    """The server answered with a JSON-RPC error: `MCPError(message, code, data)`, as pydantic-ai spells it.

    A subclass of `mcp_resolve.MCPError` (whose constructor takes the code
    first), so an `except mcp_resolve.MCPError` written for our Client still
    catches what the toolset raises.
    """

    data: dict[str, Any] | None

    def __init__(self, message: str, code: int, data: dict[str, Any] | None = None) -> None:
        super().__init__(code, message, data)

    @classmethod
    def from_mcp_sdk(cls, error: Any) -> MCPError:
        """From the official SDK's `McpError` (its `.error` is the ErrorData) or our own `MCPError`."""
        detail = getattr(error, "error", error)
        return cls(str(detail.message), int(detail.code), getattr(detail, "data", None))

    def __str__(self) -> str:
        if self.data:
            return f"{self.message} (code: {self.code}, data: {self.data})"
        return f"{self.message} (code: {self.code})"


@dataclass(kw_only=True)
class ResourceAnnotations:
    """Hints about a resource: who it is for, how much it matters, when it last changed."""

    audience: list[mcp_types.Role] | None = None
    priority: float | None = None
    """From 0.0 (least important) to 1.0."""
    last_modified: str | None = None
    """ISO 8601."""

    @classmethod
    def from_mcp_sdk(cls, mcp_annotations: mcp_types.Annotations) -> ResourceAnnotations:
        return cls(
            audience=mcp_annotations.audience,
            priority=mcp_annotations.priority,
            last_modified=mcp_annotations.last_modified,
        )


@dataclass(kw_only=True)
class Icon:
    """An icon for display in user interfaces: a URL or data URI."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None

    @classmethod
    def from_mcp_sdk(cls, icon: mcp_types.Icon) -> Icon:
        return cls(src=icon.src, mime_type=icon.mime_type, sizes=icon.sizes)


def _icons(icons: list[mcp_types.Icon] | None) -> list[Icon] | None:
    return [Icon.from_mcp_sdk(icon) for icon in icons] if icons else None


def _annotations(annotations: mcp_types.Annotations | None) -> ResourceAnnotations | None:
    return ResourceAnnotations.from_mcp_sdk(annotations) if annotations else None


@dataclass(kw_only=True)
class BaseResource(ABC):
    """What resources and resource templates share."""

    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: ResourceAnnotations | None = None
    icons: list[Icon] | None = None
    metadata: dict[str, Any] | None = None
    """The resource's `_meta`."""


@dataclass(kw_only=True)
class Resource(BaseResource):
    """A resource the server lists; read it with `MCPToolset.read_resource`."""

    uri: str
    size: int | None = None
    """Bytes of the raw content (before base64), if the server knows."""

    @classmethod
    def from_mcp_sdk(cls, mcp_resource: mcp_types.Resource) -> Resource:
        return cls(
            uri=str(mcp_resource.uri),
            name=mcp_resource.name,
            title=mcp_resource.title,
            description=mcp_resource.description,
            mime_type=mcp_resource.mime_type,
            size=mcp_resource.size,
            annotations=_annotations(mcp_resource.annotations),
            icons=_icons(mcp_resource.icons),
            metadata=mcp_resource.meta,
        )


@dataclass(kw_only=True)
class ResourceTemplate(BaseResource):
    """A family of resources: an RFC 6570 URI template (`notes://{day}`)."""

    uri_template: str

    @classmethod
    def from_mcp_sdk(cls, mcp_template: mcp_types.ResourceTemplate) -> ResourceTemplate:
        return cls(
            uri_template=mcp_template.uri_template,
            name=mcp_template.name,
            title=mcp_template.title,
            description=mcp_template.description,
            mime_type=mcp_template.mime_type,
            annotations=_annotations(mcp_template.annotations),
            icons=_icons(mcp_template.icons),
            metadata=mcp_template.meta,
        )


@dataclass(kw_only=True)
class ResourceLink:
    """A reference to a resource inside a prompt or tool result (read it yourself; it may not be listed)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: ResourceAnnotations | None = None
    icons: list[Icon] | None = None
    metadata: dict[str, Any] | None = None
    type: Literal["resource_link"] = "resource_link"

    @classmethod
    def from_mcp_sdk(cls, mcp_resource_link: mcp_types.ResourceLink) -> ResourceLink:
        return cls(
            uri=str(mcp_resource_link.uri),
            name=mcp_resource_link.name,
            title=mcp_resource_link.title,
            description=mcp_resource_link.description,
            mime_type=mcp_resource_link.mime_type,
            size=mcp_resource_link.size,
            annotations=_annotations(mcp_resource_link.annotations),
            icons=_icons(mcp_resource_link.icons),
            metadata=mcp_resource_link.meta,
        )


@dataclass(kw_only=True)
class PromptArgument:
    """One argument a prompt template takes."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


@dataclass(kw_only=True)
class Prompt:
    """A prompt (template) the server offers."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    metadata: dict[str, Any] | None = None

    @classmethod
    def from_mcp_sdk(cls, mcp_prompt: mcp_types.Prompt) -> Prompt:
        arguments = [
            PromptArgument(name=a.name, title=a.title, description=a.description, required=a.required)
            for a in mcp_prompt.arguments or []
        ]
        return cls(
            name=mcp_prompt.name,
            title=mcp_prompt.title,
            description=mcp_prompt.description,
            arguments=arguments or None,
            icons=_icons(mcp_prompt.icons),
            metadata=mcp_prompt.meta,
        )


PromptRole = Literal["user", "assistant"]


@dataclass(kw_only=True)
class EmbeddedResource:
    """A resource's content carried inside a prompt or tool result (unlike a `ResourceLink`)."""

    uri: str
    content: str | messages.BinaryContent
    type: Literal["resource"] = "resource"
    mime_type: str | None = None
    annotations: ResourceAnnotations | None = None
    metadata: dict[str, Any] | None = None
    """The embedding's `_meta`."""
    resource_metadata: dict[str, Any] | None = None
    """The `_meta` of the embedded contents themselves."""

    @classmethod
    def from_mcp_sdk(
        cls, part: mcp_types.EmbeddedResource, content: str | messages.BinaryContent
    ) -> EmbeddedResource:
        return cls(
            uri=str(part.resource.uri),
            content=content,
            mime_type=part.resource.mime_type,
            annotations=_annotations(part.annotations),
            metadata=part.meta,
            resource_metadata=part.resource.meta,
        )


ContentBlock = messages.TextContent | messages.BinaryContent | ResourceLink | EmbeddedResource
"""One block of a prompt message."""


@dataclass(kw_only=True)
class PromptMessage:
    role: PromptRole
    content: ContentBlock


@dataclass(kw_only=True)
class PromptResult:
    """What `MCPToolset.get_prompt` returns."""

    messages: list[PromptMessage]
    description: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(kw_only=True)
class ServerCapabilities:
    """What the server said it can do, flattened to booleans (plus the extensions it declared)."""

    experimental: list[str] | None = None
    extensions: dict[str, dict[str, Any]] | None = None
    """On 2026-07-28, e.g. `io.modelcontextprotocol/tasks` when some tool runs as a task."""
    logging: bool = False
    prompts: bool = False
    prompts_list_changed: bool = False
    resources: bool = False
    resources_list_changed: bool = False
    tools: bool = False
    tools_list_changed: bool = False
    completions: bool = False

    @classmethod
    def from_mcp_sdk(cls, mcp_capabilities: mcp_types.ServerCapabilities) -> ServerCapabilities:
        prompts, resources, tools = (
            mcp_capabilities.prompts,
            mcp_capabilities.resources,
            mcp_capabilities.tools,
        )
        return cls(
            experimental=list(mcp_capabilities.experimental) if mcp_capabilities.experimental else None,
            extensions=mcp_capabilities.extensions or None,
            logging=mcp_capabilities.logging is not None,
            prompts=prompts is not None,
            prompts_list_changed=bool(prompts and prompts.list_changed),
            resources=resources is not None,
            resources_list_changed=bool(resources and resources.list_changed),
            tools=tools is not None,
            tools_list_changed=bool(tools and tools.list_changed),
            completions=mcp_capabilities.completions is not None,
        )
