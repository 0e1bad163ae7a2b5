"""Who is asking at `/token` and `/revoke`: client authentication (RFC 6749 §2.3), by the method the client registered.

A public client (`none`) sends only its `client_id` and proves nothing
(PKCE protects its codes); a confidential one sends its secret in the body
(`client_secret_post`) or in HTTP Basic (`client_secret_basic`), and only the
way it registered. The secret is compared in constant time, and an expired
secret (`client_secret_expires_at`) no longer works. Every refusal is
`invalid_client` with a fixed text: nothing says which part was wrong
beyond what the client already knows, and no credential is ever repeated.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from typing import TYPE_CHECKING
from urllib.parse import unquote_plus

from starlette.requests import Request
from starlette.responses import Response

from ._common import AuthorizationServer, BadRequest, oauth_error, read_form

if TYPE_CHECKING:
    from .....auth.provider import OAuthClientInformationFull

__all__ = ["ClientRefused", "authenticate_client", "authenticated_form"]

SECRET_METHODS = ("client_secret_post", "client_secret_basic")


class ClientRefused(Exception):
    """`invalid_client` (401). `basic`: the client tried HTTP Basic, so the answer names that scheme."""

    def __init__(self, description: str, *, basic: bool) -> None:
        super().__init__(description)
        self.description = description
        self.basic = basic


def _basic(header: str) -> tuple[str, str] | None:
    """(client_id, secret) from `Authorization: Basic ...`, None for another scheme; `ClientRefused` if malformed."""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ClientRefused("malformed Basic credentials", basic=True) from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise ClientRefused("malformed Basic credentials", basic=True)
    return unquote_plus(client_id), unquote_plus(secret)  # RFC 6749 §2.3.1: form-encoded first


async def authenticate_client(
    server: AuthorizationServer, authorization: str | None, form: dict[str, str]
) -> OAuthClientInformationFull:
    """The client a `/token` or `/revoke` request comes from, authenticated; `ClientRefused` otherwise."""
    basic = _basic(authorization) if authorization else None
    posted = form.get("client_secret")
    if basic is not None and posted is not None:
        raise BadRequest("use one client authentication method, not two")
    client_id = form.get("client_id")
    if basic is not None:
        if client_id is not None and client_id != basic[0]:
            raise ClientRefused("client authentication failed", basic=True)
        client_id = basic[0]
    if not client_id:
        raise ClientRefused("client_id is required", basic=basic is not None)
    client = await server.client(client_id)
    if client is None:
        raise ClientRefused("client authentication failed", basic=basic is not None)
    method = client.token_endpoint_auth_method or ("client_secret_basic" if client.client_secret else "none")
    presented = basic[1] if basic is not None else posted
    if method == "none":
        if presented:
            raise ClientRefused("this client is public: it has no secret to send", basic=basic is not None)
        return client
    if method not in SECRET_METHODS:
        raise ClientRefused(
            "the client's authentication method is not supported here", basic=basic is not None
        )
    # A client registered without a method saying how may use either; otherwise only the registered one.
    allowed = SECRET_METHODS if client.token_endpoint_auth_method is None else (method,)
    used = "client_secret_basic" if basic is not None else "client_secret_post"
    if presented is None or used not in allowed:
        raise ClientRefused("client authentication failed", basic=basic is not None)
    stored = client.client_secret
    if not stored or not hmac.compare_digest(stored.encode("utf-8"), presented.encode("utf-8")):
        raise ClientRefused("client authentication failed", basic=basic is not None)
    expires = client.client_secret_expires_at
    if expires and expires < time.time():
        raise ClientRefused("the client secret has expired", basic=basic is not None)
    return client


async def authenticated_form(
    server: AuthorizationServer, request: Request, realm: str
) -> tuple[dict[str, str], OAuthClientInformationFull] | Response:
    """The request's form and its authenticated client, or the 401 `invalid_client` to answer
    (with a Basic challenge for `realm` when the client tried Basic)."""
    form = await read_form(request)
    try:
        client = await authenticate_client(server, request.headers.get("authorization"), form)
    except ClientRefused as refused:
        challenge = {"www-authenticate": f'Basic realm="{realm}"'} if refused.basic else None
        return oauth_error(401, "invalid_client", refused.description, challenge)
    return form, client
