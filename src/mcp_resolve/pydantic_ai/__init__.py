"""pydantic-ai's `MCPToolset` and `load_mcp_toolsets`, on the mcp-resolve Client (`pip install 'mcp-resolve[pydantic-ai]'`).

The API is pydantic-ai's (`pydantic_ai.mcp`): the same constructor, methods,
handler shapes and models, so an agent moves over by changing one import.
Underneath is our Client instead of FastMCP's: either protocol era (`mode=`),
the 2026-07-28 input-required rounds run for you, tasks (`use_task=True`),
OAuth (`auth="oauth"`), and a resolver's question reaching your handlers the
same way on every transport. Only this module imports pydantic-ai;
`import mcp_resolve` does not.
"""

from __future__ import annotations

try:
    import pydantic_ai  # noqa: F401  (the top-level package, not this one)
except ImportError as exc:  # say which extra brings it, as `auth="oauth"` does for its own
    raise ImportError(
        f"{exc}; mcp_resolve.pydantic_ai needs: pip install 'mcp-resolve[pydantic-ai]'"
    ) from None

from .building import MCPToolsetClient
from .calls import CallToolFunc, ProcessToolCallback
from .config import load_mcp_toolsets
from .handlers import (
    ElicitationHandler,
    HandlerContext,
    LogHandler,
    MessageHandler,
    ProgressHandler,
    RootsHandler,
    RootsList,
    SamplingHandler,
)
from .models import (
    BaseResource,
    ContentBlock,
    EmbeddedResource,
    Icon,
    MCPError,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptResult,
    PromptRole,
    Resource,
    ResourceAnnotations,
    ResourceLink,
    ResourceTemplate,
    ServerCapabilities,
)
from .results import ToolResult
from .toolset import MCPToolset

__all__ = [
    "BaseResource",
    "CallToolFunc",
    "ContentBlock",
    "ElicitationHandler",
    "EmbeddedResource",
    "HandlerContext",
    "Icon",
    "LogHandler",
    "MCPError",
    "MCPToolset",
    "MCPToolsetClient",
    "MessageHandler",
    "ProcessToolCallback",
    "ProgressHandler",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptResult",
    "PromptRole",
    "Resource",
    "ResourceAnnotations",
    "ResourceLink",
    "ResourceTemplate",
    "RootsHandler",
    "RootsList",
    "SamplingHandler",
    "ServerCapabilities",
    "ToolResult",
    "load_mcp_toolsets",
]
