"""The client's OAuth flow against servers that lie: every document it reads is checked before it is believed.

One Starlette app plays a hostile MCP server and its authorization server at
once (on a loopback URL, driven in process through httpx's ASGI transport),
and each test bends one thing it says: the protected resource metadata names
another resource, an authorization server is plain http, a metadata document
claims another issuer or is ten megabytes, the redirect back carries the
wrong `state` or `iss` or repeats a parameter, the token endpoint answers
garbage, registration assigns a method the client cannot use, the server
keeps asking for more scope. The flow must stop before it hands a code, a
token or a secret to anyone it should not, never loop, and never put a token
or a secret in an error message or a log line.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp_resolve import Client
from mcp_resolve.client.auth import (
    AuthorizationError,
    BearerToken,
    FileTokenStorage,
    HeadlessBrowser,
    LoopbackCallback,
    OAuth,
)
from mcp_resolve.client.auth.challenge import parse_bearer_challenge
from mcp_resolve.client.auth.discovery import authorization_server_metadata_urls, resource_covers

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:9"
MCP = f"{BASE}/mcp"
TOKEN = "tok-SECRET-ACCESS-7f3a"
REFRESH = "refresh-SECRET-9c1d"
CLIENT_SECRET = "client-SECRET-5e2b"


class Evil:
    """A protected MCP server and its authorization server, each answer replaceable by a test."""

    def __init__(self) -> None:
        self.prm: Any = {"resource": MCP, "authorization_servers": [BASE], "scopes_supported": ["read"]}
        self.metadata: Any = {
            "issuer": BASE,
            "authorization_endpoint": f"{BASE}/authorize",
            "token_endpoint": f"{BASE}/token",
            "registration_endpoint": f"{BASE}/register",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": True,
        }
        self.registration: Any = {"client_id": "cid", "token_endpoint_auth_method": "none"}
        self.token: Any = {"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600, "refresh_token": REFRESH}
        self.redirect: Callable[[dict[str, str]], str] = lambda q: (
            f"{q['redirect_uri']}?code=c0de&state={q['state']}&iss={BASE}"
        )
        self.challenge = f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
        self.mcp: Callable[[Request], Response] | None = None
        self.hits: list[str] = []
        self.authorizations: list[dict[str, str]] = []

    def app(self) -> Starlette:
        async def prm(request: Request) -> Response:
            self.hits.append("prm")
            return self.prm if isinstance(self.prm, Response) else JSONResponse(self.prm)

        async def metadata(request: Request) -> Response:
            self.hits.append("metadata")
            return self.metadata if isinstance(self.metadata, Response) else JSONResponse(self.metadata)

        async def authorize(request: Request) -> Response:
            query = dict(request.query_params)
            self.hits.append("authorize")
            self.authorizations.append(query)
            return RedirectResponse(self.redirect(query), status_code=302)

        async def token(request: Request) -> Response:
            self.hits.append("token")
            return self.token if isinstance(self.token, Response) else JSONResponse(self.token)

        async def register(request: Request) -> Response:
            self.hits.append("register")
            return JSONResponse(self.registration, status_code=201)

        async def mcp(request: Request) -> Response:
            self.hits.append("mcp")
            if self.mcp is not None:
                return self.mcp(request)
            if request.headers.get("authorization") == f"Bearer {TOKEN}":
                return JSONResponse({"jsonrpc": "2.0", "id": 1, "result": {}})
            return Response(status_code=401, headers={"www-authenticate": self.challenge})

        return Starlette(
            routes=[
                Route("/.well-known/oauth-protected-resource/mcp", prm),
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/authorize", authorize),
                Route("/token", token, methods=["POST"]),
                Route("/register", register, methods=["POST"]),
                Route("/mcp", mcp, methods=["POST", "GET"]),
            ]
        )

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app()))

    def oauth(self, **options: Any) -> OAuth:
        browser = HeadlessBrowser(http_client=self.client)
        return OAuth(redirect_handler=browser, callback_handler=browser, http_client=self.client, **options)

    async def call(self, auth: httpx.Auth) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app()), auth=auth) as http:
            return await http.post(MCP, content=b"{}")


async def refused(evil: Evil, error: str, **options: Any) -> AuthorizationError:
    with pytest.raises(AuthorizationError) as caught:
        await evil.call(evil.oauth(**options))
    assert caught.value.error == error, caught.value
    return caught.value


async def test_the_happy_path_of_the_fixture_works() -> None:
    evil = Evil()
    response = await evil.call(evil.oauth())
    assert response.status_code == 200
    assert evil.hits == ["mcp", "prm", "metadata", "register", "authorize", "token", "mcp"]
    assert evil.authorizations[0]["resource"] == MCP and evil.authorizations[0]["scope"] == "read"


async def test_metadata_for_another_resource_is_refused_before_the_authorization_server_is_contacted() -> None:
    evil = Evil()
    evil.prm["resource"] = "https://bank.example/mcp"
    await refused(evil, "resource_mismatch")
    assert "metadata" not in evil.hits and "authorize" not in evil.hits


@pytest.mark.parametrize(
    ("resource", "ok"),
    [
        (MCP, True),
        (BASE, True),
        (f"{BASE}/", True),
        ("HTTP://127.0.0.1:9/mcp", True),
        (f"{BASE}/mc", False),
        (f"{BASE}/mcp/deeper", False),
        ("http://127.0.0.1:10/mcp", False),
        ("https://127.0.0.1:9/mcp", False),
        (f"{MCP}?x=1", False),
        (f"{MCP}#f", False),
        ("not a url", False),
        # what the server refuses as an audience, the client refuses as a resource (one rule)
        ("http://user@127.0.0.1:9/mcp", False),
        ("http://user:pw@127.0.0.1:9/mcp", False),
        ("http://@127.0.0.1:9/", False),
        ("http://evil.example@127.0.0.1:9/mcp", False),
        (f"{MCP}#", False),
        ("http://127.0.0.1:09/mcp", False),
        ("http://127.0.0.1:9/m\tcp", False),
        (f"{MCP}\n", False),
        (f" {MCP}", False),
    ],
)
def test_which_resources_cover_the_endpoint(resource: str, ok: bool) -> None:
    assert resource_covers(resource, MCP) is ok


async def test_metadata_for_this_resource_with_a_user_name_is_refused() -> None:
    """A `resource` that names this endpoint with a user name in front is not this endpoint's."""
    evil = Evil()
    evil.prm["resource"] = "http://someone@127.0.0.1:9/mcp"
    await refused(evil, "resource_mismatch")
    assert "metadata" not in evil.hits and not evil.authorizations


async def test_a_plain_http_authorization_server_elsewhere_is_never_contacted() -> None:
    evil = Evil()
    evil.prm["authorization_servers"] = ["http://auth.example"]
    await refused(evil, "insecure_url")
    assert "metadata" not in evil.hits


async def test_a_plain_http_resource_metadata_url_elsewhere_is_never_fetched() -> None:
    evil = Evil()
    evil.challenge = 'Bearer resource_metadata="http://tracker.example/prm"'
    await refused(evil, "insecure_url")


async def test_oversized_metadata_is_refused_without_being_read_whole() -> None:
    evil = Evil()
    evil.prm = Response(b"{" + b" " * (2 * 1024 * 1024) + b"}", media_type="application/json")
    await refused(evil, "response_too_large")


async def test_metadata_naming_another_issuer_is_not_used() -> None:
    evil = Evil()
    evil.metadata["issuer"] = "https://honest.example"
    await refused(evil, "issuer_mismatch")
    assert "register" not in evil.hits and "authorize" not in evil.hits


async def test_a_trailing_slash_makes_another_issuer() -> None:
    evil = Evil()
    evil.metadata["issuer"] = f"{BASE}/"
    await refused(evil, "issuer_mismatch")


async def test_an_endpoint_over_plain_http_elsewhere_is_refused() -> None:
    evil = Evil()
    evil.metadata["token_endpoint"] = "http://collector.example/token"
    await refused(evil, "metadata_invalid")
    assert "authorize" not in evil.hits


async def test_no_pkce_no_authorization() -> None:
    evil = Evil()
    del evil.metadata["code_challenge_methods_supported"]
    await refused(evil, "pkce_unsupported")
    assert "authorize" not in evil.hits


async def test_a_redirect_with_another_state_is_refused_before_the_token_request() -> None:
    evil = Evil()
    evil.redirect = lambda q: f"{q['redirect_uri']}?code=c0de&state=forged&iss={BASE}"
    await refused(evil, "state_mismatch")
    assert "token" not in evil.hits


@pytest.mark.parametrize("iss", ["https://evil.example", f"{BASE}/", "HTTP://127.0.0.1:9", ""])
async def test_a_redirect_from_another_issuer_is_refused_and_its_error_not_shown(iss: str) -> None:
    evil = Evil()
    evil.redirect = lambda q: (
        f"{q['redirect_uri']}?error=access_denied&error_description=CALL+0800-PHISH&state={q['state']}&iss={iss}"
    )
    error = await refused(evil, "iss_mismatch")
    assert "PHISH" not in str(error) and "access_denied" not in str(error)
    assert "token" not in evil.hits


async def test_a_missing_iss_is_refused_only_when_it_was_promised() -> None:
    evil = Evil()
    evil.redirect = lambda q: f"{q['redirect_uri']}?code=c0de&state={q['state']}"
    await refused(evil, "iss_missing")
    assert "token" not in evil.hits
    evil.metadata["authorization_response_iss_parameter_supported"] = False
    evil.hits.clear()
    assert (await evil.call(evil.oauth())).status_code == 200


async def test_repeated_parameters_in_the_redirect_are_refused() -> None:
    evil = Evil()
    evil.redirect = lambda q: f"{q['redirect_uri']}?code=a&code=b&state={q['state']}&iss={BASE}"
    await refused(evil, "invalid_response")
    assert "token" not in evil.hits


async def test_the_headless_browser_follows_no_redirect_off_https() -> None:
    evil = Evil()
    evil.redirect = lambda q: "http://phish.example/login"
    await refused(evil, "insecure_url")


async def test_an_authorization_server_that_wants_a_person_stops_the_headless_browser() -> None:
    evil = Evil()
    app = evil.app()

    async def page(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/authorize":
            await Response("<form>log in</form>", media_type="text/html")(scope, receive, send)
        else:
            await app(scope, receive, send)

    browser = HeadlessBrowser(http_client=lambda: httpx.AsyncClient(transport=httpx.ASGITransport(app=page)))
    oauth = OAuth(redirect_handler=browser, callback_handler=browser, http_client=evil.client)
    with pytest.raises(AuthorizationError) as caught:
        await evil.call(oauth)
    assert caught.value.error == "interaction_required"


@pytest.mark.parametrize(
    ("token", "error"),
    [
        (Response(b"<html>", media_type="text/html"), "invalid_response"),
        ({"access_token": TOKEN, "token_type": "DPoP"}, "invalid_token_response"),
        ({"access_token": "x" * 20000, "token_type": "Bearer"}, "invalid_token_response"),
        ({"access_token": "two\nlines", "token_type": "Bearer"}, "invalid_token_response"),
        ({"access_token": TOKEN, "token_type": "Bearer", "expires_in": "soon"}, "invalid_token_response"),
        ({"access_token": TOKEN, "token_type": "Bearer", "scope": ["read"]}, "invalid_token_response"),
        ({"token_type": "Bearer"}, "invalid_token_response"),
        (JSONResponse({"error": "invalid_grant", "error_description": "x" * 5000}, status_code=400), "invalid_grant"),
    ],
)
async def test_token_responses_that_are_not_usable_tokens_are_refused(token: Any, error: str) -> None:
    evil = Evil()
    evil.token = token
    refusal = await refused(evil, error)
    assert TOKEN not in str(refusal) and len(str(refusal)) < 600


async def test_a_registration_the_client_cannot_use_is_refused() -> None:
    evil = Evil()
    evil.registration = {"client_id": "cid", "token_endpoint_auth_method": "private_key_jwt"}
    await refused(evil, "registration_failed")
    evil.registration = {"client_id": "cid", "token_endpoint_auth_method": "client_secret_basic"}  # but no secret
    await refused(evil, "registration_failed")
    assert "authorize" not in evil.hits


async def test_pre_registered_credentials_are_not_offered_to_another_authorization_server() -> None:
    evil = Evil()
    await refused(
        evil, "issuer_changed", client_id="mine", client_secret=CLIENT_SECRET, issuer="https://my-idp.example"
    )
    assert "authorize" not in evil.hits and "token" not in evil.hits


async def test_step_up_is_bounded_when_the_server_keeps_asking_for_more() -> None:
    evil = Evil()
    asked = iter(range(100))

    def always_more(request: Request) -> Response:
        if "authorization" not in request.headers:
            return Response(status_code=401, headers={"www-authenticate": evil.challenge})
        challenge = f'Bearer error="insufficient_scope", scope="s{next(asked)}", {evil.challenge[7:]}'
        return Response(status_code=403, headers={"www-authenticate": challenge})

    evil.mcp = always_more
    response = await evil.call(evil.oauth(max_step_ups=2))
    assert response.status_code == 403
    assert len(evil.authorizations) == 3  # the login and two step-ups
    assert evil.authorizations[-1]["scope"].split() == ["read", "s0", "s1"]


async def test_a_403_for_scopes_the_token_holds_is_not_answered_with_another_login() -> None:
    evil = Evil()
    evil.token = {**evil.token, "scope": "read admin"}

    def refuse(request: Request) -> Response:
        if "authorization" not in request.headers:
            return Response(status_code=401, headers={"www-authenticate": evil.challenge})
        return Response(status_code=403, headers={"www-authenticate": 'Bearer error="insufficient_scope", scope="admin"'})

    evil.mcp = refuse
    assert (await evil.call(evil.oauth())).status_code == 403
    assert len(evil.authorizations) == 1


async def test_a_server_that_refuses_every_token_gets_one_login_per_request() -> None:
    evil = Evil()
    evil.mcp = lambda request: Response(status_code=401, headers={"www-authenticate": evil.challenge})
    assert (await evil.call(evil.oauth())).status_code == 401
    assert len(evil.authorizations) == 1


async def test_concurrent_401s_share_one_login() -> None:
    evil = Evil()
    oauth = evil.oauth()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=evil.app()), auth=oauth) as http:
        statuses: list[int] = []

        async def one() -> None:
            statuses.append((await http.post(MCP, content=b"{}")).status_code)

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(one)
    assert statuses == [200] * 5
    assert len(evil.authorizations) == 1 and evil.hits.count("register") == 1


async def test_nothing_secret_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    evil = Evil()
    evil.registration = {"client_id": "cid", "client_secret": CLIENT_SECRET, "token_endpoint_auth_method": "client_secret_post"}
    evil.metadata["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
    oauth = evil.oauth()
    assert (await evil.call(oauth)).status_code == 200
    oauth._tokens[MCP]["expires_at"] = 0  # type: ignore[index]
    assert (await evil.call(oauth)).status_code == 200  # refreshed
    text = caplog.text + repr(oauth) + repr(BearerToken(TOKEN))
    for secret in (TOKEN, REFRESH, CLIENT_SECRET):
        assert secret not in text


# -- WWW-Authenticate --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("header", "params"),
    [
        ('Bearer resource_metadata="https://a/b", scope="x y"', {"resource_metadata": "https://a/b", "scope": "x y"}),
        ('Basic realm="r", Bearer error="insufficient_scope"', {"error": "insufficient_scope"}),
        ("Basic dXNlcjpwYXNz==, Bearer scope=read", {"scope": "read"}),
        ('bearer SCOPE="a\\"b"', {"scope": 'a"b'}),
        ('Bearer scope="first", scope="second"', {"scope": "first"}),
    ],
)
def test_challenges_are_read_as_rfc_7235_says(header: str, params: dict[str, str]) -> None:
    challenge = parse_bearer_challenge([header])
    assert challenge is not None and challenge.params == params


@pytest.mark.parametrize("header", ["", "Basic realm=x", "Bearer" + " " * 9000 + 'scope="x"', "==, ,"])
def test_no_bearer_challenge_is_none(header: str) -> None:
    challenge = parse_bearer_challenge([header])
    assert challenge is None or challenge.params == {}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=3))
def test_any_header_parses_without_raising(values: list[str]) -> None:
    parse_bearer_challenge(values)


def test_authorization_server_metadata_is_looked_for_in_the_spec_order() -> None:
    assert authorization_server_metadata_urls("https://a.example/tenant1") == [
        "https://a.example/.well-known/oauth-authorization-server/tenant1",
        "https://a.example/.well-known/openid-configuration/tenant1",
        "https://a.example/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://a.example") == [
        "https://a.example/.well-known/oauth-authorization-server",
        "https://a.example/.well-known/openid-configuration",
    ]


# -- the browser step and storage -----------------------------------------------------------------
@pytest.mark.slow
async def test_the_loopback_listener_ignores_forged_callbacks_and_takes_the_real_one() -> None:
    callback = LoopbackCallback()
    uri = await callback.redirect_uri()
    got: list[Any] = []

    async def wait() -> None:
        got.append(await callback.wait_for_callback("the-state", timeout=10))

    async with anyio.create_task_group() as group:
        group.start_soon(wait)
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{uri}?code=evil&state=forged")).status_code == 400
            assert (await http.get(uri.replace("/callback", "/other"))).status_code == 404
            assert (await http.get(f"{uri}?code=good&state=the-state&iss=x")).status_code == 200
    assert got[0].params == {"code": "good", "state": "the-state", "iss": "x"}
    try:
        assert await callback.redirect_uri() == uri  # the same port for the next login (bound again)
    finally:
        await callback.aclose()


@pytest.mark.slow
async def test_the_loopback_listener_gives_up_after_its_timeout() -> None:
    with pytest.raises(AuthorizationError) as caught:
        await LoopbackCallback().wait_for_callback("s", timeout=0.2)
    assert caught.value.error == "callback_timeout"


async def test_a_token_file_others_can_read_is_refused_and_a_damaged_one_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStorage(path)
    await store.set("k", {"v": 1})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert await store.get("k") == {"v": 1}
    os.chmod(path, 0o644)
    with pytest.raises(PermissionError):
        await store.get("k")
    os.chmod(path, 0o600)
    path.write_text("{not json")
    assert await store.get("k") is None
    await store.delete("k")
    path.write_text(json.dumps({"k": {"v": 2}}))
    await store.delete("k")
    assert await store.get("k") is None


def test_auth_is_for_http_targets_only() -> None:
    with pytest.raises(ValueError, match="http"):
        Client("server.py", auth="token")
    with pytest.raises(TypeError):
        Client("https://mcp.example/mcp", auth=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        BearerToken("two\nlines")
    assert isinstance(Client("https://mcp.example/mcp", auth="oauth").auth, OAuth)


def test_a_client_metadata_url_must_be_https_with_a_path() -> None:
    for bad in ("http://app.example/client.json", "https://app.example", "https://app.example/"):
        with pytest.raises(ValueError):
            OAuth(client_metadata_url=bad)


async def test_a_server_without_resource_metadata_is_its_own_authorization_server() -> None:
    """2025-03-26 servers publish no protected resource metadata: the origin's metadata is used."""
    evil = Evil()
    evil.prm = Response(status_code=404)
    assert (await evil.call(evil.oauth())).status_code == 200
    assert evil.authorizations[0]["resource"] == MCP
    assert "scope" not in evil.authorizations[0]


async def test_an_unusable_token_file_fails_the_request_not_the_connection(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    evil = Evil()
    error = await refused(evil, "client_error", storage=FileTokenStorage(path))
    assert "readable by other users" in str(error)


@pytest.mark.slow
async def test_a_redirect_that_fails_closes_the_callback_listener() -> None:
    """The loopback listener opened for the redirect URI is closed when the redirect itself fails
    (before, it stayed bound until the object was collected, warning then)."""
    evil = Evil()
    callback = LoopbackCallback()

    async def broken_browser(url: str) -> None:
        raise RuntimeError("no browser here")

    oauth = OAuth(redirect_handler=broken_browser, callback_handler=callback, http_client=evil.client)
    with pytest.raises(AuthorizationError, match="no browser here"):
        await evil.call(oauth)
    assert "authorize" not in evil.hits and callback._listener is None
    with socket.socket() as probe:  # the port is free again
        probe.bind(("127.0.0.1", callback.port))
