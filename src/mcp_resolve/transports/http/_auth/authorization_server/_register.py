"""`/register`: dynamic client registration (RFC 7591), when `client_registration_options.enabled`.

Anyone may register, so what a client says about itself is checked, not
trusted. Its redirect URIs are where codes will be sent: `mcp_resolve.auth.redirect_uris`
says which may be registered, and the record is bounded in size (`MAX_RECORD_BYTES`).

The server makes the client id and, for a confidential client, the secret
(256 random bits), and answers with everything it recorded (201). The scope
it may ask for later is `registered_scope`'s (`_common`): with `valid_scopes`,
any of them (the person still decides), so a step-up needs no new registration;
without, what it registered, else `default_scopes`, else none (the official
SDK's rule).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from .....auth.provider import (
    ClientRegistrationOptions,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    RegistrationError,
)
from .....auth.redirect_uris import MAX_REDIRECT_URIS, check_redirect_uri
from ..._wire.responses import json_response
from ._common import (
    AuthorizationServer,
    BadRequest,
    no_store,
    oauth_error,
    read_body_bounded,
    registered_scope,
)
from ._metadata import CLIENT_AUTH_METHODS

__all__ = ["register_handler"]

MAX_RECORD_BYTES = 4096
"""What a registered client may weigh: anyone may register, and the provider keeps each one."""
MAX_NAME_CHARS = 200
_GRANTS = frozenset({"authorization_code", "refresh_token"})


class _Invalid(Exception):
    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def _metadata(body: bytes) -> tuple[OAuthClientMetadata, list[str]]:
    """The client's metadata, and its redirect URIs exactly as it wrote them (they are matched as strings)."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise _Invalid("invalid_client_metadata", "the body is not JSON") from None
    if not isinstance(document, dict):
        raise _Invalid("invalid_client_metadata", "the body must be a JSON object")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise _Invalid("invalid_redirect_uri", "redirect_uris must be a list of URIs")
    if len(uris) > MAX_REDIRECT_URIS:
        raise _Invalid("invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect URIs")
    kind = document.get("application_type")
    for uri in uris:
        why = check_redirect_uri(uri, kind if isinstance(kind, str) else None)
        if why is not None:
            raise _Invalid("invalid_redirect_uri", why)
    try:
        return OAuthClientMetadata.model_validate(document), uris
    except ValidationError as invalid:
        fields = sorted({str(e["loc"][0]) for e in invalid.errors() if e["loc"]})
        raise _Invalid("invalid_client_metadata", f"invalid field(s): {', '.join(fields)}"[:200]) from None


def _scope(requested: str | None, options: ClientRegistrationOptions) -> str | None:
    try:
        return registered_scope(requested, options)
    except ValueError as invalid:
        raise _Invalid("invalid_client_metadata", str(invalid)) from None


def _client(
    server: AuthorizationServer, metadata: OAuthClientMetadata, uris: list[str]
) -> OAuthClientInformationFull:
    method = metadata.token_endpoint_auth_method or "client_secret_basic"  # RFC 7591 §2's default
    if method not in CLIENT_AUTH_METHODS:
        raise _Invalid("invalid_client_metadata", "token_endpoint_auth_method is not supported here")
    if "authorization_code" not in metadata.grant_types or not set(metadata.grant_types) <= _GRANTS:
        raise _Invalid(
            "invalid_client_metadata", "grant_types must be authorization_code (and refresh_token)"
        )
    if metadata.client_name is not None and len(metadata.client_name) > MAX_NAME_CHARS:
        raise _Invalid("invalid_client_metadata", f"client_name is over {MAX_NAME_CHARS} characters")
    if metadata.response_types != ["code"]:
        raise _Invalid("invalid_client_metadata", 'response_types must be ["code"]')
    options = server.settings.client_registration_options
    assert options is not None
    now = int(time.time())
    secret = None if method == "none" else secrets.token_urlsafe(32)
    expires = None
    if secret is not None:
        expires = now + options.client_secret_expiry_seconds if options.client_secret_expiry_seconds else 0
    record: dict[str, Any] = {
        **metadata.model_dump(exclude_none=True),
        "redirect_uris": uris,
        "token_endpoint_auth_method": method,
        "scope": _scope(metadata.scope, options),
        "client_id": secrets.token_urlsafe(16),
        "client_id_issued_at": now,
        "client_secret": secret,
        "client_secret_expires_at": expires,
    }
    client = OAuthClientInformationFull.model_validate(record)
    if len(client.model_dump_json(exclude_none=True)) > MAX_RECORD_BYTES:
        raise _Invalid("invalid_client_metadata", f"the client's metadata is over {MAX_RECORD_BYTES} bytes")
    return client


async def register_handler(server: AuthorizationServer, request: Request) -> Response:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise BadRequest("the body must be application/json", 415)
    body = await read_body_bounded(request)
    try:
        client = _client(server, *_metadata(body))
        await server.provider.register_client(client)
    except _Invalid as invalid:
        return oauth_error(400, invalid.error, invalid.description)
    except RegistrationError as refused:
        return oauth_error(400, refused.error, refused.error_description)
    return json_response(201, client.model_dump(mode="json", exclude_none=True), no_store())
