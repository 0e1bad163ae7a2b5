"""The proxy's endpoints and pages when its store cannot serve: a clear 503, never a token, trace or secret.

The store is real: Redis (a redis-server started here, then stopped in the
middle of a sign-in) or the memory store at its entry bound. Each endpoint
(/authorize, /token, /register) answers the OAuth error
`temporarily_unavailable` with `Retry-After`; each page the person sees
(/consent, /auth/callback) an HTML page saying to try again shortly; the JWKS
a JSON 503. None of them redirects anywhere, and no answer or log line holds a
stack trace, the backend's address, or what the request carried.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import httpx
import pytest

from mcp_resolve.stores import MemoryKeyValueStore
from proxy_helpers import READ, ConsentForm, proxied_desk
from redis_helpers import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REDIRECT = "http://127.0.0.1:47823/callback"


def _authorize_url(base: str, client_id: str) -> str:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge.decode(),
        "code_challenge_method": "S256",
        "state": "st",
        "scope": READ,
    }
    return f"{base}/authorize?{urlencode(query)}"


async def _register(http: httpx.AsyncClient, base: str) -> str:
    answer = await http.post(
        f"{base}/register", json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def _clean(text: str, *held: str) -> None:
    for marker in ("Traceback", 'File "', "StoreUnavailable", "127.0.0.1:6", "redis://", *held):
        assert marker not in text, (marker, text[:400])


async def test_redis_down_mid_sign_in_every_step_answers_503(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    redis = RedisServer()
    redis.start_fresh()
    try:
        async with (
            proxied_desk("oidc", store=redis.url, encryption_key="a-fleet-secret-of-at-least-32-bytes!") as (upstream, proxy, url),
            httpx.AsyncClient(timeout=10) as http,
        ):
            base = url.removesuffix("/mcp")
            client_id = await _register(http, base)
            authorize = _authorize_url(base, client_id)
            sent = await http.get(authorize)
            page_url = urljoin(authorize, sent.headers["location"])
            form = ConsentForm.read((await http.get(page_url)).text)
            assert form.action and form.fields["txn"]
            txn = form.fields["txn"]

            redis.stop(kill=True)
            answers = {
                "consent GET": await http.get(page_url),
                "consent POST": await http.post(
                    urljoin(page_url, form.action), data={**form.fields, "decision": "approve"}
                ),
                "callback": await http.get(f"{base}/auth/callback?{urlencode({'state': txn, 'code': 'c'})}"),
                "authorize": await http.get(authorize),
                "register": await http.post(f"{base}/register", json={"redirect_uris": [REDIRECT]}),
                "token": await http.post(
                    f"{base}/token",
                    data={"grant_type": "refresh_token", "refresh_token": "r" * 43, "client_id": client_id},
                ),
                "jwks": await http.get(f"{base}/.well-known/jwks.json"),
            }
            for step, answer in answers.items():
                assert answer.status_code == 503, (step, answer.status_code, answer.text[:300])
                assert answer.headers["retry-after"] == "5" and "location" not in answer.headers, step
                _clean(answer.text, txn, upstream.client_secret)
            for page in ("consent GET", "consent POST", "callback"):
                assert answers[page].headers["content-type"].startswith("text/html")
                assert "Try again shortly" in answers[page].text
                assert answers[page].headers["x-frame-options"].lower() == "deny"
            for endpoint in ("authorize", "register", "token", "jwks"):
                assert answers[endpoint].json()["error"] == "temporarily_unavailable", endpoint
            await proxy.aclose()
    finally:
        redis.close()
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    assert not any(r.exc_info for r in server_side)
    for record in server_side:
        for held in ("Traceback", txn, upstream.client_secret):
            assert held not in record.getMessage(), record.getMessage()
    assert "store failed (StoreUnavailable)" in caplog.text  # the operator learns what failed


async def test_a_full_store_sends_new_sign_ins_back_with_temporarily_unavailable() -> None:
    """The client and its redirect URI are known, so the refusal goes back to it (RFC 6749 §4.1.2.1)."""
    store = MemoryKeyValueStore(max_entries=3)  # the client, and two sign-ins in progress
    async with (
        proxied_desk("oidc", store=store) as (_upstream, proxy, url),
        httpx.AsyncClient(timeout=10) as http,
    ):
        base = url.removesuffix("/mcp")
        client_id = await _register(http, base)
        sent = [(await http.get(_authorize_url(base, client_id))).headers["location"] for _ in range(3)]
        assert [urlsplit(u).path for u in sent[:2]] == ["/consent", "/consent"], sent
        assert sent[2].startswith(REDIRECT + "?"), sent
        assert dict(parse_qsl(urlsplit(sent[2]).query)) == {
            "error": "temporarily_unavailable",
            "error_description": "the authorization server cannot reach its store; try again shortly",
            "state": "st",
            "iss": base,
        }
        refused = await http.post(f"{base}/register", json={"redirect_uris": [REDIRECT]})
        assert refused.status_code == 503 and refused.json()["error"] == "temporarily_unavailable"
        await proxy.aclose()
