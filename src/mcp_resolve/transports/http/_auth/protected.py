"""A protected Streamable HTTP endpoint: the plain one, with the bearer check in front of each request.

Only servers built with a `token_verifier` get this class; an open server's
endpoint is the plain one, so its request path does not pay for a check it
does not make. The check runs after the Host/Origin screen and before the
body is read (GET, POST and DELETE alike). The verified token then travels
with the request (`IncomingRequest.access_token`) to the Context; the caller
is also `request.user` for Starlette code, whose `identity` is the principal
requestState and handshake sessions are bound to. A `tools/call` of a tool
declared with `scopes=` is checked once the body names the tool.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.authentication import AuthCredentials
from starlette.types import Receive, Scope, Send

from ....auth.tokens import AccessToken, check_protection
from ....protocol.jsonrpc import Incoming, IncomingRequest
from .._exchange.endpoint import StreamableHTTPEndpoint
from .bearer import AuthenticatedUser, BearerCheck, ProofContext
from .prm import metadata_routes

if TYPE_CHECKING:
    from starlette.responses import Response
    from starlette.routing import Route

    from ..._serves import ServedServer
    from .._exchange.exchange import Exchange
    from .._wire.headers import RequestHeaders
    from ..options import HttpOptions

__all__ = ["ProtectedEndpoint"]

_AUTHORIZATION = b"authorization"
_DPOP = b"dpop"


class ProtectedEndpoint(StreamableHTTPEndpoint):
    """The MCP endpoint of a server with a `token_verifier`: no valid token, no MCP.

    `create_app` serves it, with `metadata_routes` beside it. The protection is
    checked here, when the app is built, so `token_verifier` and `auth` may also be
    set on the server after it was (from command-line options, say).
    """

    def __init__(self, server: ServedServer, options: HttpOptions) -> None:
        check_protection(server.token_verifier, server.auth)
        super().__init__(server, options)
        self.bearer = BearerCheck(server)
        # settings are frozen: the resource URL's path, which DPoP proofs may name, is found once
        self._resource_path = urlsplit(self.bearer.settings.resource_server_url).path.rstrip("/")

    def metadata_routes(self, path: str) -> list[Route]:
        """The Protected Resource Metadata routes of an app serving this endpoint at `path`."""
        return metadata_routes(self.server, path)

    async def _admit(self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send) -> bool:
        """Authenticate the request; False once the refusal (401, 403) has been sent."""
        raw = headers.raw.get(_AUTHORIZATION)
        dpop = raw is not None and raw[:4].lower() == _DPOP  # only a DPoP request pays for its context
        outcome = await self.bearer.authenticate(raw, self._proof_context(scope) if dpop else None)
        if not isinstance(outcome, AccessToken):
            await outcome(scope, receive, send)
            return False
        scope["user"] = AuthenticatedUser(outcome, self.bearer.identity(outcome))
        scope["auth"] = AuthCredentials(list(outcome.scopes))
        return True

    def _proof_context(self, scope: Scope) -> ProofContext:
        """What a DPoP proof of this request must name: its method, and its URL as the client may know
        it: as this server sees it (the scheme behind a trusted proxy is uvicorn's, from
        `trusted_proxies`; the host is the request's Host) and the configured resource URL, when
        the request is for the resource's own path."""
        proofs = tuple(value for name, value in scope["headers"] if name == _DPOP)
        host = next((value for name, value in scope["headers"] if name == b"host"), b"").decode("latin-1")
        root, path = scope.get("root_path", ""), scope["path"]
        if root and not path.startswith(root):  # ASGI servers differ in whether the path has the root
            path = root + path
        urls = [f"{scope.get('scheme', 'http')}://{host}{path}"]
        resource = self.bearer.settings.resource_server_url
        if self._resource_path == path.rstrip("/"):
            urls.append(resource)
        return ProofContext(scope["method"], tuple(urls), proofs)

    async def _post(self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send) -> None:
        if await self._admit(scope, headers, receive, send):
            await super()._post(scope, headers, receive, send)

    async def _get_or_delete(
        self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send
    ) -> None:
        if await self._admit(scope, headers, receive, send):
            await super()._get_or_delete(scope, headers, receive, send)

    def _attach(self, scope: Scope, message: Incoming) -> Response | None:
        """Check a request's own scopes now that its body names its target; give it the token."""
        if not isinstance(message, IncomingRequest):
            return None
        token = scope["user"].access_token
        refused = self.bearer.scope_refusal(token, message)
        if refused is None:
            message.access_token = token
        return refused

    def _modern(
        self,
        scope: Scope,
        headers: RequestHeaders,
        message: Incoming,
        exchange: Exchange,
        receive: Receive,
        send: Send,
    ) -> Response | Awaitable[None]:
        return self._attach(scope, message) or super()._modern(
            scope, headers, message, exchange, receive, send
        )

    async def _handshake(
        self,
        scope: Scope,
        headers: RequestHeaders,
        message: Incoming,
        session_id: str | None,
        version: str | None,
        exchange: Exchange,
        receive: Receive,
        send: Send,
    ) -> Response | None:
        return self._attach(scope, message) or await super()._handshake(
            scope, headers, message, session_id, version, exchange, receive, send
        )
