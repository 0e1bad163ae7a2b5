"""A grant's life after sign-in: refreshes that ask the upstream, codes exchanged twice at once.

The upstream is oidc-provider on loopback (Google-like or GitHub-like), the proxy serves the desk
with uvicorn, the person is `ConsentingBrowser`, and the client speaks to `/token` with httpx, so
each answer (200, 400 `invalid_grant`, 503 `temporarily_unavailable`) is seen as a client sees it.
A person signed out upstream (their upstream tokens revoked at its revocation endpoint) loses the
grant at the next refresh; an upstream that cannot be reached fails the refresh closed, and the
same refresh token works once it is back. The store is the in-memory one, watched: it records what
is written for how long, and can hold one kind of write back, to line up a race.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import httpx
import pytest

from mcp_resolve import Client
from mcp_resolve.stores import MemoryKeyValueStore
from proxy_helpers import READ, ConsentingBrowser, proxied_desk
from upstream_helpers import Upstream

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REDIRECT = "http://127.0.0.1:47823/callback"


class WatchedStore(MemoryKeyValueStore):
    """The in-memory store, recording each put (key, ttl); puts of keys starting with `slow_prefix`
    wait `slow_s` first (the store answering late, to line two requests up)."""

    def __init__(self, *, slow_prefix: str | None = None, slow_s: float = 0.0) -> None:
        super().__init__()
        self.puts: list[tuple[str, float]] = []
        self.slow_prefix = slow_prefix
        self.slow_s = slow_s

    async def put(self, key: str, value: bytes, *, ttl: float, only_new: bool = False) -> bool:
        self.puts.append((key, ttl))
        if self.slow_prefix is not None and key.startswith(self.slow_prefix):
            await anyio.sleep(self.slow_s)
        return await super().put(key, value, ttl=ttl, only_new=only_new)


@dataclass
class Session:
    """A client registered at the proxy, signed in, holding its tokens."""

    base: str
    http: httpx.AsyncClient
    client_id: str
    client_secret: str
    tokens: dict[str, Any]

    @property
    def grant_id(self) -> str:
        segment = self.tokens["access_token"].split(".")[1]
        return str(json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))["gid"])

    async def token(self, form: dict[str, str]) -> httpx.Response:
        credentials = {"client_id": self.client_id, "client_secret": self.client_secret}
        return await self.http.post(f"{self.base}/token", data={**form, **credentials})

    async def refresh(self, refresh_token: str | None = None) -> httpx.Response:
        """Refresh with `refresh_token` (default: the newest); a 200 keeps the new tokens."""
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token or self.tokens["refresh_token"]}
        answer = await self.token(form)
        if answer.status_code == 200:
            self.tokens = answer.json()
        return answer


async def code_for(base: str, http: httpx.AsyncClient) -> tuple[str, str, str, str]:
    """Register a client and sign a person in: (client_id, client_secret, code, code_verifier)."""
    registered = await http.post(
        f"{base}/register",
        json={
            "redirect_uris": [REDIRECT],
            "client_name": "Lifecycle Test App",
            "token_endpoint_auth_method": "client_secret_post",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        },
    )
    assert registered.status_code == 201, registered.text
    client = registered.json()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT,
        "response_type": "code",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s",
        "scope": READ,
    }
    back = await ConsentingBrowser(REDIRECT).visit(f"{base}/authorize?{urlencode(params)}")
    code = dict(parse_qsl(urlsplit(back).query))["code"]
    return client["client_id"], client["client_secret"], code, verifier


@asynccontextmanager
async def signed_in(mcp_url: str) -> AsyncIterator[Session]:
    base = mcp_url.rsplit("/", 1)[0]
    async with httpx.AsyncClient(timeout=30) as http:
        client_id, client_secret, code, verifier = await code_for(base, http)
        session = Session(base, http, client_id, client_secret, {})
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": REDIRECT,
        }
        answer = await session.token(form)
        assert answer.status_code == 200, answer.text
        session.tokens = answer.json()
        yield session


async def revoke_upstream(upstream: Upstream, token: str, hint: str) -> None:
    """The person signs out upstream: their token there is revoked (RFC 7009), as an admin would."""
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.post(
            upstream.endpoints["revocation_endpoint"],
            data={
                "token": token,
                "token_type_hint": hint,
                "client_id": upstream.client_id,
                "client_secret": upstream.client_secret,
            },
        )
    assert answer.status_code == 200, answer.text


def assert_unavailable(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"] == "temporarily_unavailable"
    assert answer.headers["retry-after"].isdigit() and answer.headers["cache-control"] == "no-store"


async def test_a_refresh_asks_the_upstream_and_a_person_signed_out_there_loses_the_grant() -> None:
    """Google-like upstream with refresh tokens: each refresh of ours (upstream_check_s=0) refreshes
    upstream; the upstream down answers 503 and the same token works once it is back; the upstream
    refresh token revoked, our refresh is `invalid_grant` and every token of the grant stops working.
    Upstream refreshes hold their lock longer than the upstream's deadline, and what they keep dies
    with the grant."""
    store = WatchedStore()
    options: dict[str, Any] = {"upstream_check_s": 0, "store": store, "upstream_options": {"timeout_s": 40}}
    async with proxied_desk("oidc", **options) as (upstream, proxy, url), signed_in(url) as session:
        gid = session.grant_id
        grant = await proxy.grants.get(gid)
        assert grant is not None
        ends = time.time() + 100
        await proxy.grants.create(dataclasses.replace(grant, expires_at=ends))  # a grant ending soon
        kept = await proxy.state.get(f"upstream:{gid}")
        assert kept is not None and kept["refresh_token"]

        assert (await session.refresh()).status_code == 200
        fresh = await proxy.state.get(f"upstream:{gid}")
        assert fresh is not None and fresh["access_token"] != kept["access_token"]  # asked upstream
        locks = [ttl for key, ttl in store.puts if key == f"refreshing:{gid}"]
        assert locks and all(ttl > 40 for ttl in locks), locks
        kept_for = [ttl for key, ttl in store.puts if key == f"upstream:{gid}"][-1]
        assert kept_for <= ends - time.time() + 1, kept_for

        # A tool's upstream token refreshed upstream: kept no longer than the grant either.
        due = {**fresh, "expires_at": time.time()}
        await proxy.state.put(f"upstream:{gid}", due, ttl=60)
        async with Client(url, auth=session.tokens["access_token"]) as client:
            assert not (await client.call_tool("upstream_me", {})).is_error
        kept_for = [ttl for key, ttl in store.puts if key == f"upstream:{gid}"][-1]
        assert kept_for <= ends - time.time() + 1, kept_for

        # The upstream down: fail closed, the grant and the refresh token untouched.
        for fault in ({"status": 503}, {"status": 500}):
            await upstream.faults({"/token": fault})
            token = session.tokens["refresh_token"]
            assert_unavailable(await session.refresh())
            await upstream.faults({})
            assert await proxy.grants.get(gid) is not None
            assert (await session.refresh(token)).status_code == 200  # the same token, retried

        # The person signed out upstream (their refresh token there revoked): the grant ends.
        upstream_refresh = (await proxy.state.get(f"upstream:{gid}") or {})["refresh_token"]
        await revoke_upstream(upstream, upstream_refresh, "refresh_token")
        refused = await session.refresh()
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.text
        assert await proxy.grants.get(gid) is None
        assert await proxy.state.get(f"upstream:{gid}") is None
        assert await proxy.load_access_token(session.tokens["access_token"]) is None
        assert (await session.refresh()).status_code == 400  # and stays refused
        await proxy.aclose()


async def test_without_upstream_refresh_tokens_user_info_is_asked() -> None:
    """GitHub-like (an OAuth App: no refresh token upstream): our refresh calls the user API with the
    upstream access token; it down answers 503; the token revoked upstream ends the grant."""
    options: dict[str, Any] = {"upstream_check_s": 0, "upstream_server": {"refresh_tokens": False}}
    async with proxied_desk("oauth", **options) as (upstream, proxy, url), signed_in(url) as session:
        gid = session.grant_id
        kept = await proxy.state.get(f"upstream:{gid}")
        assert kept is not None and not kept["refresh_token"]
        assert (await session.refresh()).status_code == 200
        checked = await proxy.state.get(f"upstream:{gid}")
        assert checked is not None and checked["checked_at"] > kept["checked_at"]
        assert checked["access_token"] == kept["access_token"]

        await upstream.faults({"/user": {"status": 502}})
        assert_unavailable(await session.refresh())
        await upstream.faults({})
        assert (await session.refresh()).status_code == 200

        await revoke_upstream(upstream, kept["access_token"], "access_token")
        refused = await session.refresh()
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.text
        assert await proxy.grants.get(gid) is None
        await proxy.aclose()


async def test_the_upstream_is_asked_at_most_once_per_upstream_check_s() -> None:
    """By default a refresh within an hour of the last check does not reach the upstream at all."""
    async with proxied_desk("oidc") as (upstream, proxy, url), signed_in(url) as session:
        gid = session.grant_id
        await upstream.faults({"/token": {"status": 503}})
        assert (await session.refresh()).status_code == 200  # checked at sign-in: not due
        kept = await proxy.state.get(f"upstream:{gid}")
        assert kept is not None
        await proxy.state.put(f"upstream:{gid}", {**kept, "checked_at": time.time() - 3601}, ttl=600)
        assert_unavailable(await session.refresh())  # due now, and the upstream is down
        await upstream.faults({})
        assert (await session.refresh()).status_code == 200
        await proxy.aclose()


async def test_an_id_token_upstream_without_refresh_tokens_has_nothing_to_ask() -> None:
    """Nothing can be checked without a refresh token when the identity came in an ID token: the
    grant lives until it ends, whatever state the upstream is in."""
    options: dict[str, Any] = {"upstream_check_s": 0, "upstream_server": {"refresh_tokens": False}}
    async with proxied_desk("oidc", **options) as (upstream, proxy, url), signed_in(url) as session:
        down = {"status": 503}
        await upstream.faults({"/token": down, "/me": down, "/jwks": down, "/token/revocation": down})
        for _ in range(2):
            assert (await session.refresh()).status_code == 200
        await proxy.aclose()


async def test_a_code_exchanged_twice_at_once_leaves_no_working_token() -> None:
    """The store slow to write the used-code marker: the second exchange still finds it, and revokes
    what the first got (RFC 6749 §4.1.2), however the two interleave."""
    store = WatchedStore(slow_prefix="used-code:", slow_s=0.3)
    async with proxied_desk("oidc", store=store) as (_upstream, proxy, url):
        base = url.rsplit("/", 1)[0]
        async with httpx.AsyncClient(timeout=30) as http:
            client_id, client_secret, code, verifier = await code_for(base, http)
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "code_verifier": verifier,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "client_secret": client_secret,
            }
            answers: list[httpx.Response] = []

            async def exchange() -> None:
                answers.append(await http.post(f"{base}/token", data=form))

            async with anyio.create_task_group() as group:
                group.start_soon(exchange)
                await anyio.sleep(0.05)
                group.start_soon(exchange)
        assert any(a.status_code == 400 and a.json()["error"] == "invalid_grant" for a in answers), answers
        for answer in answers:
            if answer.status_code == 200:
                assert await proxy.load_access_token(answer.json()["access_token"]) is None
        await proxy.aclose()
