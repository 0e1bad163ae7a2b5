"""MCP results as the model and the caller see them: tool results, prompt blocks, resource contents.

A tool result becomes what pydantic-ai gives a model for any tool's return:
the structured content when the server sent one (unwrapped from the
`{"result": ...}` envelope a non-object return travels in), else each content
block as text (parsed when it is JSON), `BinaryContent`, or a resource's URI.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import mcp_types
import pydantic_core
from pydantic_ai import messages

from .models import ContentBlock, EmbeddedResource, ResourceAnnotations, ResourceLink

__all__ = [
    "ToolResult",
    "map_prompt_content",
    "map_resource_contents",
    "map_tool_result",
    "tool_error_text",
]

ToolResult = (
    str
    | messages.BinaryContent
    | dict[str, Any]
    | list[Any]
    | Sequence[str | messages.BinaryContent | dict[str, Any] | list[Any]]
)
"""What a tool call returns to the model."""


def map_tool_result(result: mcp_types.CallToolResult) -> Any:
    """The value the model gets for a successful call."""
    structured = result.structured_content
    if structured is not None and all(isinstance(part, mcp_types.TextContent) for part in result.content):
        # The text blocks repeat the structured content (for clients that read only text): one is enough.
        return _unwrapped(structured)
    mapped = [_map_content(part) for part in result.content]
    return mapped[0] if len(mapped) == 1 else mapped


def tool_error_text(name: str, result: mcp_types.CallToolResult) -> str:
    """The message of a failed call, verbatim: the model retries on our words, not a paraphrase."""
    texts = [part.text for part in result.content if isinstance(part, mcp_types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return pydantic_core.to_json(_unwrapped(result.structured_content)).decode()
    return f"Tool {name!r} returned an error"


def _unwrapped(structured: Any) -> Any:
    if isinstance(structured, dict) and len(structured) == 1 and "result" in structured:
        return structured["result"]
    return structured


def _map_content(part: mcp_types.ContentBlock) -> str | messages.BinaryContent | dict[str, Any] | list[Any]:
    if isinstance(part, mcp_types.TextContent):
        if part.text.startswith(("[", "{")):
            try:
                parsed = pydantic_core.from_json(part.text)
            except ValueError:
                return part.text
            if isinstance(parsed, dict | list):
                return parsed
        return part.text
    if isinstance(part, mcp_types.ImageContent | mcp_types.AudioContent):
        return _binary(part.data, part.mime_type)
    if isinstance(part, mcp_types.EmbeddedResource):
        return map_resource_contents(part.resource)
    return str(part.uri)  # a ResourceLink: the caller can read it with `read_resource`


def _binary(data: str, mime_type: str | None) -> messages.BinaryContent:
    return messages.BinaryContent.narrow_type(
        messages.BinaryContent(
            data=base64.b64decode(data), media_type=mime_type or "application/octet-stream"
        )
    )


def map_resource_contents(
    contents: mcp_types.TextResourceContents | mcp_types.BlobResourceContents,
) -> str | messages.BinaryContent:
    """Text as `str`, a blob as `BinaryContent` (a `BinaryImage` for images)."""
    if isinstance(contents, mcp_types.TextResourceContents):
        return contents.text
    return _binary(contents.blob, contents.mime_type)


def map_prompt_content(part: mcp_types.ContentBlock) -> ContentBlock:
    """A prompt block keeps its annotations and `_meta`: prompts go to people and apps, not only models."""
    if isinstance(part, mcp_types.TextContent):
        return messages.TextContent(content=part.text, metadata=_part_metadata(part))
    if isinstance(part, mcp_types.ImageContent | mcp_types.AudioContent):
        binary = _binary(part.data, part.mime_type)
        binary.vendor_metadata = _part_metadata(part)
        return binary
    if isinstance(part, mcp_types.EmbeddedResource):
        return EmbeddedResource.from_mcp_sdk(part, map_resource_contents(part.resource))
    return ResourceLink.from_mcp_sdk(part)


def _part_metadata(
    part: mcp_types.TextContent | mcp_types.ImageContent | mcp_types.AudioContent,
) -> dict[str, Any] | None:
    metadata: dict[str, Any] = {}
    if part.annotations:
        metadata["mcp_annotations"] = ResourceAnnotations.from_mcp_sdk(part.annotations)
    if part.meta:
        metadata["mcp_meta"] = part.meta
    return metadata or None
