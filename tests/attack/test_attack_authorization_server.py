"""Hostile requests at every endpoint of the embedded authorization server (examples/auth_own_users.py).

In process, through httpx's ASGI transport. Each refusal is checked for
what it must not do: redirect to an untrusted URI, reflect the request,
accept a code, verifier, redirect URI or resource that does not match, or
repeat a token, code or secret in a body or a log line.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from own_users_helpers import REDIRECT_URI, example, pkce, provider_of, register, sign_in

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8765"
RESOURCE = f"{BASE}/mcp"


@pytest.fixture
async def env(caplog: pytest.LogCaptureFixture) -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    caplog.set_level(logging.DEBUG, logger="mcp_resolve")
    app = example().app(BASE)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield provider_of(app), http


def authorize_query(client_id: str, challenge: str, **overrides: str | None) -> dict[str, str]:
    query: dict[str, str | None] = {
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "response_type": "code",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "scope": "desk",
    }
    query.update(overrides)
    return {k: v for k, v in query.items() if v is not None}


def back_params(answer: httpx.Response) -> dict[str, str]:
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(REDIRECT_URI + "?")
    return dict(httpx.URL(location).params)


# -- /authorize ------------------------------------------------------------------------------------


async def test_an_untrusted_client_or_redirect_uri_gets_a_plain_page_that_repeats_nothing(
    env: tuple[Any, httpx.AsyncClient],
) -> None:
    _, http = env
    client = await register(http)
    _, challenge = pkce()
    marker = "https://evil.example/<script>steal</script>"
    cases = [
        authorize_query("no-such-client-<b>", challenge),
        authorize_query(client["client_id"], challenge, redirect_uri=marker),
        authorize_query(client["client_id"], challenge, redirect_uri=REDIRECT_URI + "#frag"),
        authorize_query(client["client_id"], challenge, redirect_uri=REDIRECT_URI + "/../x"),
        authorize_query(client["client_id"], challenge, redirect_uri="javascript:alert(1)"),
        authorize_query("", challenge),
    ]
    for query in cases:
        answer = await http.get("/authorize", params=query)
        assert answer.status_code == 400 and "location" not in answer.headers
        assert answer.headers["content-type"].startswith("text/plain")
        assert "<" not in answer.text and "evil" not in answer.text and "no-such" not in answer.text
    duplicated = f"/authorize?client_id={client['client_id']}&client_id=other&response_type=code"
    assert (await http.get(duplicated)).status_code == 400
    assert (await http.get("/authorize", params={"client_id": "x" * 9000})).status_code == 400
    assert (await http.put("/authorize")).status_code == 405


async def test_the_loopback_port_may_differ_but_nothing_else(env: tuple[Any, httpx.AsyncClient]) -> None:
    _, http = env
    portless = "http://127.0.0.1/callback"
    client = await register(http, redirect_uris=[REDIRECT_URI, portless])
    _, challenge = pkce()
    accepted = ["http://127.0.0.1:5555/callback", "http://127.0.0.1/callback", "http://127.0.0.1:80/callback"]
    accepted.append("http://127.0.0.1:47823/callback")
    for uri in accepted:  # RFC 8252 §7.3, both ways: a registered port, no port, another port
        answer = await http.get(
            "/authorize", params=authorize_query(client["client_id"], challenge, redirect_uri=uri)
        )
        assert answer.status_code == 302 and answer.headers["location"].startswith(f"{BASE}/login?"), uri
    refused = [
        "http://localhost:47823/callback",  # another host spelling
        "http://127.0.0.1:47823/callback2",  # another path
        "http://127.0.0.1:47823/Callback",
        "http://127.0.0.1:47823/callback?x=1",  # a query added
        "https://127.0.0.1:47823/callback",  # another scheme
        "http://user@127.0.0.1:47823/callback",
    ]
    for uri in refused:
        answer = await http.get(
            "/authorize", params=authorize_query(client["client_id"], challenge, redirect_uri=uri)
        )
        assert answer.status_code == 400 and "location" not in answer.headers, uri


async def test_without_pkce_s256_the_client_gets_an_error_with_state_and_iss(
    env: tuple[Any, httpx.AsyncClient],
) -> None:
    provider, http = env
    client = await register(http)
    _, challenge = pkce()
    cases = {
        "missing challenge": ({"code_challenge": None}, "invalid_request"),
        "plain": ({"code_challenge_method": "plain"}, "invalid_request"),
        "no method (plain by RFC 7636)": ({"code_challenge_method": None}, "invalid_request"),
        "not a S256 value": ({"code_challenge": "short"}, "invalid_request"),
        "implicit flow": ({"response_type": "token"}, "unsupported_response_type"),
        "no response_type": ({"response_type": None}, "invalid_request"),
        "unregistered scope": ({"scope": "admin"}, "invalid_scope"),
        "malformed scope": ({"scope": 'desk "x'}, "invalid_scope"),
        "another resource": ({"resource": "https://other.example/mcp"}, "invalid_target"),
        "a resource with a fragment": ({"resource": RESOURCE + "#x"}, "invalid_target"),
    }
    for name, (overrides, error) in cases.items():
        answer = await http.get(
            "/authorize", params=authorize_query(client["client_id"], challenge, **overrides)
        )
        back = back_params(answer)
        assert back["error"] == error, name
        assert back["state"] == "st-1" and back["iss"] == BASE and "code" not in back, name
    assert provider.pending == {}  # none of them reached the provider
    form = authorize_query(client["client_id"], challenge)
    assert (await http.post("/authorize", data=form)).status_code == 302  # POST works too
    assert (await http.post("/authorize", json=form)).status_code == 400  # but only as a form


# -- /token ----------------------------------------------------------------------------------------


async def _code(http: httpx.AsyncClient, client_id: str, **params: str) -> tuple[str, str]:
    verifier, challenge = pkce()
    back = await sign_in(http, client_id, challenge, **params)
    return back["code"], verifier


def code_form(client_id: str, code: str, verifier: str, **overrides: str | None) -> dict[str, str]:
    form: dict[str, str | None] = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT_URI,
    }
    form.update(overrides)
    return {k: v for k, v in form.items() if v is not None}


async def test_a_code_is_refused_unless_everything_matches(
    env: tuple[Any, httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    provider, http = env
    client = await register(http)
    other = await register(http)
    cid = client["client_id"]
    code, verifier = await _code(http, cid, resource=RESOURCE)
    wrong_verifier = pkce()[0]
    cases = {
        "PKCE mismatch": (code_form(cid, code, wrong_verifier), "invalid_grant"),
        "verifier too short": (code_form(cid, code, "abc"), "invalid_grant"),
        "no verifier": (code_form(cid, code, verifier, code_verifier=None), "invalid_request"),
        "redirect_uri omitted": (code_form(cid, code, verifier, redirect_uri=None), "invalid_grant"),
        "redirect_uri other port": (
            code_form(cid, code, verifier, redirect_uri="http://127.0.0.1:9/callback"),
            "invalid_grant",
        ),
        "redirect_uri other path": (
            code_form(cid, code, verifier, redirect_uri=REDIRECT_URI + "x"),
            "invalid_grant",
        ),
        "resource mismatch": (
            code_form(cid, code, verifier, resource="https://other.example/mcp"),
            "invalid_target",
        ),
        "another client's code": (code_form(other["client_id"], code, verifier), "invalid_grant"),
        "unknown code": (code_form(cid, "made-up", verifier), "invalid_grant"),
        "no grant_type": (code_form(cid, code, verifier, grant_type=None), "invalid_request"),
        "password grant": (code_form(cid, code, verifier, grant_type="password"), "unsupported_grant_type"),
        "client credentials": (
            code_form(cid, code, verifier, grant_type="client_credentials"),
            "unsupported_grant_type",
        ),
    }
    for name, (form, error) in cases.items():
        answer = await http.post("/token", data=form)
        assert answer.status_code == 400 and answer.json()["error"] == error, (name, answer.text)
        assert code not in answer.text and verifier not in answer.text, name
        assert answer.headers["cache-control"] == "no-store"
    good = await http.post("/token", data=code_form(cid, code, verifier, resource=RESOURCE))
    assert good.status_code == 200, good.text
    token = good.json()["access_token"]
    replayed = await http.post("/token", data=code_form(cid, code, verifier))
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"

    expired_code, expired_verifier = await _code(http, cid)
    provider.codes[expired_code].expires_at = time.time() - 1
    answer = await http.post("/token", data=code_form(cid, expired_code, expired_verifier))
    assert answer.json()["error"] == "invalid_grant"
    for secret in (code, verifier, token, expired_code):
        assert secret not in caplog.text


async def test_refresh_tokens_narrow_only_and_stay_with_their_client(
    env: tuple[Any, httpx.AsyncClient],
) -> None:
    _, http = env
    client, other = await register(http), await register(http)
    code, verifier = await _code(http, client["client_id"], scope="desk desk:refund")
    tokens = (await http.post("/token", data=code_form(client["client_id"], code, verifier))).json()
    refresh = {
        "grant_type": "refresh_token",
        "client_id": client["client_id"],
        "refresh_token": tokens["refresh_token"],
    }
    for form, error in [
        ({**refresh, "scope": "desk offline_access"}, "invalid_scope"),  # wider than granted
        ({**refresh, "client_id": other["client_id"]}, "invalid_grant"),
        ({**refresh, "refresh_token": "made-up"}, "invalid_grant"),
        ({**refresh, "resource": "https://other.example/mcp"}, "invalid_target"),
    ]:
        answer = await http.post("/token", data=form)
        assert answer.status_code == 400 and answer.json()["error"] == error, answer.text
        assert tokens["refresh_token"] not in answer.text
    narrowed = await http.post("/token", data={**refresh, "scope": "desk"})
    assert narrowed.status_code == 200 and narrowed.json()["scope"] == "desk"


async def test_client_authentication_is_checked_and_never_echoed(env: tuple[Any, httpx.AsyncClient]) -> None:
    provider, http = env
    client = await register(http, token_endpoint_auth_method="client_secret_basic", application_type="web")
    cid, secret = client["client_id"], client["client_secret"]
    code, verifier = await _code(http, cid)
    form = code_form(cid, code, verifier)

    def basic(user: str, password: str) -> dict[str, str]:
        return {"authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    refusals = [
        http.post("/token", data=form, headers=basic(cid, secret[:-1] + "x")),  # wrong secret
        http.post("/token", data=form, headers=basic(cid, "")),
        http.post("/token", data=form, headers={"authorization": "Basic %%%not-base64"}),
        http.post("/token", data=form),  # no secret at all
        http.post("/token", data={**form, "client_secret": secret}),  # the secret, but not the registered way
        http.post("/token", data={**form, "client_id": "someone-else"}, headers=basic(cid, secret)),
    ]
    for pending in refusals:
        answer = await pending
        assert answer.status_code == 401 and answer.json()["error"] == "invalid_client", answer.text
        assert secret not in answer.text and code not in answer.text
    both = await http.post("/token", data={**form, "client_secret": secret}, headers=basic(cid, secret))
    assert both.status_code == 400 and both.json()["error"] == "invalid_request"
    assert (
        (await http.post("/token", data=form, headers=basic(cid, "x")))
        .headers["www-authenticate"]
        .startswith("Basic")
    )

    # An expired secret no longer works, even when it is right.
    provider.clients[cid] = provider.clients[cid].model_copy(
        update={"client_secret_expires_at": int(time.time()) - 5}
    )
    expired = await http.post("/token", data=form, headers=basic(cid, secret))
    assert expired.status_code == 401 and "expired" in expired.json()["error_description"]
    # A public client must not send a secret it does not have.
    public = await register(http)
    answer = await http.post(
        "/token", data={**code_form(public["client_id"], "c", verifier), "client_secret": "guess"}
    )
    assert answer.status_code == 401


async def test_the_token_endpoint_reads_only_small_single_valued_forms(
    env: tuple[Any, httpx.AsyncClient],
) -> None:
    _, http = env
    client = await register(http)
    cid = client["client_id"]
    too_big = await http.post(
        "/token", data={"grant_type": "refresh_token", "client_id": cid, "pad": "x" * 20000}
    )
    assert too_big.status_code == 413
    duplicated = await http.post(
        "/token",
        content=f"grant_type=refresh_token&client_id={cid}&refresh_token=a&refresh_token=b",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert duplicated.status_code == 400 and duplicated.json()["error"] == "invalid_request"
    many = "&".join(f"f{i}=1" for i in range(100))
    assert (
        await http.post("/token", content=many, headers={"content-type": "application/x-www-form-urlencoded"})
    ).status_code == 400
    as_json = await http.post("/token", json={"grant_type": "refresh_token", "client_id": cid})
    assert as_json.status_code == 415
    not_utf8 = await http.post(
        "/token", content=b"client_id=\xff", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert not_utf8.status_code == 400
    for method in ("GET", "PUT", "DELETE"):
        answer = await http.request(method, "/token")
        assert answer.status_code == 405 and "POST" in answer.headers["allow"]
    assert "Traceback" not in too_big.text + duplicated.text + as_json.text


# -- /register -------------------------------------------------------------------------------------


async def test_registration_refuses_redirect_uris_that_could_leak_codes(
    env: tuple[Any, httpx.AsyncClient],
) -> None:
    provider, http = env
    refused = {
        "javascript:alert(document.cookie)": None,
        "data:text/html,<script>x</script>": None,
        "vbscript:msgbox": None,
        "file:///etc/passwd": None,
        "https://app.example/cb#frag": None,
        "http://app.example/cb": None,  # http off loopback
        "https://user:pw@app.example/cb": None,
        "myapp:/cb": None,  # a private-use scheme must be reverse-domain
        "/relative/cb": None,
        "https://app.example/cb\\evil": None,
        "https://app.example/c b": None,
    }
    for uri in refused:
        answer = await http.post(
            "/register", json={"redirect_uris": [uri], "token_endpoint_auth_method": "none"}
        )
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri", uri
        assert uri not in answer.text and "<script>" not in answer.text
    by_type = [
        ("native", "https://app.example/cb"),  # native: loopback or a private-use scheme only
        ("web", "com.example.app:/cb"),  # web: https (or loopback http)
    ]
    for kind, uri in by_type:
        answer = await http.post("/register", json={"redirect_uris": [uri], "application_type": kind})
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_redirect_uri", (kind, uri)
    for kind, uri in [
        ("native", "com.example.app:/cb"),
        ("native", "http://[::1]:8080/cb"),
        ("web", "https://a.example/cb"),
        ("web", "http://localhost/cb"),
    ]:
        answer = await http.post("/register", json={"redirect_uris": [uri], "application_type": kind})
        assert answer.status_code == 201, (kind, uri, answer.text)
    assert len(provider.clients) == 4


async def test_registration_refuses_hostile_metadata(env: tuple[Any, httpx.AsyncClient]) -> None:
    provider, http = env
    good = {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
    cases = [
        {**good, "redirect_uris": []},
        {**good, "redirect_uris": "http://127.0.0.1/cb"},
        {**good, "redirect_uris": [REDIRECT_URI] * 11},
        {**good, "token_endpoint_auth_method": "private_key_jwt"},
        {**good, "grant_types": ["implicit"]},
        {**good, "grant_types": ["authorization_code", "client_credentials"]},
        {**good, "response_types": ["token"]},
        {**good, "scope": 'desk "quoted'},
        {**good, "application_type": "satellite"},
        {**good, "client_uri": "javascript:alert(1)"},
    ]
    for body in cases:
        answer = await http.post("/register", json=body)
        assert answer.status_code == 400 and answer.json()["error"].startswith("invalid_"), (
            body,
            answer.text,
        )
        assert "javascript" not in answer.text
    huge = await http.post("/register", json={**good, "client_name": "x" * 20000})
    assert huge.status_code == 413
    for content in (b"not json", b"[1, 2]", b"{" * 5000):
        answer = await http.post("/register", content=content, headers={"content-type": "application/json"})
        assert answer.status_code == 400, content[:10]
    assert (await http.post("/register", data={"redirect_uris": REDIRECT_URI})).status_code == 415
    assert (await http.get("/register")).status_code == 405
    assert provider.clients == {}


async def test_a_scope_outside_valid_scopes_is_never_recorded(env: tuple[Any, httpx.AsyncClient]) -> None:
    """RFC 7591 §2 lets the server replace what a client asks: the client is kept with `valid_scopes`."""
    provider, http = env
    body = {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none", "scope": "desk admin"}
    answer = await http.post("/register", json=body)
    assert answer.status_code == 201, answer.text
    assert "admin" not in answer.json()["scope"].split()
    (client,) = provider.clients.values()
    assert "admin" not in (client.scope or "").split()


# -- /revoke ---------------------------------------------------------------------------------------


async def test_revocation_answers_the_same_for_unknown_and_foreign_tokens(
    env: tuple[Any, httpx.AsyncClient],
) -> None:
    provider, http = env
    client, other = await register(http), await register(http)
    code, verifier = await _code(http, client["client_id"])
    token = (await http.post("/token", data=code_form(client["client_id"], code, verifier))).json()[
        "access_token"
    ]
    for form in (
        {"token": "made-up", "client_id": client["client_id"]},
        {"token": token, "client_id": other["client_id"]},
    ):
        answer = await http.post("/revoke", data=form)
        assert answer.status_code == 200 and answer.content == b""
    assert token in provider.access  # another client cannot end it
    assert (await http.post("/revoke", data={"token": token, "client_id": "unknown"})).status_code == 401
    assert (await http.post("/revoke", data={"client_id": client["client_id"]})).status_code == 400
    assert (await http.get("/revoke")).status_code == 405
    assert (
        await http.post("/revoke", data={"token": token, "client_id": client["client_id"]})
    ).status_code == 200
    assert token not in provider.access
