"""The pages only an `OAuthProxy` has: where the upstream sends the person back, and its public keys.

`/auth/callback` ends the person's trip upstream: the proxy turns the
upstream's code into a code of its own for the client, and the person is
sent on to the client's redirect URI (or, when the request is unknown or
expired, shown a page saying so: there is no client to trust with an
error). `/.well-known/jwks.json` publishes the keys that verify the proxy's
access tokens, for any other resource server that wants to accept them.
The consent page is `_consent_page`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .....auth.proxy.pages import PageError, render_error
from .....errors import MCPError

if TYPE_CHECKING:
    from .....auth.proxy.pages import ProxiesUpstream

__all__ = ["page_failure", "proxy_page_routes"]

logger = logging.getLogger("mcp_resolve.auth")

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


def page_failure(page: str, exc: Exception) -> PageError:
    """The page for a failure nobody planned for (the store full or down, a bug): its type is logged,
    never its text or a stack trace (either may hold a token); the person is told to try again."""
    logger.error("the %s page failed (%s)", page, type(exc).__name__)
    return PageError(
        "Sign-in unavailable",
        "The sign-in could not be completed right now. Go back to your app and try again later.",
        status=503 if isinstance(exc, MCPError) else 500,
    )


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
        except Exception as exc:
            return _page(page_failure("sign-in callback", exc))
        return RedirectResponse(url, status_code=302, headers=_NO_STORE)

    async def jwks(request: Request) -> Response:
        return JSONResponse(
            await proxy.jwks(),
            headers={"cache-control": "public, max-age=300", "access-control-allow-origin": "*"},
        )

    return [
        Route(proxy.callback_path, callback, methods=["GET"]),
        Route("/.well-known/jwks.json", jwks, methods=["GET"]),
    ]
