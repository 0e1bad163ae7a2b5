"""`authenticated_principal(ctx)`: who is calling, as the one string requestState is bound to.

The official SDK's name for its default principal binding. Here the transport
binds requestState (and handshake sessions) to the caller it authenticated;
this function gives tools and resolvers that same identity: the verified
token's issuer, subject and client together (`mcp_resolve.auth.principal_of`),
or None when the request carries no token (stdio, in memory, an HTTP server
without a `token_verifier`). Use it in a tool, or as a resolver:
`who: Annotated[str | None, Resolve(authenticated_principal)]`.
"""

from __future__ import annotations

from typing import Any

from .context import Context, _RequestContextView

__all__ = ["authenticated_principal"]


def authenticated_principal(ctx: Context[Any, Any] | _RequestContextView) -> str | None:
    """The authenticated caller of this request (issuer, subject, client), or None when unauthenticated.

    Takes the Context or its `request_context`, since code written for the
    official SDK passes the latter. Never the client's arguments: the token
    was verified by the transport before anything ran.
    """
    token = ctx.access_token
    if token is None:
        return None
    from .auth.tokens import principal_of  # only authenticated requests need the auth types

    return principal_of(token)
