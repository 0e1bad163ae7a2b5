"""What the proxy's pages share: their headers, their error page, the browser's cookie, failing closed.

The consent page (`_consent_page`) and the upstream's way back (`_proxy_pages`)
are pages a person's browser shows, not OAuth endpoints a client reads, so
their errors are HTML pages, and every answer forbids framing, caching and
referrers. Both fail closed the same way (`failing_closed`): with the store
full or down the person is told to try again in a moment (503, `Retry-After`);
anything else unexpected is a plain 500 page. Neither shows or logs more than
the exception's type: no trace, no backend address, nothing the request carried.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .....auth.proxy.pages import BROWSER_COOKIE, PageError, render_error
from ._common import RETRY_AFTER_S, STORE_FAILURES

__all__ = [
    "SECURITY_HEADERS",
    "Page",
    "browser_of",
    "cookie_name",
    "error_page",
    "failing_closed",
    "page_error",
    "page_headers",
]

logger = logging.getLogger("mcp_resolve.auth")

Page = Callable[[Request], Awaitable[Response]]

SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def page_headers(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**SECURITY_HEADERS, **(extra or {})}


def error_page(status: int, title: str, message: str, extra: Mapping[str, str] | None = None) -> Response:
    return HTMLResponse(render_error(title, message), status_code=status, headers=page_headers(extra))


def page_error(error: PageError) -> Response:
    """The page a person sees when the proxy cannot go on (expired, another browser, upstream down ...)."""
    return error_page(error.status, error.title, error.message)


def cookie_name(request: Request, name: str) -> tuple[str, bool]:
    """The cookie's name and Secure flag: `__Host-` and Secure over https (the browser then refuses
    it from any other host or path), the plain name over http (loopback development)."""
    secure = request.url.scheme == "https"
    return (f"__Host-{name}" if secure else name), secure


def browser_of(request: Request) -> str | None:
    """The per-browser cookie the consent page set (None when this browser has none)."""
    return request.cookies.get(cookie_name(request, BROWSER_COOKIE)[0])


def failing_closed(page: Page) -> Page:
    """`page`, answering an error page instead of raising: 503 when the store cannot serve, 500 for
    anything else; the exception's type is logged, nothing more."""

    async def guarded(request: Request) -> Response:
        try:
            return await page(request)
        except STORE_FAILURES as exc:
            logger.warning(
                "the page %s failed: its store did not serve (%s)", request.url.path, type(exc).__name__
            )
            return error_page(
                503,
                "Sign-in unavailable",
                "Signing in is unavailable for a moment. Try again shortly.",
                {"retry-after": str(RETRY_AFTER_S)},
            )
        except Exception as exc:  # never a stack trace, never the exception's text
            logger.error("the page %s failed (%s)", request.url.path, type(exc).__name__)
            return error_page(500, "Sign-in failed", "Something went wrong on this server. Try again later.")

    return guarded
