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
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from .....auth.proxy.pages import PageError
from ._common import RETRY_AFTER_S, STORE_FAILURES, oauth_error
from ._pages import browser_of, failing_closed, page_error

if TYPE_CHECKING:
    from .....auth.proxy.pages import ProxiesUpstream

__all__ = ["proxy_page_routes"]

logger = logging.getLogger("mcp_resolve.auth")

_NO_STORE = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
_CALLBACK_PARAMS = ("state", "code", "error", "error_description")
_MAX_PARAM = 2048


def proxy_page_routes(proxy: ProxiesUpstream) -> list[Route]:
    """The callback and JWKS routes of `proxy`, at its `callback_path` and the well-known path."""

    async def callback(request: Request) -> Response:
        values: dict[str, str | None] = {}
        for name in _CALLBACK_PARAMS:
            given = request.query_params.getlist(name)
            if len(given) > 1 or any(len(value) > _MAX_PARAM for value in given):
                return page_error(
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
                browser=browser_of(request),
            )
        except PageError as error:
            return page_error(error)
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
            keys,
            headers={"cache-control": "public, max-age=300", "access-control-allow-origin": "*"},
        )

    return [
        Route(proxy.callback_path, failing_closed(callback), methods=["GET"]),
        Route("/.well-known/jwks.json", jwks, methods=["GET"]),
    ]
