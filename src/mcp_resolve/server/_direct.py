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

from typing import TYPE_CHECKING, Any

from mcp_types import CallToolResult, InputRequiredResult
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from .._signature import ArgumentError
from ..context import Context, RequestScope
from ..errors import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    InvalidSignature,
    MCPError,
    ResourceError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)

if TYPE_CHECKING:
    from ..tools import Tool
    from ._facade import MCPServer

__all__ = ["call_tool_directly"]


async def call_tool_directly(
    server: MCPServer, tool: Tool, arguments: dict[str, Any] | None, context: Context[Any, Any] | None
) -> CallToolResult | InputRequiredResult:
    """Validate, resolve and run `tool` as a client's call would, raising what the wire would answer."""
    name = tool.name
    direct = context is None
    if context is None:
        context = Context(lambda: _direct_scope(server))
    try:
        values = tool.signature.validate(arguments)
    except ArgumentError as exc:
        raise ToolError(f"Error executing tool {name}: invalid arguments: {exc}") from exc
    try:
        value = await tool.signature.invoke(values, context)
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


def _direct_scope(server: MCPServer) -> RequestScope:
    """The request a direct call stands for: no client, so nothing declared and nowhere to send."""
    return RequestScope(
        request_id=None,
        method="tools/call",
        era="handshake",
        protocol_version=LATEST_HANDSHAKE_VERSION,
        client_capabilities={},
        client_info=None,
        log_level=None,
        progress_token=None,
        meta={},
        send_notification=_nowhere,
        send_request=_no_client,
        lifespan_context=server.lifespan_context,
    )


async def _nowhere(method: str, params: dict[str, Any]) -> None:
    """A direct call's log messages and progress: no client to hear them."""


async def _no_client(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`ctx.elicit()` and friends in a direct call: say why there is no answer, as a tool error."""
    raise ToolError(
        f"{method} needs a client, and a direct call (mcp.call_tool) has none; call through Client(mcp)"
    )
