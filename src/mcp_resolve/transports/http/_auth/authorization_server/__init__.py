"""The authorization server an MCP server built with `auth_server_provider=` is: its HTTP endpoints.

One module per endpoint, each readable top to bottom: `_metadata` (RFC 8414),
`_authorize`, `_token` (with `_client_auth`), `_register` (RFC 7591) and
`_revoke` (RFC 7009); `_common` holds what they share. They check what the
protocols define and call the provider (`mcp_resolve.auth.provider`) for the
rest, so any `OAuthAuthorizationServerProvider` gets the same checks.

`authorization_server_routes(server, options)` is what `create_app` adds beside the
MCP endpoint, with the per-address caps of `options` in front of `/register`,
`/authorize` and `/token` (`_limits`). The endpoints live under the issuer URL's path, at the
issuer's origin; a provider's own pages (a login form, say) are routes the
deployment adds to the app itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .....auth.proxy.pages import ProxiesUpstream
from ...options import HttpOptions
from ._access_log import hide_sign_in_queries
from ._authorize import authorize_handler, error_page
from ._common import AuthorizationServer, ClientDocuments, Endpoint, oauth_error
from ._consent_page import consent_routes
from ._limits import AUTHORIZE_WINDOW_S, REGISTER_WINDOW_S, TOKEN_WINDOW_S, PeerLimiter, limited
from ._metadata import metadata_document, metadata_routes
from ._proxy_pages import proxy_page_routes
from ._register import register_handler
from ._revoke import revoke_handler
from ._token import token_handler

if TYPE_CHECKING:
    from ...._serves import ServedServer

__all__ = ["AuthorizationServer", "authorization_server", "authorization_server_routes", "metadata_document"]

Handler = Callable[[AuthorizationServer, Request], Awaitable[Response]]


def _client_documents(issuer: str) -> ClientDocuments:
    """CIMD (`mcp_resolve.auth.cimd`): loopback `http` documents are accepted only by a loopback issuer."""
    from .....auth.cimd import ClientMetadataDocuments
    from .....auth.redirect_uris import is_loopback_host

    loopback = urlsplit(issuer).scheme == "http" and is_loopback_host(urlsplit(issuer).hostname)
    return cast("ClientDocuments", ClientMetadataDocuments(allow_http_loopback=loopback))


def authorization_server(server: ServedServer) -> AuthorizationServer:
    """The authorization server of `server` (which has `auth_server_provider` and `auth`)."""
    provider, settings = server.auth_server_provider, server.auth
    if provider is None or settings is None:
        raise ValueError(
            "this server has no authorization server: MCPServer(auth_server_provider=..., auth=...)"
        )
    issuer = urlsplit(settings.issuer_url)
    if issuer.query or issuer.fragment:
        raise ValueError("AuthSettings.issuer_url of an authorization server must have no query or fragment")
    documents = _client_documents(settings.issuer_url) if settings.client_id_metadata_documents else None
    return AuthorizationServer(provider, settings, documents)


def _bound(
    handler: Handler, server: AuthorizationServer, limiter: PeerLimiter | None = None, *, page: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        return await handler(server, request)

    return limited(handle, limiter, _too_many_page if page else _too_many)


def _limiter(name: str, count: int | None, window_s: float) -> PeerLimiter | None:
    return None if count is None else PeerLimiter(name, count, window_s)


def _too_many(wait: float) -> Response:
    """A JSON endpoint's refusal of an address over its cap (429, `Retry-After`)."""
    return oauth_error(
        429,
        "temporarily_unavailable",
        "too many requests from this address; try again later",
        {"retry-after": PeerLimiter.retry_after(wait)},
    )


def _too_many_page(wait: float) -> Response:
    """`/authorize`'s refusal of an address over its cap: a page for the person, never a redirect.

    It is decided before the client is looked up, so nothing of the request is
    trusted yet, and a redirect to its `redirect_uri` would make this server an
    open redirector; looking the client up first (a store read, or fetching a
    metadata document) would be the very work the cap is there to refuse.
    """
    return error_page(
        "too many sign-in requests came from your network; wait a few minutes",
        429,
        {"retry-after": PeerLimiter.retry_after(wait)},
    )


def _open_to_browsers(app: Any) -> Any:
    """CORS for the endpoints a client in a browser posts to (the Inspector): no cookies are involved."""
    return CORSMiddleware(
        app, allow_origins=["*"], allow_methods=["POST", "OPTIONS"], allow_headers=["authorization"]
    )


def authorization_server_routes(server: ServedServer, options: HttpOptions | None = None) -> list[Route]:
    """The Starlette routes of `server`'s authorization server: metadata, `/authorize`, `/token`, and
    `/register` and `/revoke` when enabled; `options` (default `HttpOptions()`) caps requests per address."""
    auth = authorization_server(server)
    options = options or HttpOptions()
    authorizations = _limiter("/authorize", options.max_authorizations_per_address, AUTHORIZE_WINDOW_S)
    tokens = _limiter("/token", options.max_token_requests_per_address, TOKEN_WINDOW_S)
    registrations = _limiter("/register", options.max_registrations_per_address, REGISTER_WINDOW_S)
    routes = metadata_routes(auth)
    authorize = Endpoint(_bound(authorize_handler, auth, authorizations, page=True), ("GET", "POST"))
    routes.append(Route(auth.path("/authorize"), authorize))
    routes.append(
        Route(
            auth.path("/token"), _open_to_browsers(Endpoint(_bound(token_handler, auth, tokens), ("POST",)))
        )
    )
    if auth.registration_enabled:
        register = Endpoint(_bound(register_handler, auth, registrations), ("POST",))
        routes.append(Route(auth.path("/register"), _open_to_browsers(register)))
    if auth.revocation_enabled:
        revoke = Endpoint(_bound(revoke_handler, auth), ("POST",))
        routes.append(Route(auth.path("/revoke"), _open_to_browsers(revoke)))
    hidden = [auth.path("/authorize")]
    # A provider that signs the person in upstream (OAuthProxy) has pages of its own.
    if isinstance(auth.provider, ProxiesUpstream):
        routes.extend(consent_routes(auth.provider, auth.path("/consent")))
        routes.extend(proxy_page_routes(auth.provider))
        hidden += [auth.path("/consent"), auth.provider.callback_path]
    hide_sign_in_queries(hidden)
    return routes
