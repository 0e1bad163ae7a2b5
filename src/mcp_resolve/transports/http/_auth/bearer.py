"""The bearer check of a protected endpoint: the caller's verified token, or the challenge to answer with.

Every request to a protected MCP endpoint must carry `Authorization: Bearer
<token>` (RFC 6750 §2.1; never the query string). Without one the answer is
401 with `WWW-Authenticate: Bearer resource_metadata="..."`, so a client can
discover the authorization server (RFC 9728 §5.1); with a token the verifier
refuses, the same plus `error="invalid_token"`. A token lacking a scope the
server or the called tool requires gets 403 `error="insufficient_scope"`
naming every scope the operation needs, in one challenge, so the client can
step up once.

The token is never logged, echoed or put in an error: the challenge texts
are fixed. A verifier that fails in any way refuses (fail closed), logged
without a stack trace, and the client sees a plain 401.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from starlette.authentication import BaseUser
from starlette.responses import Response

from ....auth.tokens import (
    DEFAULT_LEEWAY_S,
    AccessToken,
    check_leeway,
    expand_scopes,
    lifetime_refusal,
    principal_of,
    same_resource,
)
from ....errors import INVALID_REQUEST
from ....protocol.jsonrpc import IncomingRequest, error_message
from .._wire.responses import json_response
from .prm import metadata_url

if TYPE_CHECKING:
    from ....auth.tokens import AuthSettings, TokenVerifier
    from ....protocol.jsonrpc import Incoming
    from ..._serves import ServedServer

__all__ = ["MAX_AUTHORIZATION_BYTES", "AuthenticatedUser", "BearerCheck"]

logger = logging.getLogger("mcp_resolve.auth")

MAX_AUTHORIZATION_BYTES = 16 * 1024
"""A longer Authorization header is refused unread (no real access token comes near it)."""
_BEARER = re.compile(rb"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *")
"""RFC 6750 §2.1: the scheme (any case), then one b64token."""


class AuthenticatedUser(BaseUser):
    """The caller, in Starlette's terms (`request.user`), for the app's own routes and middleware.

    `identity` is the principal requestState and handshake sessions are bound
    to (issuer, subject and client together, see `principal_of`).
    """

    def __init__(self, access_token: AccessToken) -> None:
        self.access_token = access_token
        self._identity = principal_of(access_token)

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.access_token.subject or self.access_token.client_id

    @property
    def identity(self) -> str:
        return self._identity


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerCheck:
    """Authenticates requests of one protected server and builds its challenges."""

    def __init__(self, server: ServedServer) -> None:
        settings, verifier = server.auth, server.token_verifier
        if settings is None or verifier is None:
            raise ValueError("BearerCheck needs a server built with token_verifier= and auth=")
        self.server = server
        self.settings: AuthSettings = settings
        self.verifier: TokenVerifier = verifier
        self.metadata_url = metadata_url(settings)
        try:
            self.metadata_url.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(
                "resource_server_url must be ASCII (it goes into WWW-Authenticate headers)"
            ) from None
        self.required = tuple(settings.required_scopes or ())
        self._hierarchy = settings.scope_hierarchy
        try:  # the expiry check below goes by the verifier's clock-skew allowance, so both agree
            self._leeway_s = check_leeway(getattr(verifier, "leeway_s", DEFAULT_LEEWAY_S))
        except ValueError:
            self._leeway_s = DEFAULT_LEEWAY_S

    # -- challenges ----------------------------------------------------------------------
    def challenge(
        self,
        status: int,
        message: str,
        *,
        error: str | None = None,
        description: str | None = None,
        scopes: tuple[str, ...] = (),
        request_id: Any = None,
    ) -> Response:
        """A 401 or 403 with its `WWW-Authenticate` header and a JSON-RPC error body (no token in either).

        Every parameter is server-made: fixed texts, validated scopes, the configured metadata URL.
        """
        params = []
        if error is not None:
            params.append(f"error={_quoted(error)}")
        if description is not None:
            params.append(f"error_description={_quoted(description)}")
        if scopes:
            params.append(f"scope={_quoted(' '.join(scopes))}")
        params.append(f"resource_metadata={_quoted(self.metadata_url)}")
        headers = {"www-authenticate": "Bearer " + ", ".join(params)}
        return json_response(status, error_message(request_id, INVALID_REQUEST, message), headers)

    def _unauthorized(self, invalid: bool) -> Response:
        if not invalid:  # RFC 6750 §3.1: no error code when the request had no credentials at all
            return self.challenge(
                401,
                "Unauthorized: this server needs a bearer token (see WWW-Authenticate)",
                scopes=self.required,
            )
        return self.challenge(
            401,
            "Unauthorized: the bearer token is invalid or expired",
            error="invalid_token",
            description="The access token is invalid, expired, or not for this resource",
            scopes=self.required,
        )

    # -- the check -----------------------------------------------------------------------
    async def authenticate(self, raw_authorization: bytes | None) -> AccessToken | Response:
        """The request's verified token (scopes widened by the hierarchy), or the refusal to send."""
        if raw_authorization is None:
            return self._unauthorized(invalid=False)
        if len(raw_authorization) > MAX_AUTHORIZATION_BYTES:
            logger.info(
                "refused a request: its Authorization header is over %d bytes", MAX_AUTHORIZATION_BYTES
            )
            return self._unauthorized(invalid=True)
        match = _BEARER.fullmatch(raw_authorization)
        if match is None:
            if not raw_authorization.lower().startswith(b"bearer"):
                return self._unauthorized(invalid=False)  # another scheme: as if none was sent
            logger.info("refused a request: its Authorization header is not one bearer token")
            return self._unauthorized(invalid=True)
        access = await self._verify(match.group(1).decode("ascii"))
        if access is None:
            return self._unauthorized(invalid=True)
        missing = self._missing(access, self.required)
        if missing:
            return self.insufficient(self.required, "the server")
        return access

    async def _verify(self, token: str) -> AccessToken | None:
        try:
            result: Any = await self.verifier.verify_token(token)
        except Exception as exc:  # fail closed, and never a 500: the verifier's failure is ours to log
            logger.error("token verification failed (%s); refusing the request", type(exc).__name__)
            return None
        if result is None:
            return None
        if not isinstance(result, AccessToken):
            try:  # a verifier written against another SDK's AccessToken: same fields
                result = AccessToken.model_validate(result, from_attributes=True)
            except Exception:
                logger.error(
                    "token_verifier returned a %s, not an AccessToken; refusing", type(result).__name__
                )
                return None
        if lifetime_refusal({"exp": result.expires_at}, self._leeway_s) is not None:
            logger.info("refused an access token: the verifier accepted it but it has expired")
            return None
        if not self._resource_ok(result):
            return None
        if self._hierarchy:
            result = result.model_copy(update={"scopes": expand_scopes(result.scopes, self._hierarchy)})
        return result

    def _resource_ok(self, token: AccessToken) -> bool:
        mode, mine = self.settings.validate_token_resource, self.settings.resource_server_url
        if mode is False:
            return True
        if token.resource is None:
            if mode:
                logger.warning(
                    "refused an access token: its verifier names no resource, and validate_token_resource=True"
                )
                return False
            return True
        if not same_resource(token.resource, mine):
            logger.info("refused an access token issued for another resource")
            return False
        return True

    @staticmethod
    def _missing(token: AccessToken, needed: tuple[str, ...]) -> tuple[str, ...]:
        granted = token.scopes
        return tuple(scope for scope in needed if scope not in granted)

    def insufficient(self, scopes: tuple[str, ...], what: str, request_id: Any = None) -> Response:
        """403 naming every scope the operation needs (`what` is for the body, never the header)."""
        return self.challenge(
            403,
            f"Forbidden: the access token lacks a scope {what} requires ({' '.join(scopes)})",
            error="insufficient_scope",
            description="The access token lacks a scope this operation requires",
            scopes=scopes,
            request_id=request_id,
        )

    def scope_refusal(self, token: AccessToken, message: Incoming) -> Response | None:
        """The 403 for a request whose target needs scopes the token lacks; None when it may run.

        The challenge names everything the call needs (the server's scopes and
        the tool's), so one step-up is enough.
        """
        if not isinstance(message, IncomingRequest):
            return None
        declared = self.server.required_scopes(message.method, message.params)
        if not declared or not self._missing(token, declared):
            return None
        needed = tuple(dict.fromkeys((*self.required, *declared)))
        name = message.params.get("name")
        logger.info("refused %s %r: the access token lacks scopes it requires", message.method, name)
        return self.insufficient(needed, f"the tool {name}", message.id)
