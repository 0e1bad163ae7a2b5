"""mcp-resolve: MCP servers and clients whose tool parameters are filled by your code, not the model.

`Annotated[T, Resolve(fn)]` on a tool parameter runs `fn` before the tool
body; a resolver may ask the person (`Elicit`), the client's LLM (`Sample`)
or its roots (`ListRoots`), on whichever protocol era the client speaks.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from .caching import CacheHint
from .content import AssistantMessage, Audio, Icon, Image, Message, UserMessage
from .context import Context
from .elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation, ElicitationResult
from .errors import InvalidRequestState, InvalidSignature, MCPError, ToolError
from .principal import authenticated_principal
from .replay import MemoryReplayStore, ReplayStore, SqliteReplayStore
from .resolve import Elicit, ListRoots, Resolve, Sample
from .resource_security import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from .sealing import RequestStateSecurity
from .server import MCPServer

if TYPE_CHECKING:
    from .client import Client

try:
    __version__ = version("mcp-resolve")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "DEFAULT_RESOURCE_SECURITY",
    "AcceptedElicitation",
    "AssistantMessage",
    "Audio",
    "CacheHint",
    "CancelledElicitation",
    "Client",
    "Context",
    "DeclinedElicitation",
    "Elicit",
    "ElicitationResult",
    "Icon",
    "Image",
    "InvalidRequestState",
    "InvalidSignature",
    "ListRoots",
    "MCPError",
    "MCPServer",
    "MemoryReplayStore",
    "Message",
    "ReplayStore",
    "RequestStateSecurity",
    "Resolve",
    "ResourceSecurity",
    "Sample",
    "SqliteReplayStore",
    "ToolError",
    "UserMessage",
    "__version__",
    "authenticated_principal",
]


def __getattr__(name: str) -> Any:
    """`Client` loads on first use: a server process never needs the client's transports."""
    if name == "Client":
        from .client import Client

        return Client
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
