"""Identity as resolvers: who is calling, and whether they may, filled in by the framework.

A tool that takes `who: Annotated[AccessToken, Resolve(access_token)]` gets
the verified token of the request. Like every resolved parameter it is absent
from the input schema and a value a client sends for it is ignored, so the
model can no more name the caller than it can name the refund amount.
`require_scopes(...)` is the same resolver with a permission check in front.

Both need a token: a request without one (stdio, in memory, an HTTP server
with no `token_verifier`) fails with a tool error saying so. In tests, put an
identity in place with `mcp.dependency_overrides[access_token] = ...`; every
`require_scopes` resolver reads its token through `access_token`, so that
one override covers them too.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Annotated

from ..context import Context
from ..errors import ToolError
from ..resolve.markers import Resolve
from .tokens import AccessToken, check_scope

__all__ = ["InsufficientScope", "access_token", "require_scopes"]


class InsufficientScope(ToolError):
    """A resolver's scope check failed: the call ends as a tool error naming the missing scopes.

    A tool error rather than the HTTP 403 step-up challenge, because by the
    time a resolver runs the answer may already be streaming (and a resolver
    may decide its requirement from the arguments). For a requirement known
    from the tool alone, `@mcp.tool(scopes=[...])` gets the 403 a client can act on.
    """

    def __init__(self, missing: tuple[str, ...]) -> None:
        self.missing = missing
        super().__init__(
            f"insufficient scope: this call needs {' '.join(missing)}, which the access token lacks"
        )


async def access_token(ctx: Context) -> AccessToken:
    """The verified access token of this request; a tool error when the request carries none."""
    token = ctx.access_token
    if token is None:
        raise ToolError(
            "this tool needs an authenticated caller, and the request carries no access token "
            "(identity comes from an OAuth bearer token, on an HTTP server with a token_verifier)"
        )
    return token


@functools.cache
def require_scopes(*scopes: str) -> Callable[..., Awaitable[AccessToken]]:
    """A resolver giving the request's access token if it holds every one of `scopes`.

    `who: Annotated[AccessToken, Resolve(require_scopes("refunds:write"))]`.
    The same scopes always give the same resolver, so two parameters that
    require them run one check per call.
    """
    if not scopes:
        raise ValueError("require_scopes() needs at least one scope")
    wanted = tuple(check_scope(scope) for scope in scopes)

    async def resolver(token: Annotated[AccessToken, Resolve(access_token)]) -> AccessToken:
        granted = set(token.scopes)
        missing = tuple(scope for scope in wanted if scope not in granted)
        if missing:
            raise InsufficientScope(missing)
        return token

    label = f"require_scopes({', '.join(repr(s) for s in wanted)})"
    resolver.__name__ = resolver.__qualname__ = label
    return resolver
