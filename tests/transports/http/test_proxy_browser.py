"""The real OAuthProxy sign-in in a real browser: Chromium (Debian's, headless) driven by Playwright.

The desk of tests/proxy_helpers.py runs behind an `OIDCProxy` whose upstream is
oidc-provider on loopback; a tiny loopback page stands for the client's redirect
URI. A client registers with DCR (over httpx) and makes a PKCE authorization URL;
the browser opens it, is shown the proxy's consent page (the client's name, its
redirect host, the scopes), clicks Approve, passes the upstream's scripted login
and lands on the client's page with `code`, `state` and `iss`, and the code buys
tokens. In a fresh browser, Deny lands there with `access_denied` instead.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from browser_helpers import chromium_browser, new_context, require_chromium
from http_helpers import http_server
from proxy_helpers import READ, WRITE, proxied_desk

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


async def _landing(request: Request) -> HTMLResponse:
    return HTMLResponse("<!doctype html><title>App</title><p>Back in the app.</p>")


def _authorization_url(base: str, client_id: str, redirect_uri: str) -> tuple[str, str, str]:
    """(URL, state, PKCE verifier) of an authorization request for both desk scopes."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    state = secrets.token_urlsafe(12)
    query = {
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "code_challenge": challenge.decode(),
        "code_challenge_method": "S256",
        "state": state,
        "scope": f"{READ} {WRITE}",
        "resource": f"{base}/mcp",
    }
    return f"{base}/authorize?{urlencode(query)}", state, verifier


async def test_a_person_approves_and_denies_through_the_real_proxy_in_chromium(tmp_path: Path) -> None:
    require_chromium()
    landing = Starlette(routes=[Route("/callback", _landing)])
    async with (
        http_server(landing) as app_url,
        proxied_desk("oidc") as (_upstream, proxy, mcp_url),
        httpx.AsyncClient(timeout=10) as http,
        chromium_browser() as browser,
    ):
        base = mcp_url.rsplit("/", 1)[0]
        redirect_uri = f"{app_url.rstrip('/')}/callback"
        registered = await http.post(
            f"{base}/register",
            json={
                "redirect_uris": [redirect_uri],
                "client_name": "Browser Test App",
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]

        url, state, verifier = _authorization_url(base, client_id, redirect_uri)
        async with new_context(browser) as context:
            page = await context.new_page()
            response = await page.goto(url)
            assert response is not None and response.status == 200
            assert urlsplit(page.url).path == "/consent"
            body = await page.locator("body").inner_text()
            redirect_host = urlsplit(redirect_uri).netloc
            for shown in ("Browser Test App", redirect_host, READ, WRITE):
                assert shown in body, (shown, body)
            shot = tmp_path / "proxy-consent.png"
            await page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000

            await page.get_by_role("button", name="Approve").click()
            await page.wait_for_url(f"{redirect_uri}?*", timeout=15_000)
            back = dict(parse_qsl(urlsplit(page.url).query))
            assert back.keys() >= {"code", "state", "iss"}, back
            assert back["state"] == state and back["iss"] == base
            assert "error" not in back
            assert await page.locator("p").inner_text() == "Back in the app."

        tokens = await http.post(
            f"{base}/token",
            data={
                "grant_type": "authorization_code",
                "client_id": client_id,
                "code": back["code"],
                "code_verifier": verifier,
                "redirect_uri": redirect_uri,
            },
        )
        assert tokens.status_code == 200, tokens.text
        assert set(tokens.json()["scope"].split()) == {READ, WRITE}

        # A fresh browser (no remembered approval) denies: back to the app with access_denied.
        url, state, _verifier = _authorization_url(base, client_id, redirect_uri)
        async with new_context(browser) as context:
            page = await context.new_page()
            await page.goto(url)
            assert urlsplit(page.url).path == "/consent"
            await page.get_by_role("button", name="Deny").click()
            await page.wait_for_url(f"{redirect_uri}?*", timeout=15_000)
            back = dict(parse_qsl(urlsplit(page.url).query))
            assert back["error"] == "access_denied" and back["state"] == state and back["iss"] == base
            assert "code" not in back
        await proxy.aclose()
