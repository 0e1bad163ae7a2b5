"""What the proxy's own pages ask of it: the consent decision, the upstream's return, its public keys.

The pages themselves (HTML responses, cookies, redirects) are HTTP and live in
`transports/http/_auth/authorization_server/`; they talk to the proxy only
through this interface (and render with the functions re-exported here), so
the proxy stays free of Starlette and the pages free of the proxy's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._consent import (
    BROWSER_COOKIE,
    REMEMBER_COOKIE,
    ConsentFlow,
    ConsentGuard,
    ConsentView,
    approval_of,
    render_consent,
    render_error,
)

__all__ = [
    "BROWSER_COOKIE",
    "REMEMBER_COOKIE",
    "ConsentFlow",
    "ConsentGuard",
    "ConsentView",
    "PageError",
    "ProxiesUpstream",
    "approval_of",
    "render_consent",
    "render_error",
]


@dataclass
class PageError(Exception):
    """Shown to the person as an error page (never sent to a client): `title`, `message` are safe to show."""

    title: str
    message: str
    status: int = 400


@runtime_checkable
class ProxiesUpstream(ConsentFlow, Protocol):
    """An authorization server that signs the person in upstream (`OAuthProxy`)."""

    callback_path: str
    """Where the upstream sends the person back (`/auth/callback`), registered at the upstream."""

    async def upstream_returned(
        self,
        *,
        state: str | None,
        code: str | None,
        error: str | None,
        error_description: str | None,
        browser: str | None = None,
    ) -> str:
        """The URL to send the person on to (the client's redirect URI with a code or an error);
        `PageError` when there is no client to send them to (unknown or expired state, or another
        browser than the one that approved: `browser` is the consent page's cookie)."""
        ...

    async def jwks(self) -> dict[str, Any]:
        """The public keys that verify the access tokens this proxy issues (served at /.well-known/jwks.json)."""
        ...
