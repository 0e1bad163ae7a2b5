"""`/authorize` (RFC 6749 §4.1.1, OAuth 2.1): check an authorization request, then let the provider sign the person in.

The order of the checks is what the protocol's safety rests on. Until the
client is known and the redirect URI is one it registered, nothing may be
sent to that URI (an open redirector would hand codes or errors to anyone):
such a request gets a plain 400 page that repeats nothing of the request.
From then on every refusal goes back to the client, as `error` with the
request's `state` and our `iss` (RFC 9207), so the client can tell the
person and cannot be fooled by another server's answer.

The request must use PKCE with S256 (RFC 7636; `plain` and a missing
challenge are refused, OAuth 2.1 and MCP require it), may name only scopes
the client registered, and a `resource` (RFC 8707) only if it is this
MCP server. The provider then decides where the person goes (a login
page, an upstream provider, or straight back with a code).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, urlsplit

from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from .....auth.provider import (
    AuthorizationParams,
    AuthorizeError,
    OAuthClientInformationFull,
    construct_redirect_uri,
)
from .....auth.tokens import check_scope, same_resource
from ._common import (
    STORE_FAILURES,
    UNAVAILABLE,
    AuthorizationServer,
    BadRequest,
    no_store,
    parse_form,
    read_form,
)

__all__ = ["authorize_handler", "error_page"]

logger = logging.getLogger("mcp_resolve.auth")

MAX_QUERY_BYTES = 8 * 1024
MAX_CLIENT_ID_CHARS = 2048
_S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
"""BASE64URL(SHA256(verifier)) without padding: always 43 characters (RFC 7636 §4.2)."""


def error_page(reason: str, status: int = 400, headers: dict[str, str] | None = None) -> Response:
    """The answer to a request we cannot send back to its client: a fixed text, nothing of the request."""
    return PlainTextResponse(
        f"This sign-in request cannot be completed: {reason}.\n"
        "Go back to the application you came from and try again.",
        status,
        headers={**no_store(), "x-content-type-options": "nosniff", **(headers or {})},
    )


class _Back(Exception):
    """A refusal to send back to the (trusted) client's redirect URI."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


async def _params(request: Request) -> dict[str, str]:
    if request.method == "POST":
        return await read_form(request)
    query = request.scope.get("query_string", b"")
    if len(query) > MAX_QUERY_BYTES:
        raise BadRequest(f"the request is over {MAX_QUERY_BYTES} bytes")
    try:
        return parse_form(query.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest("the request is not UTF-8") from None


def redirect_back(server: AuthorizationServer, redirect_uri: str, **params: str | None) -> Response:
    """A 302 to the client's redirect URI with `params` and our `iss` (RFC 9207)."""
    url = construct_redirect_uri(redirect_uri, **params, iss=server.issuer)
    return RedirectResponse(url, 302, headers=no_store())


def with_issuer(server: AuthorizationServer, url: str, redirect_uri: str) -> str:
    """The provider's answer, with `iss` added when it sends the person straight back to the client."""
    target, client = urlsplit(url), urlsplit(redirect_uri)
    if (target.scheme, target.netloc, target.path) != (client.scheme, client.netloc, client.path):
        return url  # a login or consent page: whoever sends the person back adds it
    if any(name == "iss" for name, _ in parse_qsl(target.query, keep_blank_values=True)):
        return url
    return construct_redirect_uri(url, iss=server.issuer)


def _checked(
    server: AuthorizationServer, client: OAuthClientInformationFull, params: dict[str, str]
) -> tuple[str, list[str] | None, str | None]:
    """(code challenge, scopes, resource) of a request from a trusted client, or `_Back`."""
    response_type = params.get("response_type")
    if response_type is None:
        raise _Back("invalid_request", "response_type is required")
    if response_type != "code":
        raise _Back("unsupported_response_type", "only response_type=code is supported")
    if "code" not in client.response_types or "authorization_code" not in client.grant_types:
        raise _Back("unauthorized_client", "the client is not registered for the authorization code flow")
    challenge = params.get("code_challenge")
    if challenge is None:
        raise _Back(
            "invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256"
        )
    if params.get("code_challenge_method") != "S256":
        raise _Back("invalid_request", "code_challenge_method must be S256")
    if not _S256_CHALLENGE.fullmatch(challenge):
        raise _Back("invalid_request", "code_challenge is not an S256 challenge")
    scope = params.get("scope")
    scopes = None
    if scope is not None:
        try:
            scopes = [check_scope(s) for s in scope.split(" ") if s]
        except ValueError:
            raise _Back("invalid_scope", "scope is malformed") from None
    resource = params.get("resource")
    if resource is not None and not same_resource(resource, server.settings.resource_server_url):
        raise _Back("invalid_target", "resource is not this server")
    return challenge, scopes, resource


async def authorize_handler(server: AuthorizationServer, request: Request) -> Response:
    try:
        params = await _params(request)
    except BadRequest as bad:
        return error_page(bad.description, 413 if bad.status == 413 else 400)
    client_id = params.get("client_id")
    if client_id is None or len(client_id) > MAX_CLIENT_ID_CHARS:
        return error_page("the request names no valid client")
    client = await server.client(client_id)
    if client is None:
        return error_page("the client is not registered here")
    given = params.get("redirect_uri")
    if given is not None and "#" in given:
        return error_page("the redirect URI is not one the client registered")
    try:
        redirect_uri = client.validate_redirect_uri(given)
    except (AuthorizeError, ValueError):
        return error_page("the redirect URI is not one the client registered")
    # From here on the client and its redirect URI are trusted: errors go back to it.
    state = params.get("state")
    back = str(redirect_uri)
    try:
        challenge, scopes, resource = _checked(server, client, params)
        scopes = client.validate_scope(" ".join(scopes)) if scopes is not None else None
        authorization = AuthorizationParams(
            state=state,
            scopes=scopes,
            code_challenge=challenge,
            redirect_uri=AnyUrl(back),
            redirect_uri_provided_explicitly=given is not None,
            resource=resource,
        )
        url = await server.provider.authorize(client, authorization)
    except _Back as refused:
        return redirect_back(
            server, back, error=refused.error, error_description=refused.description, state=state
        )
    except AuthorizeError as refused:
        return redirect_back(
            server, back, error=refused.error, error_description=refused.error_description, state=state
        )
    except STORE_FAILURES as exc:  # down or full: the client may try again later (RFC 6749 §4.1.2.1)
        logger.warning("the provider's authorize() failed: its store did not serve (%s)", type(exc).__name__)
        return redirect_back(
            server, back, error="temporarily_unavailable", error_description=UNAVAILABLE, state=state
        )
    except Exception as exc:  # the provider failed: tell the client, log the type only
        logger.error("the provider's authorize() failed (%s)", type(exc).__name__)
        return redirect_back(server, back, error="server_error", state=state)
    return RedirectResponse(with_issuer(server, url, back), 302, headers=no_store())
