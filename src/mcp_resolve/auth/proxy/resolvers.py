"""The person behind the call, as the upstream provider knows them, as resolvers.

`who: Annotated[UpstreamIdentity, Resolve(upstream_identity)]` gives the
GitHub/Google/Entra user the proxy signed in; `gh: Annotated[UpstreamToken,
Resolve(upstream_token)]` gives a fresh upstream access token for calling that
provider's API on their behalf. Like every resolved parameter, neither is in
the input schema and neither can be sent by a client. Both read the request's
access token (`access_token`), so they work wherever it is known: every round
of a 2026-07-28 call, and a tool running as a task. In tests, override
`access_token` (or these resolvers) on `mcp.dependency_overrides`.
"""

from __future__ import annotations

from typing import Annotated

from ...errors import ToolError
from ...resolve.markers import Resolve
from ..resolvers import access_token
from ..tokens import AccessToken
from ._proxy import ProxiedAccessToken, UpstreamToken
from ._upstream import UpstreamError
from .identity import UpstreamIdentity

__all__ = ["upstream_identity", "upstream_token"]


async def upstream_identity(token: Annotated[AccessToken, Resolve(access_token)]) -> UpstreamIdentity:
    """Who signed in upstream, from the claims the proxy put in its access token."""
    identity = UpstreamIdentity.from_claims(token.claims or {})
    if identity is None:
        raise ToolError("this tool needs a person signed in through the server's OAuthProxy")
    return identity


async def upstream_token(token: Annotated[AccessToken, Resolve(access_token)]) -> UpstreamToken:
    """A fresh upstream access token of the person behind the call (refreshed upstream when due)."""
    proxy = token.proxy if isinstance(token, ProxiedAccessToken) else None
    if proxy is None:
        raise ToolError("this tool needs a person signed in through the server's OAuthProxy")
    try:
        return await proxy.upstream_token(token)
    except UpstreamError as exc:
        raise ToolError(f"the upstream token is not available: {exc}") from None
