"""Authorization server metadata (RFC 8414): how a client finds `/authorize`, `/token` and the rest.

An MCP client that read our Protected Resource Metadata looks for this
document at the issuer's well-known paths: `/.well-known/oauth-authorization-server`
followed by the issuer's path (RFC 8414 §3.1), and the OpenID Connect
discovery paths, with the issuer's path inserted (as MCP clients try it) or
appended (as OpenID Connect defines it). The same document is served at
each. It is public: no credentials, CORS open to any origin (a client in a
browser must read it).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..._wire.responses import json_response
from ._common import AuthorizationServer, Endpoint

__all__ = ["metadata_document", "metadata_routes"]

OAUTH_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"

CLIENT_AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]


def metadata_document(server: AuthorizationServer) -> dict[str, Any]:
    """The RFC 8414 document: every endpoint this server offers, and what it accepts there."""
    document: dict[str, Any] = {
        "issuer": server.issuer,
        "authorization_endpoint": server.url("/authorize"),
        "token_endpoint": server.url("/token"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
        "code_challenge_methods_supported": ["S256"],
    }
    registration = server.settings.client_registration_options
    if registration is not None and registration.enabled:
        document["registration_endpoint"] = server.url("/register")
    if registration is not None and registration.valid_scopes:
        document["scopes_supported"] = list(registration.valid_scopes)
    if server.revocation_enabled:
        document["revocation_endpoint"] = server.url("/revoke")
        document["revocation_endpoint_auth_methods_supported"] = CLIENT_AUTH_METHODS
    if server.settings.service_documentation_url:
        document["service_documentation"] = server.settings.service_documentation_url
    if server.sends_issuer:
        document["authorization_response_iss_parameter_supported"] = True
    if server.settings.client_id_metadata_documents:
        document["client_id_metadata_document_supported"] = True
    return document


def metadata_paths(server: AuthorizationServer) -> list[str]:
    """Where the document is served: the well-known paths, with the issuer's path inserted and appended."""
    issuer_path = urlsplit(server.issuer).path.rstrip("/")
    paths = [OAUTH_WELL_KNOWN + issuer_path, OIDC_WELL_KNOWN + issuer_path, issuer_path + OIDC_WELL_KNOWN]
    return list(dict.fromkeys(paths))


def metadata_routes(server: AuthorizationServer) -> list[Route]:
    """GET (and HEAD) answer the document, made once; CORS open, like Protected Resource Metadata."""
    answer = json_response(200, metadata_document(server), {"cache-control": "public, max-age=3600"})

    async def serve(request: Request) -> Response:
        return answer

    app = CORSMiddleware(
        Endpoint(serve, ("GET", "HEAD")),
        allow_origins=["*"],
        allow_methods=["GET", "OPTIONS"],
        allow_headers=["mcp-protocol-version"],
        max_age=3600,
    )
    return [Route(path, app) for path in metadata_paths(server)]
