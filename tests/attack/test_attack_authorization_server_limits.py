"""One peer flooding the authorization server: capped per address, so the store stays free for everybody.

`/register` and `/authorize` make the provider keep something (a client for
months, a sign-in for minutes) in a store bounded for all clients together;
`/token` ends in new tokens. Each has a cap per address (`HttpOptions`:
`max_registrations_per_address` ...). The limiter itself is checked without
sockets (a fake clock); the endpoints' answers in process; and over real
HTTP a flood from 127.0.0.2 is refused past its cap while a person at
127.0.0.1 still signs in, at the embedded example provider and at the
`OAuthProxy`, whose store would otherwise be full.
"""

from __future__ import annotations

import logging
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from auth_helpers import serve_at_known_url
from mcp_resolve import Client
from mcp_resolve.client.auth import OAuth
from mcp_resolve.stores import MemoryKeyValueStore
from mcp_resolve.transports.http import HttpOptions
from mcp_resolve.transports.http._auth.authorization_server._limits import PeerLimiter
from own_users_helpers import REDIRECT_URI, example, pkce, register, sign_in
from proxy_helpers import ConsentingBrowser, proxied_desk

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8765"
FLOODER = "127.0.0.2"
CAPS: dict[str, Any] = {
    "max_registrations_per_address": 5,
    "max_authorizations_per_address": 5,
    "max_token_requests_per_address": 5,
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def authorize_query(client_id: str, challenge: str, redirect_uri: str = REDIRECT_URI) -> dict[str, str]:
    return {
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "flood-state",
        "scope": "desk",
    }


# -- the limiter, no sockets -------------------------------------------------------------------------


def test_a_peer_gets_its_burst_then_one_request_per_refill() -> None:
    clock = Clock()
    limiter = PeerLimiter("/register", 3, 30.0, clock=clock)
    assert [limiter.take("10.0.0.1") for _ in range(3)] == [None, None, None]
    wait = limiter.take("10.0.0.1")
    assert wait is not None and wait == pytest.approx(10.0)  # 3 per 30 s: one more every 10 s
    assert PeerLimiter.retry_after(wait) == "10" and PeerLimiter.retry_after(0.2) == "1"
    clock.now += 9.0
    assert limiter.take("10.0.0.1") == pytest.approx(1.0)  # refused requests spend nothing
    clock.now += 1.0
    assert limiter.take("10.0.0.1") is None
    assert limiter.take("10.0.0.1") is not None
    clock.now += 3600
    assert [limiter.take("10.0.0.1") for _ in range(4)][:3] == [None, None, None]  # refilled to the cap only


def test_each_address_has_its_own_count() -> None:
    limiter = PeerLimiter("/authorize", 2, 600.0, clock=Clock())
    for _ in range(2):
        assert limiter.take("10.0.0.1") is None
    assert limiter.take("10.0.0.1") is not None
    assert limiter.take("10.0.0.2") is None and limiter.take("10.0.0.2") is None


def test_the_limiter_tracks_a_bounded_number_of_addresses_in_bounded_memory() -> None:
    clock = Clock()
    limiter = PeerLimiter("/token", 1, 60.0, max_peers=1000, clock=clock)
    limiter.take("flooder")
    assert limiter.take("flooder") is not None
    for i in range(998):
        limiter.take(f"10.1.{i // 256}.{i % 256}")
    assert limiter.take("flooder") is not None  # seen recently: still counted
    tracemalloc.start()
    try:
        for i in range(2_000):
            limiter.take(f"10.2.{i // 256}.{i % 256}")
        after_few, _ = tracemalloc.get_traced_memory()
        for i in range(20_000):
            limiter.take(f"10.3.{i // 256}.{i % 256}")
        after_many, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(limiter) == 1000
    assert after_many < after_few + 64 * 1024  # ten times the addresses, the same memory
    assert limiter.take("flooder") is None  # forgotten first once it stopped coming: a fresh count


def test_a_refusal_is_logged_once_per_address_and_window_naming_the_address_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_resolve")
    clock = Clock()
    limiter = PeerLimiter("/register", 1, 3600.0, clock=clock)
    limiter.take("10.9.9.9")
    for _ in range(50):
        limiter.take("10.9.9.9")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "10.9.9.9" in warnings[0].getMessage() and "/register" in warnings[0].getMessage()
    clock.now += 3600
    limiter.take("10.9.9.9")
    limiter.take("10.9.9.9")
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2  # a new window


def test_caps_are_positive_or_none() -> None:
    for name in CAPS:
        zero: dict[str, Any] = {name: 0}
        off: dict[str, Any] = {name: None}
        with pytest.raises(ValueError, match=name):
            HttpOptions(**zero)
        assert getattr(HttpOptions(**off), name) is None
    assert (
        HttpOptions().max_registrations_per_address,
        HttpOptions().max_authorizations_per_address,
        HttpOptions().max_token_requests_per_address,
    ) == (20, 60, 120)


# -- the endpoints' answers, in process ---------------------------------------------------------------


def _example_app(base: str, **options: Any) -> tuple[Any, Any]:
    """The example provider's app with `options` (the example's own `app()` takes none for the app)."""
    mcp, provider = example().build(base)
    app = mcp.streamable_http_app(**options)
    app.router.routes.append(Route("/login", provider.login, methods=["GET", "POST"]))
    return app, provider


@asynccontextmanager
async def in_process(app: Any, address: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        yield http


async def test_over_the_cap_json_endpoints_answer_429_and_authorize_a_page_that_redirects_nowhere(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_resolve")
    app, provider = _example_app(BASE, **CAPS)
    _, challenge = pkce()
    async with in_process(app, FLOODER) as http:
        client_id = (await register(http))["client_id"]
        for _ in range(4):
            await register(http)
        refused = await http.post("/register", json={"redirect_uris": [REDIRECT_URI]})
        assert refused.status_code == 429
        assert refused.json()["error"] == "temporarily_unavailable"
        assert 1 <= int(refused.headers["retry-after"]) <= 3600
        assert refused.headers["cache-control"] == "no-store"
        assert len(provider.clients) == 5

        for _ in range(5):
            assert (
                await http.get("/authorize", params=authorize_query(client_id, challenge))
            ).status_code == 302
        pending = len(provider.pending)
        over = await http.get("/authorize", params=authorize_query(client_id, challenge))
        assert over.status_code == 429 and "location" not in over.headers
        assert (
            over.headers["content-type"].startswith("text/plain")
            and 1 <= int(over.headers["retry-after"]) <= 600
        )
        assert "flood-state" not in over.text and client_id not in over.text
        # Refused before the client is looked up: an unknown client gets the same answer, not a 400.
        assert (await http.get("/authorize", params={"client_id": "nobody"})).status_code == 429
        assert len(provider.pending) == pending == 5

        form = {
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": "x",
            "code_verifier": "y" * 43,
        }
        codes = [(await http.post("/token", data=form)).status_code for _ in range(7)]
        assert codes == [400] * 5 + [429, 429]
        answer = await http.post("/token", data=form)
        assert (
            answer.json()["error"] == "temporarily_unavailable"
            and 1 <= int(answer.headers["retry-after"]) <= 60
        )

    async with in_process(app, "127.0.0.3") as http:  # another address: its own count
        await register(http)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert FLOODER in text
    assert client_id not in text and "flood-state" not in text and challenge not in text
    assert len([r for r in caplog.records if "refused" in r.getMessage() and FLOODER in r.getMessage()]) == 3


async def test_a_cap_of_none_is_no_cap() -> None:
    app, provider = _example_app(BASE, max_registrations_per_address=None)
    async with in_process(app, FLOODER) as http:
        for _ in range(30):
            await register(http)
    assert len(provider.clients) == 30


# -- over real HTTP ------------------------------------------------------------------------------------


def _from(address: str) -> httpx.AsyncHTTPTransport:
    return httpx.AsyncHTTPTransport(local_address=address)


@pytest.mark.slow
async def test_a_flood_from_one_address_is_capped_and_a_person_elsewhere_still_signs_in() -> None:
    made: list[Any] = []

    def make(base: str) -> Any:
        app, provider = _example_app(base, **CAPS)
        made.append(provider)
        return app

    async with serve_at_known_url(make) as base:
        provider = made[0]
        _, challenge = pkce()
        async with httpx.AsyncClient(base_url=base, transport=_from(FLOODER), timeout=10) as flood:
            client_id = (await register(flood))["client_id"]
            body = {"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"}
            registered = [(await flood.post("/register", json=body)).status_code for _ in range(60)]
            asked = [
                (await flood.get("/authorize", params=authorize_query(client_id, challenge))).status_code
                for _ in range(60)
            ]
        assert registered.count(201) == 4 and registered.count(429) == 56
        assert asked.count(302) == 5 and asked.count(429) == 55
        assert len(provider.clients) == 5 and len(provider.pending) == 5  # not 61 and 60

        async with httpx.AsyncClient(base_url=base, transport=_from("127.0.0.1"), timeout=10) as person:
            verifier, challenge = pkce()
            client_id = (await register(person))["client_id"]
            back = await sign_in(person, client_id, challenge)
            tokens = await person.post(
                "/token",
                data={
                    "grant_type": "authorization_code",
                    "client_id": client_id,
                    "code": back["code"],
                    "code_verifier": verifier,
                    "redirect_uri": REDIRECT_URI,
                },
            )
            assert tokens.status_code == 200, tokens.text
            assert tokens.json()["access_token"]


@pytest.mark.slow
async def test_a_flood_leaves_the_proxy_store_far_from_full_and_a_person_signs_in_through_it() -> None:
    later = [0.0]
    store = MemoryKeyValueStore(max_entries=200, clock=lambda: time.time() + later[0])
    async with proxied_desk("oidc", store=store, app_options=CAPS) as (_upstream, proxy, url):
        base = url.removesuffix("/mcp")
        redirect = "http://127.0.0.1:47823/callback"
        _, challenge = pkce()
        async with httpx.AsyncClient(base_url=base, transport=_from(FLOODER), timeout=10) as flood:
            body = {"redirect_uris": [redirect], "token_endpoint_auth_method": "none"}
            first = await flood.post("/register", json=body)
            client_id = first.json()["client_id"]
            # Unbounded, these 250 registrations and 250 sign-ins would fill the store (200 entries).
            registered = [(await flood.post("/register", json=body)).status_code for _ in range(250)]
            asked = [
                (
                    await flood.get("/authorize", params=authorize_query(client_id, challenge, redirect))
                ).status_code
                for _ in range(250)
            ]
        assert registered.count(201) == 4 and set(registered) == {201, 429}
        assert asked.count(302) == 5 and set(asked) == {302, 429}
        assert len(store) < 200 // 4

        person = ConsentingBrowser()
        visited: list[str] = []

        async def browse(authorization_url: str) -> None:
            visited.append(authorization_url)
            await person(authorization_url)

        async with Client(url, auth=OAuth(redirect_handler=browse, callback_handler=person)) as client:
            result = await client.call_tool("whoami", {})
            assert "".join(getattr(p, "text", "") for p in result.content).startswith("google:alice")
        assert person.consent_pages == 1
        signed_in = httpx.URL(visited[0]).params["client_id"]

        # A registration nobody signed in with is kept a day; one somebody signed in with, 90 days.
        later[0] = 2 * 86400
        assert await proxy.get_client(client_id) is None
        assert await proxy.get_client(signed_in) is not None
        later[0] = 89 * 86400
        assert await proxy.get_client(signed_in) is not None
        await proxy.aclose()
