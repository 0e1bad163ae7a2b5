"""`/register`: dynamic client registration (RFC 7591), when `client_registration_options.enabled`.

Anyone may register, so what a client says about itself is checked, not
trusted. Its redirect URIs are where codes will be sent: each must be an
absolute URI without a fragment or user name, and fit the client's
`application_type` (RFC 8252, OpenID Connect Registration): a `native` app
redirects to loopback `http` (any port, RFC 8252 §7.3) or to a private-use
scheme in reverse-domain form (`com.example.app:/callback`, §7.1); a `web`
client to `https` (or loopback `http`, for development). A client that says
neither may use any of these. `javascript:`, `data:` and other schemes that
would run or carry content are refused whatever the type.

The server makes the client id and, for a confidential client, the secret
(256 random bits), and answers with everything it recorded (201). A client
registered here may ask, when it signs in, for any scope in `valid_scopes`
(the person still decides), so a scope step-up needs no new registration.
"""

from __future__ import annotations

import ipaddress
import json
import re
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from .....auth.provider import OAuthClientInformationFull, OAuthClientMetadata, RegistrationError
from .....auth.tokens import check_scope
from ..._wire.responses import json_response
from ._common import AuthorizationServer, BadRequest, no_store, oauth_error, read_body_bounded
from ._metadata import CLIENT_AUTH_METHODS

__all__ = ["check_redirect_uri", "register_handler"]

MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
_PRIVATE_SCHEME = re.compile(r"[a-z][a-z0-9+\-]*(\.[a-z0-9+\-]+)+")
"""A reverse-domain scheme (RFC 8252 §7.1): at least one dot, so never `javascript`, `data` or `file`."""
_NEVER = frozenset({"javascript", "data", "vbscript", "file", "blob", "about", "filesystem", "ws", "wss"})
_GRANTS = frozenset({"authorization_code", "refresh_token"})


class _Invalid(Exception):
    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def _loopback_http(scheme: str, host: str | None) -> bool:
    if scheme != "http" or host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_redirect_uri(uri: str, application_type: str | None) -> str | None:
    """Why `uri` cannot be a redirect URI of a client of this `application_type`, or None when it can."""
    if len(uri) > MAX_URI_CHARS or any(c.isspace() or ord(c) < 0x20 or c == "\\" for c in uri):
        return "a redirect URI is malformed"
    if "#" in uri:
        return "a redirect URI must not have a fragment"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return "a redirect URI is malformed"
    scheme = parts.scheme.lower()
    if not scheme or scheme in _NEVER:
        return "a redirect URI has a scheme that cannot receive a code"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI must not carry a user name or password"
    web = scheme == "https" and bool(parts.hostname)
    loopback = _loopback_http(scheme, parts.hostname)
    private = bool(_PRIVATE_SCHEME.fullmatch(scheme)) and not parts.netloc
    if scheme == "http" and not loopback:
        return "a redirect URI may use http only on loopback (127.0.0.1, [::1], localhost)"
    if application_type == "native" and not (loopback or private):
        return "a native client's redirect URIs must be loopback http or a private-use scheme"
    if application_type == "web" and not (web or loopback):
        return "a web client's redirect URIs must use https (http only on loopback)"
    if not (web or loopback or private):
        return "a redirect URI must use https, loopback http, or a private-use scheme (com.example.app:/path)"
    return None


def _scope(requested: str | None, server: AuthorizationServer) -> str | None:
    """The scope recorded for the client: see the module's docstring."""
    options = server.settings.client_registration_options
    assert options is not None
    asked: list[str] = []
    if requested is not None:
        try:
            asked = [check_scope(s) for s in requested.split(" ") if s]
        except ValueError:
            raise _Invalid("invalid_client_metadata", "scope is malformed") from None
    if options.valid_scopes is not None:
        unknown = [s for s in asked if s not in options.valid_scopes]
        if unknown:
            raise _Invalid("invalid_client_metadata", "scope names a scope this server does not offer")
        return " ".join(options.valid_scopes)
    if not asked and options.default_scopes is not None:
        return " ".join(options.default_scopes)
    return None


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
        "scope": _scope(metadata.scope, server),
        "client_id": secrets.token_urlsafe(16),
        "client_id_issued_at": now,
        "client_secret": secret,
        "client_secret_expires_at": expires,
    }
    return OAuthClientInformationFull.model_validate(record)


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
