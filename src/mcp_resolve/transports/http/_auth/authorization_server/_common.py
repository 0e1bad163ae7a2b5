"""What every authorization-server endpoint shares: the server it belongs to, bounded form reading, OAuth errors.

Requests are small and hostile input is expected, so each endpoint reads at
most `MAX_BODY_BYTES`, refuses a parameter given twice (RFC 6749 §3.1) and
treats an empty one as absent. Answers never echo what the request carried
(no token, secret, code or parameter value reaches an error body or a log
line), and an unexpected failure is a plain 500 with the exception's type
logged, never its text or a stack trace: the text of an exception raised
while handling a token may contain it. A store that cannot serve (Redis down,
or a store at its bounds) is a 503 `temporarily_unavailable`: the request is
refused, nothing is guessed, and the client may try again shortly. So is a
provider's `TemporarilyUnavailable` (its upstream down or slow, say).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from .....auth.provider import TemporarilyUnavailable
from .....auth.tokens import ClientRegistrationOptions, check_scope
from .....stores import StoreUnavailable
from .....stores.keyvalue import KeyValueStoreFull
from ..._wire.body import ClientGone, read_body
from ..._wire.responses import json_response

if TYPE_CHECKING:
    from .....auth.provider import OAuthAuthorizationServerProvider, OAuthClientInformationFull
    from .....auth.tokens import AuthSettings

__all__ = [
    "registered_scope",
    "MAX_BODY_BYTES",
    "MAX_FIELDS",
    "RETRY_AFTER_S",
    "STORE_FAILURES",
    "UNAVAILABLE",
    "AuthorizationServer",
    "BadRequest",
    "ClientDocuments",
    "Endpoint",
    "no_store",
    "oauth_error",
    "parse_form",
    "read_form",
    "store_unavailable",
]

logger = logging.getLogger("mcp_resolve.auth")

MAX_BODY_BYTES = 16 * 1024
"""The largest request body any endpoint reads (a token request is well under 1 KiB)."""
MAX_FIELDS = 32
"""The most parameters a request may carry."""

RETRY_AFTER_S = 5
"""What a 503 for a store that cannot serve asks the client to wait (`Retry-After`)."""
STORE_FAILURES: tuple[type[Exception], ...] = (StoreUnavailable, KeyValueStoreFull)
"""The store refusing to serve now: unreachable (Redis down), or at one of its bounds."""
UNAVAILABLE = "the authorization server cannot reach its store; try again shortly"

_NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}


def no_store() -> dict[str, str]:
    """Headers of every answer that carries (or could carry) a credential (RFC 6749 §5.1)."""
    return dict(_NO_STORE)


class ClientDocuments(Protocol):
    """Client ID Metadata Documents (`mcp_resolve.auth.cimd.ClientMetadataDocuments`): a client whose id
    is the https URL of its metadata, fetched SSRF-safely and cached."""

    def is_cimd_client_id(self, client_id: str) -> bool: ...

    async def client(self, client_id: str) -> OAuthClientInformationFull: ...


@dataclass(frozen=True)
class AuthorizationServer:
    """The authorization server one MCP server is: its provider, its settings, and where it serves what."""

    provider: OAuthAuthorizationServerProvider[Any, Any, Any]
    settings: AuthSettings
    documents: ClientDocuments | None = None
    """Set when `client_id_metadata_documents` is on."""

    @property
    def issuer(self) -> str:
        """As written in the settings: clients compare it to `iss` as a string."""
        return self.settings.issuer_url

    def url(self, endpoint: str) -> str:
        """The absolute URL of an endpoint (`/authorize` ...), under the issuer's path."""
        return self.issuer.rstrip("/") + endpoint

    def path(self, endpoint: str) -> str:
        """Where this app serves an endpoint: the issuer's path, then the endpoint's."""
        return urlsplit(self.issuer).path.rstrip("/") + endpoint

    @property
    def registration_enabled(self) -> bool:
        options = self.settings.client_registration_options
        return options is not None and options.enabled

    @property
    def revocation_enabled(self) -> bool:
        options = self.settings.revocation_options
        return options is not None and options.enabled

    @property
    def sends_issuer(self) -> bool:
        """Whether every redirect back to a client carries `iss` (RFC 9207), so metadata may promise it.

        The endpoints add it to each redirect they make; a provider whose own
        pages send the person back says so with
        `authorization_response_iss_parameter_supported = True`.
        """
        return getattr(self.provider, "authorization_response_iss_parameter_supported", False) is True

    async def client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client with this id: a registered one (the provider's), or one described by its CIMD URL."""
        if self.documents is not None and self.documents.is_cimd_client_id(client_id):
            from .....auth.provider import AuthorizeError

            try:
                client = await self.documents.client(client_id)
                scope = registered_scope(client.scope, self.settings.client_registration_options)
            except AuthorizeError as refused:
                logger.info("refused a client metadata document (%s)", refused.error)
                return None
            except ValueError:
                logger.info("refused a client metadata document (a malformed scope)")
                return None
            return client.model_copy(update={"scope": scope})
        return await self.provider.get_client(client_id)


def registered_scope(requested: str | None, options: ClientRegistrationOptions | None) -> str | None:
    """The scope a client may ask for when it signs in, from the one it registered (or its document).

    With `valid_scopes`, any of them, whatever else it asked for (RFC 7591 §2 lets a server
    replace what a client asks): the person still decides, and a step-up needs no new
    registration. Without, what it asked for, else `default_scopes`, else none: the official
    SDK's rule, under which a client that registered nothing asks nothing. A malformed scope is
    a ValueError.
    """
    asked = [check_scope(s) for s in (requested or "").split(" ") if s]
    if options is not None and options.valid_scopes is not None:
        return " ".join(options.valid_scopes)
    if asked:
        return " ".join(asked)
    if options is not None and options.default_scopes is not None:
        return " ".join(options.default_scopes)
    return None


class BadRequest(Exception):
    """A request that cannot be read as one: the text is fixed by the caller and safe to show."""

    def __init__(self, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.description = description
        self.status = status


def parse_form(text: str) -> dict[str, str]:
    """`a=1&b=2` as a dict: a parameter given twice is refused, an empty one dropped (RFC 6749 §3.1)."""
    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FIELDS)
    except ValueError:
        raise BadRequest(f"the request carries more than {MAX_FIELDS} parameters") from None
    params: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in pairs:
        if name in seen:
            raise BadRequest("a parameter is given more than once")
        seen.add(name)
        if value:
            params[name] = value
    return params


async def read_body_bounded(request: Request) -> bytes:
    """The body, at most `MAX_BODY_BYTES`; `BadRequest` (413) past that."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        raise BadRequest(f"the request body is over {MAX_BODY_BYTES} bytes", 413)
    try:
        body = await read_body(request.receive, MAX_BODY_BYTES, None)
    except ClientGone:
        raise BadRequest("the client went away") from None
    if body is None:
        raise BadRequest(f"the request body is over {MAX_BODY_BYTES} bytes", 413)
    return body


async def read_form(request: Request) -> dict[str, str]:
    """The `application/x-www-form-urlencoded` body of a POST, parsed by `parse_form`."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise BadRequest("the body must be application/x-www-form-urlencoded", 415)
    body = await read_body_bounded(request)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not UTF-8") from None
    return parse_form(text)


def oauth_error(
    status: int, error: str, description: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    """An OAuth error answer (RFC 6749 §5.2) as JSON. `description` must be a server-made text."""
    body = {"error": error}
    if description:
        body["error_description"] = description
    return json_response(status, body, {**no_store(), **(headers or {})})


def store_unavailable(path: str, exc: BaseException) -> Response:
    """The 503 `temporarily_unavailable` for a request the store could not serve; logs what failed."""
    logger.warning(
        "the authorization endpoint %s refused a request: its store failed (%s)", path, type(exc).__name__
    )
    return oauth_error(
        503,
        "temporarily_unavailable",
        UNAVAILABLE,
        {"retry-after": str(RETRY_AFTER_S)},
    )


Handler = Callable[[Request], Awaitable[Response]]


class Endpoint:
    """An ASGI app running `handler` for `methods` only (405 otherwise), never leaking a failure.

    A class, not a closure, so that Starlette's `Route` treats it as an ASGI app.
    """

    def __init__(self, handler: Handler, methods: Sequence[str]) -> None:
        self.handler = handler
        self.methods = tuple(methods)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in self.methods:
            response: Response = oauth_error(
                405, "invalid_request", "method not allowed", {"allow": ", ".join(self.methods)}
            )
        else:
            try:
                response = await self.handler(Request(scope, receive))
            except BadRequest as bad:
                response = oauth_error(bad.status, "invalid_request", bad.description)
            except STORE_FAILURES as exc:
                response = store_unavailable(scope.get("path", ""), exc)
            except TemporarilyUnavailable as exc:
                logger.warning(
                    "the authorization endpoint %s refused a request: %s", scope.get("path"), exc.description
                )
                response = oauth_error(
                    503, "temporarily_unavailable", exc.description, {"retry-after": str(RETRY_AFTER_S)}
                )
            except Exception as exc:  # never a stack trace, never the exception's text (it may hold a token)
                logger.error(
                    "the authorization endpoint %s failed (%s)", scope.get("path"), type(exc).__name__
                )
                response = PlainTextResponse(
                    "The authorization server failed; try again later.", 500, headers=no_store()
                )
        await response(scope, receive, send)
