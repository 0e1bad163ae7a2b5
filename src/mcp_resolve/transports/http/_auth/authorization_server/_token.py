"""`/token` (RFC 6749 §4.1.3, §6): an authorization code or a refresh token, exchanged for tokens.

The client authenticates first (`_client_auth`). An authorization code must
be this client's, unexpired, answered by the PKCE verifier whose S256 hash
it was issued for, and presented with the redirect URI of the authorization
request when that request named one (RFC 6749 §4.1.3); a `resource` must be
the code's. A code the provider no longer knows (already exchanged, say) is
`invalid_grant`: revoking what was issued from a replayed code is the
provider's job, as only it knows what that was (`OAuthProxy` does it). A
refresh may narrow the scopes, never widen them. Answers are never cached
(`Cache-Control: no-store`).
"""

from __future__ import annotations

import hmac
import logging
import re
import time
from typing import Any

from pydantic import AnyUrl, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from .....auth.provider import OAuthClientInformationFull, OAuthToken, TokenError, code_challenge_s256
from .....auth.tokens import check_scope, same_resource
from ..._wire.responses import json_response
from ._client_auth import authenticated_form
from ._common import AuthorizationServer, no_store, oauth_error

__all__ = ["token_handler"]

logger = logging.getLogger("mcp_resolve.auth")

_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
"""RFC 7636 §4.1: 43 to 128 unreserved characters."""


class _Refused(Exception):
    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def _same_uri(given: str, issued: AnyUrl) -> bool:
    try:
        return str(AnyUrl(given)) == str(issued)
    except ValidationError:
        return False


def _resource_ok(asked: str | None, issued: str | None) -> bool:
    if asked is None:
        return True
    return issued is not None and same_resource(asked, issued)


async def _code_grant(
    server: AuthorizationServer, client: OAuthClientInformationFull, form: dict[str, str]
) -> Any:
    code_text, verifier = form.get("code"), form.get("code_verifier")
    if code_text is None:
        raise _Refused("invalid_request", "code is required")
    if verifier is None:
        raise _Refused("invalid_request", "code_verifier is required (PKCE)")
    if not _VERIFIER.fullmatch(verifier):
        raise _Refused("invalid_grant", "code_verifier is malformed")
    code = await server.provider.load_authorization_code(client, code_text)
    if code is None or code.client_id != client.client_id:
        raise _Refused("invalid_grant", "the authorization code is unknown, used or not this client's")
    if code.expires_at < time.time():
        raise _Refused("invalid_grant", "the authorization code has expired")
    given = form.get("redirect_uri")
    if code.redirect_uri_provided_explicitly and given is None:
        raise _Refused("invalid_grant", "redirect_uri is required: the authorization request named one")
    if given is not None and not _same_uri(given, code.redirect_uri):
        raise _Refused("invalid_grant", "redirect_uri is not the one of the authorization request")
    if not hmac.compare_digest(code_challenge_s256(verifier), code.code_challenge):
        raise _Refused("invalid_grant", "code_verifier does not match the code challenge")
    if not _resource_ok(form.get("resource"), code.resource):
        raise _Refused("invalid_target", "resource is not the one the code was issued for")
    return await server.provider.exchange_authorization_code(client, code)


async def _refresh_grant(
    server: AuthorizationServer, client: OAuthClientInformationFull, form: dict[str, str]
) -> Any:
    presented = form.get("refresh_token")
    if presented is None:
        raise _Refused("invalid_request", "refresh_token is required")
    token = await server.provider.load_refresh_token(client, presented)
    if token is None or token.client_id != client.client_id:
        raise _Refused("invalid_grant", "the refresh token is unknown, revoked or not this client's")
    if token.expires_at is not None and token.expires_at < time.time():
        raise _Refused("invalid_grant", "the refresh token has expired")
    scopes = list(token.scopes)
    if "scope" in form:
        try:
            asked = [check_scope(s) for s in form["scope"].split(" ") if s]
        except ValueError:
            raise _Refused("invalid_scope", "scope is malformed") from None
        if any(s not in token.scopes for s in asked):
            raise _Refused("invalid_scope", "a refresh may narrow the scopes, not widen them")
        scopes = asked
    if not _resource_ok(form.get("resource"), token.resource):
        raise _Refused("invalid_target", "resource is not the one the refresh token was issued for")
    return await server.provider.exchange_refresh_token(client, token, scopes)


_GRANTS = {"authorization_code": _code_grant, "refresh_token": _refresh_grant}


async def token_handler(server: AuthorizationServer, request: Request) -> Response:
    authenticated = await authenticated_form(server, request, "token")
    if isinstance(authenticated, Response):
        return authenticated
    form, client = authenticated
    grant_type = form.get("grant_type")
    if grant_type is None:
        return oauth_error(400, "invalid_request", "grant_type is required")
    grant = _GRANTS.get(grant_type)
    if grant is None:
        return oauth_error(
            400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token"
        )
    if grant_type not in client.grant_types:
        return oauth_error(400, "unauthorized_client", "the client is not registered for this grant type")
    try:
        tokens = await grant(server, client, form)
    except _Refused as refused:
        return oauth_error(400, refused.error, refused.description)
    except TokenError as refused:
        status = 401 if refused.error == "invalid_client" else 400
        return oauth_error(status, refused.error, refused.error_description)
    answer = (
        tokens if isinstance(tokens, OAuthToken) else OAuthToken.model_validate(tokens, from_attributes=True)
    )
    return json_response(200, answer.model_dump(exclude_none=True), no_store())
