"""mcp-resolve: MCP servers and clients whose tool parameters are filled by your code, not the model.

`Annotated[T, Resolve(fn)]` on a tool parameter runs `fn` before the tool
body; a resolver may ask the person (`Elicit`), the client's LLM (`Sample`)
or its roots (`ListRoots`), on whichever protocol era the client speaks.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from . import _moved, tasks  # noqa: F401  (loading tasks registers the tasks extension on the core's hooks)
from ._caching import CacheHint
from ._principal import authenticated_principal
from ._resource_security import DEFAULT_RESOURCE_SECURITY, ResourceSecurity
from .content import AssistantMessage, Audio, Icon, Image, Message, UserMessage
from .context import Context
from .elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation, ElicitationResult
from .errors import InvalidRequestState, InvalidSignature, MCPError, ToolError, UrlElicitationRequiredError
from .exceptions import InvalidUriTemplate
from .protocol.middleware import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from .replay import MemoryReplayStore, ReplayStore, SqliteReplayStore
from .resolve import Elicit, ListRoots, Resolve, Sample
from .sealing import RequestStateSecurity
from .server import MCPServer

if TYPE_CHECKING:
    from .client import Client, StdioServerParameters
    from .extension import (
        Extension,
        MethodBinding,
        ResourceBinding,
        ToolBinding,
        require_client_extension,
    )
    from .transports.http.security import TransportSecuritySettings

_EXTENSION_NAMES = frozenset(
    {"Extension", "MethodBinding", "ResourceBinding", "ToolBinding", "require_client_extension"}
)

_moved.install()  # old module paths keep importing for one release, with a DeprecationWarning

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
    "CallNext",
    "CancelledElicitation",
    "Client",
    "Context",
    "DeclinedElicitation",
    "Elicit",
    "ElicitationResult",
    "Extension",
    "HandlerResult",
    "Icon",
    "Image",
    "InvalidRequestState",
    "InvalidSignature",
    "InvalidUriTemplate",
    "ListRoots",
    "MCPError",
    "MCPServer",
    "MemoryReplayStore",
    "Message",
    "MethodBinding",
    "ReplayStore",
    "RequestStateSecurity",
    "Resolve",
    "ResourceSecurity",
    "ResourceBinding",
    "Sample",
    "ServerMiddleware",
    "ServerRequestContext",
    "SqliteReplayStore",
    "StdioServerParameters",
    "ToolBinding",
    "ToolError",
    "TransportSecuritySettings",
    "UrlElicitationRequiredError",
    "UserMessage",
    "__version__",
    "authenticated_principal",
    "require_client_extension",
]


def __getattr__(name: str) -> Any:
    """`Client` (and `StdioServerParameters`) and the extension API load on first use: most processes need neither."""
    if name in ("Client", "StdioServerParameters"):
        from . import client

        return getattr(client, name)
    if name in _EXTENSION_NAMES:
        from . import extension

        return getattr(extension, name)
    if name == "TransportSecuritySettings":  # the HTTP transport's: a stdio server never loads it
        from .transports.http.security import TransportSecuritySettings

        return TransportSecuritySettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
