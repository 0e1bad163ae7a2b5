"""The pages only an `OAuthProxy` has: where the upstream sends the person back, and its public keys.

`/auth/callback` ends the person's trip upstream: the proxy turns the
upstream's code into a code of its own for the client, and the person is
sent on to the client's redirect URI (or, when the request is unknown or
expired, shown a page saying so: there is no client to trust with an
error). `/.well-known/jwks.json` publishes the keys that verify the proxy's
access tokens, for any other resource server that wants to accept them.
The consent page is `_consent_page`.

Every page fails closed (`failing_closed`): with the store down, the person
is told to try again in a moment (503); anything else unexpected is a plain
error page. Neither shows or logs more than the exception's type: no trace,
no backend address, nothing the request carried.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .....auth.proxy.pages import PageError, render_error
from ._common import RETRY_AFTER_S, STORE_FAILURES, oauth_error

if TYPE_CHECKING:
    from .....auth.proxy.pages import ProxiesUpstream

__all__ = ["failing_closed", "proxy_page_routes"]

logger = logging.getLogger("mcp_resolve.auth")

Page = Callable[[Request], Awaitable[Response]]

_NO_STORE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
_PAGE_HEADERS = {
    **_NO_STORE,
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "x-frame-options": "DENY",
}
_CALLBACK_PARAMS = ("state", "code", "error", "error_description")
_MAX_PARAM = 2048


def _page(error: PageError) -> Response:
    return HTMLResponse(
        render_error(error.title, error.message), status_code=error.status, headers=_PAGE_HEADERS
    )


def failing_closed(page: Page, headers: Mapping[str, str]) -> Page:
    """`page`, answering an error page (with `headers`) instead of raising: 503 when the store
    cannot serve, 500 for anything else; the exception's type is logged, nothing more."""

    async def guarded(request: Request) -> Response:
        try:
            return await page(request)
        except STORE_FAILURES as exc:
            logger.warning(
                "the page %s failed: its store did not serve (%s)", request.url.path, type(exc).__name__
            )
            return HTMLResponse(
                render_error(
                    "Sign-in unavailable", "Signing in is unavailable for a moment. Try again shortly."
                ),
                status_code=503,
                headers={**headers, "retry-after": str(RETRY_AFTER_S)},
            )
        except Exception as exc:  # never a stack trace, never the exception's text
            logger.error("the page %s failed (%s)", request.url.path, type(exc).__name__)
            return HTMLResponse(
                render_error("Sign-in failed", "Something went wrong on this server. Try again later."),
                status_code=500,
                headers=dict(headers),
            )

    return guarded


def proxy_page_routes(proxy: ProxiesUpstream) -> list[Route]:
    """The callback and JWKS routes of `proxy`, at its `callback_path` and the well-known path."""

    async def callback(request: Request) -> Response:
        values: dict[str, str | None] = {}
        for name in _CALLBACK_PARAMS:
            given = request.query_params.getlist(name)
            if len(given) > 1 or any(len(value) > _MAX_PARAM for value in given):
                return _page(
                    PageError(
                        "Sign-in failed", "The sign-in response was malformed. Start again from your app."
                    )
                )
            values[name] = given[0] if given else None
        try:
            url = await proxy.upstream_returned(
                state=values["state"],
                code=values["code"],
                error=values["error"],
                error_description=values["error_description"],
            )
        except PageError as error:
            return _page(error)
        return RedirectResponse(url, status_code=302, headers=_NO_STORE)

    async def jwks(request: Request) -> Response:
        try:
            keys = await proxy.jwks()
        except STORE_FAILURES as exc:
            logger.warning("the JWKS could not be read: its store did not serve (%s)", type(exc).__name__)
            return oauth_error(
                503,
                "temporarily_unavailable",
                "the keys cannot be read now; try again shortly",
                {"retry-after": str(RETRY_AFTER_S)},
            )
        return JSONResponse(
            keys, headers={"cache-control": "public, max-age=300", "access-control-allow-origin": "*"}
        )

    return [
        Route(proxy.callback_path, failing_closed(callback, _PAGE_HEADERS), methods=["GET"]),
        Route("/.well-known/jwks.json", jwks, methods=["GET"]),
    ]
