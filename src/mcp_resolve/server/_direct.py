"""`await mcp.call_tool(name, arguments)`: a tool called in this process, with no client and no transport.

The official SDK's `MCPServer.call_tool`, with the same signature and
outcomes, so a test suite moves across unchanged. Success is the
`CallToolResult` a client would receive (an `InputRequiredResult` if the tool
hand-rolls rounds). A failure is raised rather than returned, so a test can
`pytest.raises` it: `ToolError` for an unknown tool, arguments that fail
validation, a `ToolError` or `ResourceError` from the body or a resolver
(declines included), and `UnexpectedToolError` (a `ToolError` too) for an
unexpected exception (its text withheld as on the wire; `__cause__` is the
original). An `MCPError` a tool raises passes through unchanged.

Without a `context` there is no client to ask: a resolver that asks one
(`Elicit`, `Sample`, `ListRoots`) fails the call with a `ToolError` saying
so; put an answer in its place with `mcp.dependency_overrides`, or drive the
tool through `Client(mcp, elicitation_handler=...)`. Plain resolvers run.
The lifespan runs only inside `async with mcp.running():`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult, GetPromptResult, InputRequiredResult

from .._signature import ArgumentError
from ..context import Context, detached_scope
from ..errors import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    InvalidSignature,
    MCPError,
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)
from ..resources import UnsafeParameter
from ._mount import MountedTool

if TYPE_CHECKING:
    from ..tools import Tool
    from ._facade import MCPServer

__all__ = ["ReadResourceContents", "call_tool_directly", "get_prompt_directly", "read_resource_directly"]


async def call_tool_directly(
    server: MCPServer, tool: Tool, arguments: dict[str, Any] | None, context: Context[Any, Any] | None
) -> CallToolResult | InputRequiredResult:
    """Validate, resolve and run `tool` as a client's call would, raising what the wire would answer."""
    name = tool.name
    direct = context is None
    if context is None:
        context = Context(lambda: detached_scope(server))
    try:
        if isinstance(tool, MountedTool):  # through the mount: its middleware, its lifespan_context
            value: Any = _result(await _through_mount(tool, arguments, context))
        else:
            value = await tool.signature.invoke(tool.signature.validate(arguments), context)
    except ArgumentError as exc:
        raise ToolError(f"Error executing tool {name}: invalid arguments: {exc}") from exc
    except MCPError as exc:
        if direct and exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
            raise ToolError(
                f"Error executing tool {name}: {exc.message}; a direct call has no client to ask, so "
                "override the resolver in mcp.dependency_overrides or call through Client(mcp)"
            ) from exc
        raise
    except (UnexpectedToolError, UnexpectedResourceError) as exc:  # a nested crash: still a crash here
        raise UnexpectedToolError(f"Error executing tool {name}: {exc}") from exc
    except (ToolError, ResourceError, InvalidSignature) as exc:  # InvalidSignature: an override at call time
        raise ToolError(f"Error executing tool {name}: {exc}") from exc
    except Exception as exc:
        # The wire withholds an unexpected exception's text; so does this, and the test has it as the cause.
        raise UnexpectedToolError(f"Error executing tool {name}") from exc  # the official text
    if isinstance(value, (CallToolResult, InputRequiredResult)):
        return value
    return CallToolResult.model_validate(tool.convert_result(value))


async def _through_mount(
    tool: MountedTool, arguments: dict[str, Any] | None, context: Context
) -> dict[str, Any]:
    """Run a mounted tool as its `call` would (inside its server's middleware), raising instead of
    answering an error result; the outcome is the wire dict."""

    async def inner(params: dict[str, Any], context: Context) -> dict[str, Any]:
        if isinstance(tool.source, MountedTool):  # a mount of a mount: through that one's middleware too
            return await _through_mount(tool.source, params.get("arguments"), context)
        value = await tool.signature.invoke(tool.signature.validate(params.get("arguments")), context)
        if isinstance(value, InputRequiredResult):
            return value.model_dump(by_alias=True, exclude_none=True, mode="json")
        return tool.convert_result(value)

    params = {"name": tool.source.name, "arguments": tool.request_arguments(arguments)}
    return await tool.mount.serve("tools/call", params, context, inner)


def _result(wire: dict[str, Any]) -> CallToolResult | InputRequiredResult:
    if "inputRequests" in wire:
        return InputRequiredResult.model_validate(wire)
    return CallToolResult.model_validate(wire)


@dataclass(frozen=True, slots=True)
class ReadResourceContents:
    """One content of a resource read in this process (`mcp.read_resource`, `ctx.read_resource`).

    The official SDK's shape: `content` is the text (`str`) or the decoded
    bytes of a blob, with the content's `mime_type` and `meta` (`_meta`).
    """

    content: str | bytes
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


async def read_resource_directly(
    server: MCPServer, uri: str, context: Context[Any, Any] | None
) -> list[ReadResourceContents] | InputRequiredResult:
    """Read `uri` as `resources/read` would, raising what the wire would answer as an error.

    `ResourceNotFoundError` for a URI nothing serves (or a template value its
    security refuses, answered alike), `ResourceError` from the function, an
    `UnexpectedResourceError` (cause: the original) for a crash, `MCPError` unchanged.
    """
    registry = server.registry
    if context is None:
        context = Context(detached_scope(server, "resources/read"))
    try:
        resource = registry.resources.get(uri)
        if resource is not None:
            result = await resource.read_result(context)
        else:
            for template in registry.templates.values():
                variables = template.match(uri)
                if variables is not None:
                    result = await template.read(uri, variables, context)
                    break
            else:
                raise ResourceNotFoundError(f"Unknown resource: {uri}")
    except ArgumentError as exc:
        raise ResourceError(f"Invalid params for resource {uri}: {exc}") from exc
    except UnsafeParameter:
        raise ResourceNotFoundError(f"Unknown resource: {uri}") from None
    if "inputRequests" in result:
        return InputRequiredResult.model_validate(result)
    return [_content(item) for item in result.get("contents", ())]


def _content(item: dict[str, Any]) -> ReadResourceContents:
    content: str | bytes = item["text"] if "text" in item else base64.b64decode(item.get("blob", ""))
    return ReadResourceContents(content, item.get("mimeType"), item.get("_meta"))


async def get_prompt_directly(
    server: MCPServer, name: str, arguments: dict[str, Any] | None, context: Context[Any, Any] | None
) -> GetPromptResult | InputRequiredResult:
    """Render a prompt as `prompts/get` would; ValueError for an unknown prompt or a failed render
    (the official SDK's outcomes), `MCPError` unchanged."""
    prompt = server.registry.prompt(name)
    if prompt is None:
        raise ValueError(f"Unknown prompt: {name}")
    if context is None:
        context = Context(detached_scope(server, "prompts/get"))
    try:
        result = await prompt.render(arguments, context)
    except MCPError:
        raise
    except Exception as exc:
        raise ValueError(str(exc)) from exc
    if "inputRequests" in result:
        return InputRequiredResult.model_validate(result)
    return GetPromptResult.model_validate(result)
