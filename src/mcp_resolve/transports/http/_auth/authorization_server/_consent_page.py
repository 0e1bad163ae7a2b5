"""GET and POST /consent: the page a person approves a client on, before the proxy sends them upstream.

GET renders the page for a pending transaction (or, when this browser already gave the same client
the same approval (`approval_of`) and the operator allows remembering, decides at once and redirects). POST
takes the form: the CSRF token must match the transaction and this browser's cookie, and a browser
that says the form came from another origin (`Sec-Fetch-Site`) is refused as well. Approve and
Deny both answer 303 to the URL the flow decides (upstream's authorize URL, or the client's
redirect URI with `access_denied`). When the flow cannot decide (the upstream cannot be reached, say),
the person gets its error page (`PageError`: 503 for an upstream that is down), never a 500.

Every answer forbids framing and caching and sends no referrer (`_pages`, which the callback
page shares, with failing closed when the store cannot serve). The page's CSP allows no script,
no image, no frame and no base URL. It has no `form-action`: browsers apply that directive to the
redirects that follow a form POST too (Chromium blocks the 303 to the upstream under
`form-action 'self'`, as tests/transports/http/test_consent_page_browser.py shows), and the
upstream's and the client's origins are not the page's to know. With every value escaped and no
script, nothing can inject a form aimed elsewhere.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from .....auth.proxy.pages import (
    BROWSER_COOKIE,
    REMEMBER_COOKIE,
    ConsentFlow,
    ConsentGuard,
    PageError,
    approval_of,
    render_consent,
)
from ..._wire.body import ClientGone, read_body
from ._pages import browser_of, cookie_name, error_page, failing_closed, page_error, page_headers

__all__ = ["consent_routes"]

_MAX_BODY = 4096
"""A consent form is three short fields."""
_MAX_FIELDS = 8
_MAX_TXN = 512
_FORM = "application/x-www-form-urlencoded"
_EXPIRED = (
    "This sign-in has expired or was already used",
    "Go back to your application and start signing in again.",
)
_REFUSED = (
    "Request refused",
    "This form was not sent from this page in this browser. Go back to your application and start "
    "signing in again.",
)


def _error(status: int, title: str, message: str) -> Response:
    return error_page(status, title, message)


def _set_cookie(response: Response, request: Request, name: str, value: str, max_age: int) -> None:
    cookie, secure = cookie_name(request, name)
    response.set_cookie(
        cookie, value, max_age=max_age, path="/", secure=secure, httponly=True, samesite="lax"
    )


def _redirect(url: str) -> Response:
    return RedirectResponse(url, status_code=303, headers=page_headers())


def _valid_txn(txn: str | None) -> bool:
    return bool(txn) and len(txn or "") <= _MAX_TXN and (txn or "").isascii() and (txn or "").isprintable()


class _Consent:
    """The endpoint's state: the flow and where the page is served."""

    def __init__(self, flow: ConsentFlow, path: str) -> None:
        self.flow = flow
        self.path = path

    @property
    def guard(self) -> ConsentGuard:
        return self.flow.consent

    async def __call__(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.post(request)
        return await self.get(request)

    async def get(self, request: Request) -> Response:
        txn = request.query_params.get("txn")
        if not _valid_txn(txn):
            return _error(400, "Bad request", "This address is missing its sign-in request.")
        assert txn is not None
        view = await self.flow.consent_view(txn)
        if view is None:
            return _error(404, *_EXPIRED)
        remembered = request.cookies.get(cookie_name(request, REMEMBER_COOKIE)[0])
        # A remembered approval decides only on a top-level navigation (what a person's browser does
        # when the application opens the sign-in), never for an embedded or scripted fetch.
        navigating = request.headers.get("sec-fetch-mode", "navigate") == "navigate"
        browser = browser_of(request)
        fresh = not self.guard.is_browser(browser)
        if fresh:
            browser = self.guard.new_browser()
        assert browser is not None
        response: Response
        if navigating and self.guard.remembered(remembered, view.client_id, approval_of(view)):
            try:
                response = _redirect(await self.flow.decide(txn, True, browser=browser))
            except LookupError:
                return _error(404, *_EXPIRED)
            except PageError as error:
                return page_error(error)
        else:
            page = render_consent(
                view, txn=txn, csrf=self.guard.csrf(txn, browser), action=self.action(request)
            )
            response = HTMLResponse(page, headers=page_headers())
        if fresh:
            # A session cookie: the CSRF binding needs it while this page is open, and the upstream's
            # answer must come back to the browser that decided (the callback checks it).
            cookie, secure = cookie_name(request, BROWSER_COOKIE)
            response.set_cookie(cookie, browser, path="/", secure=secure, httponly=True, samesite="lax")
        return response

    def action(self, request: Request) -> str:
        """The form's target: this page's own path under the app's root path."""
        return request.scope.get("root_path", "").rstrip("/") + self.path

    async def post(self, request: Request) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != _FORM:
            return _error(415, "Bad request", "The consent form is sent as an HTML form.")
        try:
            body = await read_body(
                request.receive, _MAX_BODY, request.headers.get("content-length", "").encode() or None
            )
        except ClientGone:
            return Response(status_code=400)
        if body is None:
            return _error(413, "Bad request", "The form is too large.")
        fields = _fields(body)
        if fields is None:
            return _error(400, "Bad request", "The form is malformed.")
        txn, token, decision = fields.get("txn"), fields.get("csrf", ""), fields.get("decision")
        if not _valid_txn(txn) or decision not in ("approve", "deny"):
            return _error(400, "Bad request", "The form is malformed.")
        assert txn is not None
        site = request.headers.get("sec-fetch-site")
        browser = browser_of(request) or ""
        if (site is not None and site != "same-origin") or not self.guard.check_csrf(txn, browser, token):
            return _error(403, *_REFUSED)
        view = await self.flow.consent_view(txn)
        if view is None:
            return _error(404, *_EXPIRED)
        approve = decision == "approve"
        try:
            url = await self.flow.decide(txn, approve, browser=browser)
        except LookupError:
            return _error(404, *_EXPIRED)
        except PageError as error:  # the upstream cannot be reached (503), or the sign-in ended meanwhile
            return page_error(error)
        response = _redirect(url)
        if approve and self.guard.remembers:
            remembered = request.cookies.get(cookie_name(request, REMEMBER_COOKIE)[0])
            value = self.guard.remember(remembered, view.client_id, approval_of(view))
            _set_cookie(response, request, REMEMBER_COOKIE, value, int(self.guard.remember_s))
        return response


def _fields(body: bytes) -> dict[str, str] | None:
    """The form's fields, each given once; None for a body that is not a small urlencoded form."""
    try:
        text = body.decode("ascii")
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text), max_num_fields=_MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        return None
    fields: dict[str, str] = {}
    for name, value in pairs:
        if name in fields:
            return None
        fields[name] = value
    return fields


def consent_routes(flow: ConsentFlow, path: str = "/consent") -> list[Route]:
    """The consent page at `path` (GET renders, POST decides) over `flow` (the proxy)."""
    endpoint = _Consent(flow, path)

    async def consent(request: Request) -> Response:
        return await endpoint(request)

    return [Route(path, failing_closed(consent), methods=["GET", "POST"], name="consent")]
