"""Hostile input against the assembled OAuthProxy, over real HTTP, step by step.

The desk of tests/proxy_helpers.py runs behind an `OIDCProxy` (or `GitHubProvider`)
whose upstream is oidc-provider on loopback. Here the person's browser is driven
one request at a time with httpx (`Person`), so a test can skip a step, repeat one,
swap a parameter or break the upstream in between: callbacks with bad state,
a callback for a sign-in the person never approved, codes and refresh tokens
replayed, PKCE/redirect_uri/resource swapped at /token, an upstream that is down
or slow at each point it is needed, hostile Client ID Metadata Documents, forged
JWTs at the MCP endpoint, and, across all of it, no secret in a log or a body.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

import anyio
import httpx
import pytest

from mcp_resolve import Client
from mcp_resolve.auth.proxy._grants import Grant, Grants
from mcp_resolve.stores import KeyValueStoreFull, MemoryKeyValueStore
from proxy_helpers import READ, WRITE, ConsentForm, proxied_desk
from redis_helpers import redis_server
from upstream_helpers import Answer, DocumentServer, follow_login

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REDIRECT = "http://127.0.0.1:47823/callback"
OTHER_REDIRECT = "http://127.0.0.1:47823/elsewhere"
DEADLINE_S = 2.0
"""The upstream timeout the slow-upstream tests configure; every answer must come within a few of it."""


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def claims_of(jwt: str) -> dict[str, Any]:
    """A JWT's payload, unverified (to read `gid` and `aud` of our own tokens)."""
    segment = jwt.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))))


@dataclass
class App:
    """A client registered at the proxy with DCR."""

    client_id: str
    client_secret: str


@dataclass
class SignIn:
    """One authorization request of `app`, as far as it got."""

    app: App
    verifier: str
    state: str
    consent_url: str
    upstream_url: str | None = None


@dataclass
class Person:
    """A browser driven one request at a time; keeps every body the proxy answered with, except the
    two that exist to hand a secret over (a registration's client secret, a token response)."""

    base: str
    http: httpx.AsyncClient
    bodies: list[str] = field(default_factory=list)

    async def get(self, url: str, **params: Any) -> httpx.Response:
        return self._kept(await self.http.get(url, params=params or None))

    async def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self._kept(await self.http.post(url, **kwargs))

    def _kept(self, response: httpx.Response) -> httpx.Response:
        handing_over = (response.url.path, response.status_code) in (("/register", 201), ("/token", 200))
        if str(response.url).startswith(self.base) and not handing_over:
            self.bodies.append(response.text)
        return response

    # -- the steps ---------------------------------------------------------------------------------

    async def register(self, redirect_uris: tuple[str, ...] = (REDIRECT,)) -> App:
        answer = await self.post(
            f"{self.base}/register",
            json={
                "redirect_uris": list(redirect_uris),
                "client_name": "Attack Test App",
                "token_endpoint_auth_method": "client_secret_post",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
        assert answer.status_code == 201, answer.text
        return App(answer.json()["client_id"], answer.json()["client_secret"])

    async def begin(
        self, app: App, *, scope: str = READ, redirect_uri: str = REDIRECT, resource: str | None = None
    ) -> SignIn:
        verifier, challenge = pkce()
        state = secrets.token_urlsafe(8)
        params = {
            "client_id": app.client_id,
            "redirect_uri": redirect_uri,
            "response_type": "code",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "scope": scope,
        }
        if resource is not None:
            params["resource"] = resource
        answer = await self.get(f"{self.base}/authorize", **params)
        assert answer.status_code == 302, answer.text
        location = urljoin(self.base, answer.headers["location"])
        assert urlsplit(location).path == "/consent", location
        return SignIn(app, verifier, state, location)

    async def decide(self, sign_in: SignIn, decision: str = "approve") -> httpx.Response:
        page = await self.get(sign_in.consent_url)
        if page.status_code == 303 and decision == "approve":  # this browser approved this client before
            answer = page
        else:
            assert page.status_code == 200, page.text
            form = ConsentForm.read(page.text)
            assert form.action is not None
            answer = await self.post(
                urljoin(sign_in.consent_url, form.action), data={**form.fields, "decision": decision}
            )
        if answer.status_code == 303 and decision == "approve":
            sign_in.upstream_url = answer.headers["location"]
        return answer

    async def upstream_login(self, sign_in: SignIn) -> dict[str, Any]:
        """Approve, then sign in upstream: the query the upstream sends back to our callback (not sent yet)."""
        if sign_in.upstream_url is None:
            answer = await self.decide(sign_in)
            assert answer.status_code == 303, answer.text
        assert sign_in.upstream_url is not None
        return await follow_login(sign_in.upstream_url, f"{self.base}/auth/callback")

    async def callback(self, query: str | dict[str, Any]) -> httpx.Response:
        text = query if isinstance(query, str) else urlencode(query)
        return self._kept(await self.http.get(f"{self.base}/auth/callback?{text}"))

    async def code(self, sign_in: SignIn) -> str:
        """The whole way to the client's redirect URI; our authorization code."""
        answer = await self.callback(await self.upstream_login(sign_in))
        back = client_redirect(answer, sign_in)
        assert "code" in back, back
        return back["code"]

    async def token(self, app: App, form: dict[str, str], *, secret: str | None = None) -> httpx.Response:
        return await self.post(
            f"{self.base}/token",
            data={**form, "client_id": app.client_id, "client_secret": secret or app.client_secret},
        )

    async def exchange(self, sign_in: SignIn, code: str, **changes: str | None) -> httpx.Response:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": sign_in.verifier,
            "redirect_uri": REDIRECT,
        }
        form.update(changes)  # type: ignore[arg-type]
        return await self.token(sign_in.app, {k: v for k, v in form.items() if v is not None})

    async def refresh(self, app: App, refresh_token: str) -> httpx.Response:
        return await self.token(app, {"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def tokens(self, scope: str = READ) -> tuple[App, dict[str, Any]]:
        """A client registered, signed in and holding tokens."""
        app = await self.register()
        sign_in = await self.begin(app, scope=scope)
        answer = await self.exchange(sign_in, await self.code(sign_in))
        assert answer.status_code == 200, answer.text
        return app, answer.json()

    async def mcp_status(self, mcp_url: str, token: str) -> int:
        """The MCP endpoint's HTTP status for an initialize request carrying `token`."""
        answer = await self.post(
            mcp_url,
            headers={
                "authorization": f"Bearer {token}",
                "accept": "application/json, text/event-stream",
            },
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "attack", "version": "1"},
                },
            },
        )
        return answer.status_code


def client_redirect(answer: httpx.Response, sign_in: SignIn) -> dict[str, str]:
    """The parameters of a redirect to the client's redirect URI, checked to carry its state and our iss."""
    assert answer.status_code in (302, 303), f"{answer.status_code}: {answer.text[:300]}"
    location = answer.headers["location"]
    assert location.startswith(REDIRECT + "?"), location
    back = query_of(location)
    assert back["state"] == sign_in.state, back
    assert back["iss"] == str(answer.url).split("/auth/", 1)[0].split("/consent", 1)[0], back
    return back


def assert_page(answer: httpx.Response, status: int = 400) -> None:
    """A page for the person: no redirect to anyone, HTML, nothing internal."""
    assert answer.status_code == status, f"{answer.status_code}: {answer.text[:300]}"
    assert "location" not in answer.headers
    assert answer.headers["content-type"].startswith("text/html")
    assert "Traceback" not in answer.text


@asynccontextmanager
async def person_at(mcp_url: str) -> AsyncIterator[Person]:
    base = mcp_url.rsplit("/", 1)[0]
    async with httpx.AsyncClient(timeout=30, follow_redirects=False) as http:
        yield Person(base, http)


class Clock:
    """The store's clock, pushed forward to expire what is in it."""

    def __init__(self) -> None:
        self.skew = 0.0

    def __call__(self) -> float:
        return time.time() + self.skew


# -- /auth/callback ----------------------------------------------------------------------------------


async def test_the_callback_refuses_unknown_missing_duplicated_oversized_and_replayed_state() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        assert_page(await person.callback({"state": "no-such-transaction", "code": "x"}))
        assert_page(await person.callback({"code": "x"}))
        assert_page(await person.callback({}))
        assert_page(await person.callback({"state": "s" * 5000, "code": "x"}))
        assert_page(await person.callback({"state": "x", "code": "c" * 5000}))

        sign_in = await person.begin(app)
        returned = await person.upstream_login(sign_in)
        txn = returned["state"]
        # The real state, given twice (the second one the attacker's): refused, and the sign-in survives it.
        assert_page(await person.callback(f"state={txn}&state=other&code={returned['code']}"))
        assert_page(await person.callback(f"state={txn}&code={returned['code']}&code=other"))
        first = await person.callback(returned)
        assert "code" in client_redirect(first, sign_in)
        replayed = await person.callback(returned)  # the same callback again: the transaction is spent
        assert_page(replayed)
        await proxy.aclose()


async def test_an_expired_transaction_is_refused_at_the_callback_and_the_consent_page() -> None:
    clock = Clock()
    store = MemoryKeyValueStore(clock=clock)
    async with proxied_desk("oidc", store=store) as (_upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        late = await person.begin(app)
        approved = await person.begin(app)
        returned = await person.upstream_login(approved)
        clock.skew = proxy.transaction_ttl_s + 5
        assert_page(await person.callback(returned))
        assert_page(await person.get(late.consent_url), 404)
        await proxy.aclose()


async def test_a_callback_for_a_sign_in_never_approved_is_refused() -> None:
    """Consent bypass: the client learns the transaction id from the consent URL and sends the person
    straight to the upstream with it as state. The upstream signs them in; the proxy must not."""
    async with proxied_desk("oidc") as (upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        sign_in = await person.begin(app)
        txn = query_of(sign_in.consent_url)["txn"]
        _verifier, challenge = pkce()
        straight = (
            upstream.endpoints["authorization_endpoint"]
            + "?"
            + urlencode(
                {
                    "client_id": upstream.client_id,
                    "redirect_uri": f"{person.base}/auth/callback",
                    "response_type": "code",
                    "scope": "openid email profile",
                    "state": txn,
                    "nonce": "n-1",
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                }
            )
        )
        returned = await follow_login(straight, f"{person.base}/auth/callback")
        assert returned["state"] == txn and returned.get("code")
        refused = await person.callback(returned)
        assert_page(refused)
        # The transaction is gone with it: approving it now leads nowhere either.
        assert_page(await person.get(sign_in.consent_url), 404)
        await proxy.aclose()


async def test_upstream_errors_a_missing_code_and_another_sign_ins_code_go_back_as_errors() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url), person_at(url) as person:
        app = await person.register()

        refused = await person.begin(app)
        await person.decide(refused)
        txn = query_of(refused.consent_url)["txn"]
        hostile = "<script>alert(1)</script> https://evil.example/"
        answer = await person.callback({"state": txn, "error": "access_denied", "error_description": hostile})
        back = client_redirect(answer, refused)
        assert back["error"] == "access_denied" and "code" not in back
        location = answer.headers["location"]
        assert "evil.example" not in location and "alert" not in location, location

        codeless = await person.begin(app)
        await person.decide(codeless)
        answer = await person.callback({"state": query_of(codeless.consent_url)["txn"]})
        back = client_redirect(answer, codeless)
        assert back["error"] == "access_denied" and "code" not in back

        # Two sign-ins: B's upstream code sent back with A's state. The upstream refuses it (PKCE
        # was A's), so A's client gets an error and no code, and B's code cannot be spent twice.
        a, b = await person.begin(app), await person.begin(app)
        await person.decide(a)
        b_returned = await person.upstream_login(b)
        answer = await person.callback({"state": query_of(a.consent_url)["txn"], "code": b_returned["code"]})
        back = client_redirect(answer, a)
        assert back["error"] == "access_denied" and "code" not in back, back
        await proxy.aclose()


# -- codes and refresh tokens ----------------------------------------------------------------------


async def test_a_replayed_code_is_refused_and_revokes_the_tokens_it_gave() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        sign_in = await person.begin(app)
        code = await person.code(sign_in)
        first = await person.exchange(sign_in, code)
        assert first.status_code == 200, first.text
        tokens = first.json()
        assert await person.mcp_status(url, tokens["access_token"]) == 200

        again = await person.exchange(sign_in, code)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        assert await person.mcp_status(url, tokens["access_token"]) == 401
        refreshed = await person.refresh(app, tokens["refresh_token"])
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"

        # Two exchanges of one code at once: one wins, and what it won is revoked by the other.
        sign_in = await person.begin(app)
        code = await person.code(sign_in)
        answers: list[httpx.Response] = []

        async def exchange() -> None:
            answers.append(await person.exchange(sign_in, code))

        async with anyio.create_task_group() as group:
            group.start_soon(exchange)
            group.start_soon(exchange)
        won = [a for a in answers if a.status_code == 200]
        assert len(won) <= 1 and any(a.status_code == 400 for a in answers)
        for answer in won:
            assert await person.mcp_status(url, answer.json()["access_token"]) == 401
        await proxy.aclose()


async def test_a_reused_refresh_token_revokes_the_family() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url), person_at(url) as person:
        app, first = await person.tokens()
        second = await person.refresh(app, first["refresh_token"])
        assert second.status_code == 200, second.text
        newest = second.json()
        assert newest["refresh_token"] != first["refresh_token"]
        assert await person.mcp_status(url, newest["access_token"]) == 200

        reused = await person.refresh(app, first["refresh_token"])
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
        latest = await person.refresh(app, newest["refresh_token"])
        assert latest.status_code == 400 and latest.json()["error"] == "invalid_grant"
        for access in (first["access_token"], newest["access_token"]):
            assert await person.mcp_status(url, access) == 401
        await proxy.aclose()


async def test_pkce_redirect_uri_resource_and_client_must_match_at_token() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url), person_at(url) as person:
        app = await person.register((REDIRECT, OTHER_REDIRECT))
        other_app = await person.register()
        wrong_verifier, _ = pkce()
        cases: list[tuple[dict[str, str | None], str]] = [
            ({"code_verifier": wrong_verifier}, "invalid_grant"),
            ({"code_verifier": None}, "invalid_request"),
            ({"redirect_uri": OTHER_REDIRECT}, "invalid_grant"),
            ({"redirect_uri": None}, "invalid_grant"),  # the request named one: it must be repeated
            ({"resource": "http://127.0.0.1:1/mcp"}, "invalid_target"),
            ({"resource": url + "/other"}, "invalid_target"),
        ]
        for changes, error in cases:
            sign_in = await person.begin(app, resource=url)
            code = await person.code(sign_in)
            refused = await person.exchange(sign_in, code, **changes)
            assert refused.status_code == 400, (changes, refused.text)
            assert refused.json()["error"] == error, (changes, refused.text)
            assert "access_token" not in refused.text
        # Another client presenting the code (its own credentials): refused too.
        sign_in = await person.begin(app)
        code = await person.code(sign_in)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": sign_in.verifier,
            "redirect_uri": REDIRECT,
        }
        stolen = await person.token(other_app, form)
        assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
        # And the tampering was all that was wrong: the right exchange still works.
        assert (await person.exchange(sign_in, code)).status_code == 200
        await proxy.aclose()


# -- the upstream down or slow ----------------------------------------------------------------------


async def test_an_upstream_down_or_slow_at_approval_shows_a_503_page_in_time() -> None:
    """OpenID discovery happens when the first person approves: the upstream slow, failing or gone."""
    options = {"upstream_options": {"timeout_s": DEADLINE_S}}
    for fault in ({"delay_ms": 8000}, {"status": 503}, {"drip_ms": 1000}):
        async with proxied_desk("oidc", **options) as (upstream, proxy, url), person_at(url) as person:
            app = await person.register()
            sign_in = await person.begin(app)
            await upstream.faults({"/.well-known/openid-configuration": fault})
            with anyio.fail_after(DEADLINE_S + 5):
                answer = await person.decide(sign_in)
            assert_page(answer, 503)
            assert "cannot be reached" in answer.text
            # The upstream back: the same sign-in goes on (the transaction was not spent).
            await upstream.faults({})
            assert (await person.decide(sign_in)).status_code == 303
            await proxy.aclose()


async def test_an_upstream_down_or_slow_at_the_code_exchange_sends_temporarily_unavailable() -> None:
    options = {"upstream_options": {"timeout_s": DEADLINE_S}}
    async with proxied_desk("oidc", **options) as (upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        for fault in ({"delay_ms": 8000}, {"status": 503}, {"drip_ms": 1000}):
            sign_in = await person.begin(app)
            returned = await person.upstream_login(sign_in)
            await upstream.faults({"/token": fault})
            with anyio.fail_after(DEADLINE_S + 5):
                answer = await person.callback(returned)
            await upstream.faults({})
            back = client_redirect(answer, sign_in)
            assert back["error"] == "temporarily_unavailable", (fault, back)
            assert "code" not in back
        await proxy.aclose()


async def test_a_github_like_user_endpoint_down_or_slow_at_the_callback_sends_temporarily_unavailable() -> (
    None
):
    """Without OpenID the identity is a second call (GET /user) after the code exchange: it fails too."""
    options = {"upstream_options": {"timeout_s": DEADLINE_S}}
    async with proxied_desk("oauth", **options) as (upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        for fault in ({"delay_ms": 8000}, {"status": 502}):
            sign_in = await person.begin(app)
            returned = await person.upstream_login(sign_in)
            await upstream.faults({"/user": fault})
            with anyio.fail_after(DEADLINE_S + 5):
                answer = await person.callback(returned)
            await upstream.faults({})
            back = client_redirect(answer, sign_in)
            assert back["error"] == "temporarily_unavailable", (fault, back)
            assert "code" not in back
        # The upstream well again: the same client signs in.
        sign_in = await person.begin(app)
        assert (await person.exchange(sign_in, await person.code(sign_in))).status_code == 200
        await proxy.aclose()


async def test_a_tool_using_the_upstream_token_gets_an_error_when_the_upstream_refresh_fails() -> None:
    options = {"upstream_options": {"timeout_s": DEADLINE_S}}
    async with proxied_desk("oidc", **options) as (upstream, proxy, url), person_at(url) as person:
        _app, tokens = await person.tokens()
        gid = claims_of(tokens["access_token"])["gid"]
        kept = await proxy.state.get(f"upstream:{gid}")
        assert kept is not None and kept.get("refresh_token")
        secrets_ = [kept["access_token"], kept["refresh_token"], tokens["access_token"]]

        async def make_due() -> None:
            record = await proxy.state.get(f"upstream:{gid}")
            record["expires_at"] = time.time()
            await proxy.state.put(f"upstream:{gid}", record, ttl=3600)

        async with Client(url, auth=tokens["access_token"]) as client:
            for fault in ({"status": 503}, {"delay_ms": 8000}, {"status": 400}):
                await make_due()
                await upstream.faults({"/token": fault})
                with anyio.fail_after(DEADLINE_S + 5):
                    result = await client.call_tool("upstream_me", {})
                text = "".join(getattr(part, "text", "") for part in result.content)
                assert result.is_error, text
                assert "upstream token is not available" in text, text
                assert not any(s in text for s in secrets_), text
            # The upstream healthy again: the token is refreshed and the tool works.
            await upstream.faults({})
            await make_due()
            result = await client.call_tool("upstream_me", {})
            text = "".join(getattr(part, "text", "") for part in result.content)
            assert not result.is_error and text.startswith("200 "), text
            fresh = await proxy.state.get(f"upstream:{gid}")
            assert fresh is not None and fresh["access_token"] != kept["access_token"]
        await proxy.aclose()


async def test_a_full_store_at_the_callback_sends_temporarily_unavailable_and_logs_no_stack(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store is bounded; filled (a registration flood, say), the person who comes back from the
    upstream gets an OAuth error at their app, not a 500, and no grant is left half-made."""
    caplog.set_level(logging.INFO)
    store = MemoryKeyValueStore(max_entries=200)
    async with proxied_desk("oidc", store=store) as (_upstream, proxy, url), person_at(url) as person:
        app = await person.register()
        sign_in = await person.begin(app)
        returned = await person.upstream_login(sign_in)
        junk = 0
        with pytest.raises(KeyValueStoreFull):
            while junk < 1000:
                await store.put(f"junk:{junk}", b"x", ttl=600)
                junk += 1
        entries = len(store)
        answer = await person.callback(returned)
        back = client_redirect(answer, sign_in)
        assert back["error"] == "temporarily_unavailable" and "code" not in back, back
        assert len(store) <= entries  # the transaction was spent; nothing half-made stayed
        assert not [r for r in caplog.records if r.exc_info or r.exc_text], "a stack trace was logged"

        # Room again: the same client signs in.
        await store.delete(*(f"junk:{n}" for n in range(junk)))
        again = await person.begin(app)
        assert (await person.exchange(again, await person.code(again))).status_code == 200
        await proxy.aclose()


async def test_the_store_down_gives_pages_and_errors_never_a_stack_or_a_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis (the fleet's store) stops mid-sign-in: the consent page and the callback show a 503 page,
    /token and the MCP endpoint refuse, nothing logs a stack trace; Redis back, sign-ins work again."""
    caplog.set_level(logging.INFO)
    with redis_server() as redis:
        async with (
            proxied_desk("oidc", store=redis.url, encryption_key="a-fleet-secret-of-at-least-32-bytes!") as (_upstream, proxy, url),
            person_at(url) as person,
        ):
            app, tokens = await person.tokens()
            waiting = await person.begin(app)
            returning = await person.begin(app)
            returned = await person.upstream_login(returning)
            redis.stop()
            try:
                with anyio.fail_after(20):
                    assert_page(await person.get(waiting.consent_url), 503)
                    assert_page(await person.callback(returned), 503)
                    refused = await person.refresh(app, tokens["refresh_token"])
                    assert refused.status_code >= 500 and "refresh_token" not in refused.text
                    assert await person.mcp_status(url, tokens["access_token"]) == 401
            finally:
                redis.start()
            assert not [r for r in caplog.records if r.exc_info or r.exc_text], "a stack trace was logged"
            assert "Traceback" not in "\n".join(person.bodies)
            _app, fresh = await person.tokens()
            assert await person.mcp_status(url, fresh["access_token"]) == 200
            await proxy.aclose()


# -- hostile Client ID Metadata Documents -------------------------------------------------------------


async def test_hostile_client_metadata_documents_are_refused_without_a_redirect() -> None:
    documents = DocumentServer()
    async with (
        documents.serving(),
        proxied_desk("oidc") as (_upstream, proxy, url),
        person_at(url) as person,
    ):
        _, challenge = pkce()

        async def authorize(client_id: str, redirect_uri: str = REDIRECT) -> httpx.Response:
            return await person.get(
                f"{person.base}/authorize",
                client_id=client_id,
                redirect_uri=redirect_uri,
                response_type="code",
                code_challenge=challenge,
                code_challenge_method="S256",
                state="st",
            )

        good = documents.document("/good.json", redirect_uris=[REDIRECT])
        answer = await authorize(good)
        assert answer.status_code == 302 and "/consent?" in answer.headers["location"], answer.text

        hostile = {
            "oversized": documents.document("/big.json", redirect_uris=[REDIRECT], client_name="x" * 10_000),
            "wrong client_id": documents.document(
                "/liar.json", redirect_uris=[REDIRECT], client_id=f"{documents.url}/good.json"
            ),
            "another redirect URI": documents.document(
                "/other.json", redirect_uris=["http://127.0.0.1:9/steal"]
            ),
        }
        documents.answers["/moved.json"] = Answer(
            status=302, headers={"location": "http://169.254.169.254/latest/meta-data"}
        )
        hostile["redirected to a private address"] = f"{documents.url}/moved.json"
        hostile["private address"] = "https://10.0.0.1/client.json"
        hostile["metadata address"] = "https://169.254.169.254/client.json"
        hostile["not a document"] = f"{documents.url}/missing.json"
        for why, client_id in hostile.items():
            answer = await authorize(client_id)
            assert answer.status_code == 400, (why, answer.status_code, answer.text)
            assert "location" not in answer.headers, why
            assert "Traceback" not in answer.text
        # A document's redirect URI is not enough either: the request's must be one of them.
        answer = await authorize(good, "http://127.0.0.1:9/steal")
        assert answer.status_code == 400 and "location" not in answer.headers
        assert documents.hits["/moved.json"] >= 1 and "169.254.169.254" not in "".join(documents.hosts)
        await proxy.aclose()


# -- forged tokens at the MCP endpoint ----------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _forged(header: dict[str, Any], claims: dict[str, Any], key: bytes | None) -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = b"" if key is None else hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


async def _upstream_tokens(upstream: Any) -> dict[str, Any]:
    """Tokens the upstream itself issues (to its own client, the proxy's): an opaque one and an ID token."""
    verifier, challenge = pkce()
    callback = "http://127.0.0.1:9/auth/callback"
    url = (
        upstream.endpoints["authorization_endpoint"]
        + "?"
        + urlencode(
            {
                "client_id": upstream.client_id,
                "redirect_uri": callback,
                "response_type": "code",
                "scope": "openid email profile",
                "nonce": "n",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
    )
    returned = await follow_login(url, callback)
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.post(
            upstream.endpoints["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": returned["code"],
                "code_verifier": verifier,
                "redirect_uri": callback,
                "client_id": upstream.client_id,
                "client_secret": upstream.client_secret,
            },
        )
    answer.raise_for_status()
    return dict(answer.json())


async def test_forged_and_foreign_tokens_get_401_at_the_mcp_endpoint() -> None:
    async with proxied_desk("oidc") as (upstream, proxy, url), person_at(url) as person:
        _app, tokens = await person.tokens()
        real = tokens["access_token"]
        assert await person.mcp_status(url, real) == 200
        claims = claims_of(real)
        header = json.loads(base64.urlsafe_b64decode(real.split(".")[0] + "=="))
        jwks = (await person.get(f"{person.base}/.well-known/jwks.json")).json()
        assert jwks["keys"] and all("d" not in key for key in jwks["keys"])  # public halves only
        public = json.dumps(jwks["keys"][0]).encode()

        forged = {
            "alg none": _forged({**header, "alg": "none"}, claims, None),
            "alg none, no typ": _forged({"alg": "none"}, claims, None),
            "HS256 with the public JWK": _forged({**header, "alg": "HS256"}, claims, public),
            "HS256 with the JWKS document": _forged(
                {**header, "alg": "HS256"}, claims, json.dumps(jwks).encode()
            ),
            "claims changed, signature kept": ".".join(
                [
                    real.split(".")[0],
                    _b64(json.dumps({**claims, "sub": "mallory"}).encode()),
                    real.split(".")[2],
                ]
            ),
        }
        theirs = await _upstream_tokens(upstream)
        forged["the upstream's opaque access token"] = theirs["access_token"]
        forged["the upstream's ID token"] = theirs["id_token"]

        # Signed by the proxy's own key, for the same grant, but for another resource or long expired.
        grant = Grant(
            grant_id="g-other",
            client_id=claims["client_id"],
            subject=claims["sub"],
            scopes=(READ,),
            resource="http://127.0.0.1:1/mcp",
            claims={},
            expires_at=time.time() + 3600,
        )
        await proxy.grants.create(grant)
        forged["another resource"] = (await proxy.grants.issue("g-other")).access_token
        past = Grants(
            proxy.state,
            proxy.keys,
            issuer=proxy.issuer,
            access_token_ttl_s=60,
            clock=lambda: time.time() - 3600,
        )
        forged["expired"] = (await past.issue(claims["gid"])).access_token
        assert claims_of(forged["expired"])["exp"] < time.time() - 600

        for why, token in forged.items():
            assert await person.mcp_status(url, token) == 401, why
        assert await person.mcp_status(url, real) == 200  # none of it revoked the real one
        await proxy.aclose()


# -- secrets never leak --------------------------------------------------------------------------------


async def test_no_secret_reaches_a_log_or_a_body(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="mcp_resolve")
    encryption_key = "attack-test-encryption-key-" + secrets.token_hex(16)
    options = {"upstream_options": {"timeout_s": DEADLINE_S}, "encryption_key": encryption_key}
    async with proxied_desk("oidc", **options) as (upstream, proxy, url), person_at(url) as person:
        seen_upstream: list[Any] = []
        exchange_code = proxy.upstream.exchange_code

        async def spied(**kwargs: Any) -> Any:  # the real exchange; the test keeps what it returned
            tokens = await exchange_code(**kwargs)
            seen_upstream.append(tokens)
            return tokens

        proxy.upstream.exchange_code = spied
        secret_values = [encryption_key, upstream.client_secret]
        upstream_codes: list[str] = []

        # The whole flow, a refresh, a tool call with the upstream token.
        app = await person.register()
        secret_values.append(app.client_secret)
        sign_in = await person.begin(app, scope=f"{READ} {WRITE}")
        returned = await person.upstream_login(sign_in)
        upstream_codes.append(returned["code"])
        code = client_redirect(await person.callback(returned), sign_in)["code"]
        first = (await person.exchange(sign_in, code)).json()
        second = (await person.refresh(app, first["refresh_token"])).json()
        async with Client(url, auth=second["access_token"]) as client:
            assert not (await client.call_tool("upstream_me", {})).is_error
            assert not (await client.call_tool("whoami", {})).is_error

        # The failures: an upstream refresh failing under a tool, a code replayed, a refresh token
        # reused, a wrong verifier, the upstream failing at the code exchange, forged state.
        gid = claims_of(second["access_token"])["gid"]
        kept = await proxy.state.get(f"upstream:{gid}")
        assert kept is not None
        kept_due = {**kept, "expires_at": time.time()}
        await proxy.state.put(f"upstream:{gid}", kept_due, ttl=3600)
        await upstream.faults({"/token": {"status": 400}})
        async with Client(url, auth=second["access_token"]) as client:
            assert (await client.call_tool("upstream_me", {})).is_error
        await upstream.faults({})
        assert (await person.exchange(sign_in, code)).status_code == 400
        assert (await person.refresh(app, first["refresh_token"])).status_code == 400
        assert await person.mcp_status(url, second["access_token"]) == 401

        other = await person.begin(app)
        other_code = await person.code(other)
        assert (await person.exchange(other, other_code, code_verifier=pkce()[0])).status_code == 400
        failing = await person.begin(app)
        failing_returned = await person.upstream_login(failing)
        upstream_codes.append(failing_returned["code"])
        await upstream.faults({"/token": {"status": 503}})
        assert client_redirect(await person.callback(failing_returned), failing)["error"]
        await upstream.faults({})
        assert_page(await person.callback({"state": query_of(other.consent_url)["txn"], "code": "x"}))
        assert_page(await person.callback({**failing_returned, "state": "forged"}))

        assert seen_upstream, "the upstream exchange was never seen"
        for tokens in seen_upstream:
            secret_values += [tokens.access_token, tokens.refresh_token, tokens.id_token]
        secret_values += [kept["access_token"], kept["refresh_token"]]
        secret_values += [first["access_token"], first["refresh_token"], second["access_token"]]
        secret_values += [second["refresh_token"], code, other_code, *upstream_codes]
        secret_values = [s for s in secret_values if s]
        await proxy.aclose()

    main = threading.main_thread().ident
    server_logs = [  # the test's own HTTP client logs the URLs it requests: only the server's count
        r for r in caplog.records if not (r.name.startswith(("httpx", "httpcore")) and r.thread == main)
    ]
    assert any(r.name.startswith("mcp_resolve") for r in server_logs), "no log was captured"
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in server_logs)
    bodies = "\n".join(person.bodies)
    assert "Traceback" not in bodies
    for value in secret_values:
        assert value not in logged, f"a secret ({len(value)} chars) is in the logs"
        assert value not in bodies, f"a secret ({len(value)} chars) is in a body"
