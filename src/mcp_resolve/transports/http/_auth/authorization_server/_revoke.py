"""`/revoke` (RFC 7009), when `revocation_options.enabled`: a client ends one of its own tokens.

The client authenticates as at `/token`. The answer is 200 whether the
token was known, already ended, or someone else's (§2.2): it tells a caller
nothing about tokens it does not hold. Only a token of this client is
handed to the provider's `revoke_token`.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from ._client_auth import authenticated_form
from ._common import AuthorizationServer, no_store, oauth_error

__all__ = ["revoke_handler"]

MAX_TOKEN_CHARS = 8192


async def revoke_handler(server: AuthorizationServer, request: Request) -> Response:
    authenticated = await authenticated_form(server, request, "revoke")
    if isinstance(authenticated, Response):
        return authenticated
    form, client = authenticated
    token = form.get("token")
    if token is None:
        return oauth_error(400, "invalid_request", "token is required")
    if len(token) <= MAX_TOKEN_CHARS:
        provider = server.provider
        found: Any = None
        if form.get("token_type_hint") == "refresh_token":
            found = await provider.load_refresh_token(client, token) or await provider.load_access_token(
                token
            )
        else:
            found = await provider.load_access_token(token) or await provider.load_refresh_token(
                client, token
            )
        if found is not None and found.client_id == client.client_id:
            await provider.revoke_token(found)
    return Response(status_code=200, headers=no_store())
