"""Authorization for the MCP client: a bearer token, or the OAuth 2.1 flow of the MCP authorization spec.

`Client(url, auth=...)` takes any `httpx.Auth`, a bearer token string,
`"oauth"`, or one of the classes here. The OAuth classes need the optional
Authlib and joserfc dependencies (`pip install 'mcp-resolve[auth]'`); the
names are loaded on first use, so the HTTP transport can import the error
type without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bearer import BearerToken
    from .browser import (
        AuthorizationResponse,
        CallbackHandler,
        HeadlessBrowser,
        LoopbackCallback,
        RedirectHandler,
        open_browser,
    )
    from .enterprise import EnterpriseIdP
    from .errors import AuthorizationError
    from .flow import ClientCredentials, OAuth
    from .storage import FileTokenStorage, MemoryTokenStorage, TokenStorage
    from .workload import WorkloadIdentity

__all__ = [
    "AuthorizationError",
    "AuthorizationResponse",
    "BearerToken",
    "CallbackHandler",
    "ClientCredentials",
    "EnterpriseIdP",
    "FileTokenStorage",
    "HeadlessBrowser",
    "LoopbackCallback",
    "MemoryTokenStorage",
    "OAuth",
    "RedirectHandler",
    "TokenStorage",
    "WorkloadIdentity",
    "open_browser",
]

_HOME = {
    "AuthorizationError": "errors",
    "AuthorizationResponse": "browser",
    "BearerToken": "bearer",
    "CallbackHandler": "browser",
    "ClientCredentials": "flow",
    "EnterpriseIdP": "enterprise",
    "FileTokenStorage": "storage",
    "HeadlessBrowser": "browser",
    "LoopbackCallback": "browser",
    "MemoryTokenStorage": "storage",
    "OAuth": "flow",
    "RedirectHandler": "browser",
    "TokenStorage": "storage",
    "WorkloadIdentity": "workload",
    "open_browser": "browser",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
