"""Protected Resource Metadata (RFC 9728): how a client that got a 401 finds where to get a token.

The document names this server (`resource`) and its authorization server;
it is public, so it is served without a token and with CORS open to any
origin (a browser-based client must be able to read it). It lives at the
well-known path for the resource URL (`/.well-known/oauth-protected-resource`
followed by the resource's path) and at the bare well-known path, the two
places the spec tells clients to look; challenges point at the first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._wire.responses import json_response

if TYPE_CHECKING:
    from ....auth.tokens import AuthSettings
    from ..._serves import ServedServer

__all__ = ["WELL_KNOWN", "metadata_document", "metadata_paths", "metadata_routes", "metadata_url"]

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def _resource_path(settings: AuthSettings) -> str:
    return urlsplit(settings.resource_server_url).path.rstrip("/")


def metadata_url(settings: AuthSettings) -> str:
    """The absolute URL of the document, as `resource_metadata` in every challenge."""
    parts = urlsplit(settings.resource_server_url)
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{_resource_path(settings)}"


def metadata_paths(settings: AuthSettings, mount_path: str | None = None) -> list[str]:
    """Where the document is served: suffixed with the resource's path, with the endpoint's mount
    path (when it differs), and bare."""
    paths = [WELL_KNOWN + _resource_path(settings)]
    if mount_path:
        paths.append(WELL_KNOWN + mount_path.rstrip("/"))
    paths.append(WELL_KNOWN)
    return list(dict.fromkeys(paths))


def metadata_document(server: ServedServer, settings: AuthSettings) -> dict[str, Any]:
    """The RFC 9728 document. `scopes_supported` is `required_scopes`: the minimal set the spec asks
    for, with anything more (a tool's `scopes=`) obtained by step-up when a 403 names it. The DPoP
    proof algorithms accepted are listed, and whether DPoP is required (RFC 9728 §2)."""
    document: dict[str, Any] = {
        "resource": settings.resource_server_url,
        "authorization_servers": [settings.issuer_url],
        "bearer_methods_supported": ["header"],
        "resource_name": server.name,
    }
    if settings.required_scopes:
        document["scopes_supported"] = list(settings.required_scopes)
    if settings.service_documentation_url:
        document["resource_documentation"] = settings.service_documentation_url
    document["dpop_signing_alg_values_supported"] = list(settings.dpop.algorithms)
    if settings.dpop.required:
        document["dpop_bound_access_tokens_required"] = True
    return document


class _MetadataEndpoint:
    """GET (and HEAD) answer the document; anything else is 405. The body is made once."""

    def __init__(self, server: ServedServer, settings: AuthSettings) -> None:
        self.response = json_response(
            200, metadata_document(server, settings), {"cache-control": "public, max-age=3600"}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] in ("GET", "HEAD"):
            await self.response(scope, receive, send)
            return
        await json_response(405, {"error": "method_not_allowed"}, {"allow": "GET, OPTIONS"})(
            scope, receive, send
        )


def metadata_routes(server: ServedServer, mount_path: str | None = None) -> list[Route]:
    """Starlette routes serving the document of a protected `server`.

    `create_app` adds them to its own app. When you mount that app under a
    prefix, the well-known paths must still be at your host's root: add these
    routes to the parent app as well.
    """
    settings = server.auth
    if settings is None:
        raise ValueError(
            "this server is not protected: ServedServer(token_verifier=..., auth=AuthSettings(...))"
        )
    app = CORSMiddleware(
        _MetadataEndpoint(server, settings),
        allow_origins=["*"],
        allow_methods=["GET", "OPTIONS"],
        allow_headers=["mcp-protocol-version"],
        max_age=3600,
    )
    return [Route(path, app) for path in metadata_paths(settings, mount_path)]
