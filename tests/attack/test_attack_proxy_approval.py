"""An approval cannot be carried to another browser: the upstream's answer must come back through
the browser that approved at the consent page.

The attack: someone registers a client whose redirect URI they own, starts a sign-in, approves it
on the proxy's consent page in their own browser, and stops at the redirect to the upstream. They
send that upstream link to a person who is signed in at the upstream; the upstream sends that
person's browser back to the proxy's callback with a code for *the person's* account. Without the
binding, the proxy would make a code for the attacker's client from the person's identity.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import pytest

from proxy_helpers import READ, ConsentForm, proxied_desk

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ATTACKER_REDIRECT = "http://127.0.0.1:9/attacker/callback"


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


async def _upstream_link(base: str, resource: str) -> str:
    """The attacker's half: register, authorize, approve on the consent page; the upstream URL."""
    async with httpx.AsyncClient(timeout=10, follow_redirects=False) as attacker:
        registered = await attacker.post(
            f"{base}/register",
            json={
                "redirect_uris": [ATTACKER_REDIRECT],
                "token_endpoint_auth_method": "none",
                "client_name": "Innocent",
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": ATTACKER_REDIRECT,
            "code_challenge": _challenge(secrets.token_urlsafe(32)),
            "code_challenge_method": "S256",
            "state": "s",
            "scope": READ,
            "resource": resource,
        }
        consent_url = urljoin(
            base, (await attacker.get(f"{base}/authorize?{urlencode(query)}")).headers["location"]
        )
        page = await attacker.get(consent_url)
        form = ConsentForm.read(page.text)
        assert form.action is not None
        decided = await attacker.post(
            urljoin(consent_url, form.action), data={**form.fields, "decision": "approve"}
        )
        assert decided.status_code == 303
        return decided.headers["location"]


async def test_an_approval_carried_to_another_browser_is_refused() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url):
        base = url.removesuffix("/mcp")
        link = await _upstream_link(base, url)
        # The person, signed in at the upstream, follows the link in their own browser.
        async with httpx.AsyncClient(timeout=10, follow_redirects=False) as person:
            response = await person.get(link)
            for _hop in range(10):
                if not response.is_redirect:
                    break
                target = urljoin(str(response.url), response.headers["location"])
                assert not target.startswith(ATTACKER_REDIRECT), "the attacker's client got a code"
                response = await person.get(target)
        assert urlsplit(str(response.url)).path == proxy.callback_path
        assert response.status_code == 403
        assert "another browser" in response.text
        assert "code=" not in response.headers.get("location", "")
        await proxy.aclose()


async def test_the_browser_that_approved_finishes_the_sign_in() -> None:
    """The control: the same steps in one browser (one cookie jar) reach the client with a code."""
    async with proxied_desk("oidc") as (_upstream, proxy, url):
        base = url.removesuffix("/mcp")
        async with httpx.AsyncClient(timeout=10, follow_redirects=False) as browser:
            registered = await browser.post(
                f"{base}/register",
                json={"redirect_uris": [ATTACKER_REDIRECT], "token_endpoint_auth_method": "none"},
            )
            query = {
                "response_type": "code",
                "client_id": registered.json()["client_id"],
                "redirect_uri": ATTACKER_REDIRECT,
                "code_challenge": _challenge(secrets.token_urlsafe(32)),
                "code_challenge_method": "S256",
                "state": "s",
                "resource": url,
            }
            target = urljoin(
                base, (await browser.get(f"{base}/authorize?{urlencode(query)}")).headers["location"]
            )
            page = await browser.get(target)
            form = ConsentForm.read(page.text)
            assert form.action is not None
            response = await browser.post(
                urljoin(target, form.action), data={**form.fields, "decision": "approve"}
            )
            for _hop in range(10):
                target = urljoin(str(response.url), response.headers["location"])
                if target.startswith(ATTACKER_REDIRECT):
                    break
                response = await browser.get(target)
        landed = parse_qs(urlsplit(target).query)
        assert landed["code"] and landed["state"] == ["s"] and landed["iss"] == [base]
        await proxy.aclose()
