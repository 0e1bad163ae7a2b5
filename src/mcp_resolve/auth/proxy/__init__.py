"""OAuthProxy: sign in with the identity provider you already have.

The consent names are re-exported here so that the HTTP endpoint (`transports/http/_auth/`)
reaches them without importing a private module of this package.
"""

from ._consent import (
    BROWSER_COOKIE,
    REMEMBER_COOKIE,
    ConsentFlow,
    ConsentGuard,
    ConsentView,
    render_consent,
    render_error,
)

__all__ = [
    "BROWSER_COOKIE",
    "REMEMBER_COOKIE",
    "ConsentFlow",
    "ConsentGuard",
    "ConsentView",
    "render_consent",
    "render_error",
]
