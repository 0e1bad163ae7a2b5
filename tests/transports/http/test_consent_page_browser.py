"""The consent page in a real browser: Debian's Chromium, headless, driven by Playwright.

A uvicorn app on loopback serves `consent_routes` over a small `ConsentFlow` in memory
(tests/consent_helpers.py: approving sends the browser to an "upstream" page, denying to the
client's redirect URI with `access_denied`), both landing pages on a second loopback server. The browser
shows the page, approves and denies, and is refused when the form comes from elsewhere: a token
copied into another browser, a missing token, a form on another site or another port posting by
itself. An approval is remembered when the guard allows it and not otherwise, and a hostile client
name runs nothing. The same tests can be pointed at the real OAuthProxy: they need only
`consent_routes(flow)` and a way to start a transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route

from browser_helpers import chromium_browser, new_context
from consent_helpers import MemoryConsentFlow
from http_helpers import serving
from mcp_resolve.auth.proxy.pages import ConsentGuard, ConsentView
from mcp_resolve.transports.http._auth.authorization_server._consent_page import consent_routes

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SECRET = b"browser-tests-consent-secret-0123"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-scoped, so the one browser below is shared by the module's tests."""
    return "asyncio"


@dataclass
class Site:
    consent: str  # the consent server, http://127.0.0.1:PORT
    other: str  # the landing pages and the attacker's, another port
    remembering: MemoryConsentFlow
    forgetting: MemoryConsentFlow

    def view(self, **changes: Any) -> ConsentView:
        fields: dict[str, Any] = {
            "client_id": "client-1",
            "client_name": "Inspector Gadget",
            "redirect_uri": f"{self.other}/client/callback",
            "scopes": ("repo:read", "user:email"),
            "resource": f"{self.consent}/mcp",
            "upstream": "GitHub",
        }
        fields.update(changes)
        return ConsentView(**fields)

    def page(self, flow: MemoryConsentFlow, txn: str) -> str:
        path = "/consent" if flow is self.remembering else "/consent-off"
        return f"{self.consent}{path}?{urlencode({'txn': txn})}"


async def _landing(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"landed at {request.url.path}")


async def _attack(request: Request) -> HTMLResponse:
    """A page on another origin that posts the consent form by itself (it may run script: it is not ours)."""
    fields = "".join(
        f'<input type="hidden" name="{name}" value="{request.query_params[name]}">'
        for name in ("txn", "csrf", "decision")
        if name in request.query_params
    )
    return HTMLResponse(
        f'<form method="post" action="{request.query_params["target"]}">{fields}</form>'
        "<script>document.forms[0].submit()</script>"
    )


async def _frame(request: Request) -> HTMLResponse:
    return HTMLResponse(f'<iframe src="{request.query_params["src"]}" width=600 height=400></iframe>')


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    remembering = MemoryConsentFlow(ConsentGuard(SECRET))
    forgetting = MemoryConsentFlow(ConsentGuard(SECRET, remember=False))
    consent_app = Starlette(
        routes=[*consent_routes(remembering), *consent_routes(forgetting, "/consent-off")]
    )
    other_app = Starlette(
        routes=[
            Route("/upstream/authorize", _landing),
            Route("/client/callback", _landing),
            Route("/attack", _attack),
            Route("/frame", _frame),
        ]
    )
    with serving(consent_app) as consent, serving(other_app) as other:
        remembering.landing = forgetting.landing = other
        yield Site(consent, other, remembering, forgetting)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    async with chromium_browser() as launched:
        yield launched


class Watch:
    """What a page did that it should not: dialogs opened, console messages, requests off loopback."""

    def __init__(self, page: Any) -> None:
        self.dialogs: list[str] = []
        self.console: list[str] = []

        async def dismiss(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            await dialog.dismiss()

        page.on("dialog", dismiss)
        page.on("console", lambda message: self.console.append(message.text))


async def test_the_page_shows_the_client_its_redirect_host_and_scopes(
    site: Site, browser: Any, tmp_path: Path
) -> None:
    txn = site.remembering.start(site.view())
    async with new_context(browser) as context:
        page = await context.new_page()
        watch = Watch(page)
        response = await page.goto(site.page(site.remembering, txn))
        assert response is not None and response.status == 200
        headers = response.headers
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
        assert headers["referrer-policy"] == "no-referrer"
        assert await page.locator("h1").inner_text() == "Inspector Gadget wants to sign you in with GitHub"
        host = site.other.removeprefix("http://")
        assert await page.locator(".target strong").inner_text() == host
        body = await page.locator("body").inner_text()
        for shown in (
            "repo:read",
            "user:email",
            f"{site.consent}/mcp",
            "client-1",
            f"{site.other}/client/callback",
        ):
            assert shown in body
        assert await page.get_by_role("button", name="Approve").is_visible()
        assert await page.get_by_role("button", name="Deny").is_visible()
        shot = tmp_path / "consent.png"
        await page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000
        cookies = {c["name"]: c for c in await context.cookies()}
        browser_cookie = cookies["mcp_consent_browser"]
        assert (
            browser_cookie["httpOnly"]
            and browser_cookie["sameSite"] == "Lax"
            and browser_cookie["path"] == "/"
        )
        assert watch.dialogs == [] and watch.console == []
    assert site.remembering.decided == []


async def test_approve_lands_on_the_url_the_flow_decides(site: Site, browser: Any) -> None:
    # The flow sends the browser to another origin: a `form-action 'self'` CSP would block this
    # redirect in Chromium (it applies the directive to the redirects after a POST).
    txn = site.forgetting.start(site.view())
    async with new_context(browser) as context:
        page = await context.new_page()
        await page.goto(site.page(site.forgetting, txn))
        await page.get_by_role("button", name="Approve").click()
        await page.wait_for_url(f"{site.other}/upstream/authorize?*")
        assert page.url == f"{site.other}/upstream/authorize?{urlencode({'state': txn})}"
        assert await page.locator("body").inner_text() == "landed at /upstream/authorize"
    assert site.forgetting.decided[-1] == (txn, True)


async def test_deny_lands_on_the_clients_error_redirect(site: Site, browser: Any) -> None:
    txn = site.remembering.start(site.view())
    async with new_context(browser) as context:
        page = await context.new_page()
        await page.goto(site.page(site.remembering, txn))
        await page.get_by_role("button", name="Deny").click()
        await page.wait_for_url(f"{site.other}/client/callback?*")
        assert page.url == f"{site.other}/client/callback?error=access_denied&state=client-state"
        # Denying remembers nothing: the next sign-in of the same client shows the page again.
        again = site.remembering.start(site.view())
        response = await page.goto(site.page(site.remembering, again))
        assert response is not None and response.url.startswith(site.consent)
        assert await page.get_by_role("button", name="Approve").is_visible()
    assert (txn, False) in site.remembering.decided
    assert all(t != again for t, _ in site.remembering.decided)


async def test_a_token_from_another_browser_or_none_is_refused(site: Site, browser: Any) -> None:
    txn = site.remembering.start(site.view())
    async with new_context(browser) as victim, new_context(browser) as other:
        victim_page = await victim.new_page()
        await victim_page.goto(site.page(site.remembering, txn))
        token = await victim_page.locator("input[name=csrf]").get_attribute("value")
        assert token

        page = await other.new_page()
        await page.goto(site.page(site.remembering, txn))
        own = await page.locator("input[name=csrf]").get_attribute("value")
        assert own and own != token  # bound to each browser's cookie
        await page.locator("input[name=csrf]").evaluate("(input, value) => { input.value = value }", token)
        async with page.expect_response(lambda r: r.request.method == "POST") as posted:
            await page.get_by_role("button", name="Approve").click()
        assert (await posted.value).status == 403
        assert "Request refused" in await page.locator("h1").inner_text()

        await page.goto(site.page(site.remembering, txn))
        await page.locator("input[name=csrf]").evaluate("input => input.remove()")
        async with page.expect_response(lambda r: r.request.method == "POST") as posted:
            await page.get_by_role("button", name="Approve").click()
        assert (await posted.value).status == 403
        assert site.remembering.decided == [] or all(t != txn for t, _ in site.remembering.decided)

        # The victim's own page still works: nothing was consumed by the refusals.
        await victim_page.get_by_role("button", name="Approve").click()
        await victim_page.wait_for_url(f"{site.other}/upstream/authorize?*")
    assert (txn, True) in site.remembering.decided


@pytest.mark.parametrize("origin", ["another site (localhost)", "another port of the same host"])
async def test_a_form_posted_from_elsewhere_is_refused(site: Site, browser: Any, origin: str) -> None:
    """The person has the page open; a page elsewhere posts Approve for the same transaction.

    From another site the browser sends no cookie (SameSite=Lax); from another port of the same
    host it does, and even with the person's real token the form's origin gives it away."""
    txn = site.remembering.start(site.view())
    async with new_context(browser) as context:
        page = await context.new_page()
        await page.goto(site.page(site.remembering, txn))
        token = await page.locator("input[name=csrf]").get_attribute("value")
        assert token
        attacker = site.other if "port" in origin else site.other.replace("127.0.0.1", "localhost")
        query = urlencode(
            {"target": f"{site.consent}/consent", "txn": txn, "csrf": token, "decision": "approve"}
        )
        evil = await context.new_page()
        async with evil.expect_response(lambda r: r.request.method == "POST") as posted:
            await evil.goto(f"{attacker}/attack?{query}")
        assert (await posted.value).status == 403
        await evil.wait_for_load_state()
        assert "Request refused" in await evil.locator("h1").inner_text()
        assert all(t != txn for t, _ in site.remembering.decided)
        assert txn in site.remembering.pending


async def test_the_page_cannot_be_framed(site: Site, browser: Any) -> None:
    txn = site.remembering.start(site.view())
    async with new_context(browser) as context:
        page = await context.new_page()
        await page.goto(f"{site.other}/frame?{urlencode({'src': site.page(site.remembering, txn)})}")
        await page.wait_for_load_state()
        frame = page.frames[1]
        assert await frame.locator("button").count() == 0


async def test_a_remembered_approval_skips_the_page_only_when_enabled(site: Site, browser: Any) -> None:
    async with new_context(browser) as context:
        page = await context.new_page()
        for flow in (site.remembering, site.forgetting):
            first = flow.start(site.view(client_id="client-remember"))
            await page.goto(site.page(flow, first))
            await page.get_by_role("button", name="Approve").click()
            await page.wait_for_url(f"{site.other}/upstream/authorize?*")

        # Remembered: the second sign-in of the same client and redirect URI goes straight upstream.
        second = site.remembering.start(site.view(client_id="client-remember"))
        await page.goto(site.page(site.remembering, second))
        assert page.url == f"{site.other}/upstream/authorize?{urlencode({'state': second})}"
        assert site.remembering.decided[-1] == (second, True)

        # The same client with another redirect URI, or another client: the page again.
        for view in (
            site.view(client_id="client-remember", redirect_uri=f"{site.other}/client/elsewhere"),
            site.view(client_id="client-other"),
        ):
            txn = site.remembering.start(view)
            await page.goto(site.page(site.remembering, txn))
            assert page.url.startswith(f"{site.consent}/consent?")
            assert await page.get_by_role("button", name="Approve").is_visible()

        # Remembering off: the page every time, although this browser holds a valid cookie.
        cookies = {c["name"] for c in await context.cookies()}
        assert "mcp_consent" in cookies
        again = site.forgetting.start(site.view(client_id="client-remember"))
        await page.goto(site.page(site.forgetting, again))
        assert page.url.startswith(f"{site.consent}/consent-off?")
        assert await page.get_by_role("button", name="Approve").is_visible()
        assert all(t != again for t, _ in site.forgetting.decided)


async def test_a_hostile_client_name_runs_nothing(site: Site, browser: Any) -> None:
    hostile = "<script>alert('name')</script><img src=x onerror=\"alert('img')\"><b>Bold</b>"
    view = site.view(
        client_name=hostile,
        client_id='"><script>console.log(1)</script>',
        redirect_uri=f"{site.other}/client/callback?x=\"><svg onload=alert('uri')>",
        scopes=("<iframe src=javascript:alert('scope')>",),
    )
    txn = site.remembering.start(view)
    async with new_context(browser) as context:
        page = await context.new_page()
        watch = Watch(page)
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        await page.goto(site.page(site.remembering, txn))
        await page.wait_for_load_state("networkidle")
        assert hostile in await page.locator("h1").inner_text()  # shown as text, not markup
        assert await page.locator("script, img, svg, iframe, b").count() == 0
        assert watch.dialogs == [] and watch.console == []
        assert requests == [site.page(site.remembering, txn)]
        await page.get_by_role("button", name="Deny").click()
        await page.wait_for_url(f"{site.other}/client/callback?*")
        assert watch.dialogs == []
