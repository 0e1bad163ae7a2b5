"""Attack suite (issue 35): a slow authorization server, hostile audiences and clock skew.

A JWKS, introspection or metadata endpoint that sends its headers and then
one byte a second never trips a per-read timeout: before issue 35 it held
every authenticated request for as long as it trickled. Here such a server
(servers/trickle_http.py, real sockets in threads of their own) stands in
for the authorization server of a protected MCP server run by uvicorn, and
twenty authenticated requests at once must all be answered within the
fetch deadline plus a margin: 401 for a token whose key (or answer) had to
be fetched, 200 for one whose key was already cached. The client's own
fetches (metadata, token endpoint) get the same deadline.

Then the tokens themselves: audiences that only look like this server's
(a user name, a fragment, a tab, a port that is not one) are refused by
both verifiers and the bearer check (and by the client, as the resource a
server's metadata names), and `exp`, `nbf` and `iat` go by one clock-skew
rule everywhere, the refund desk's `--auth` included.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from joserfc import jwt
from joserfc.jwk import ECKey

from auth_helpers import serve_at_known_url
from conftest import EXAMPLES, load_module
from mcp_resolve import MCPServer
from mcp_resolve.auth import AccessToken, AuthSettings, IntrospectionVerifier, JWTVerifier
from mcp_resolve.auth.tokens import DEFAULT_LEEWAY_S, lifetime_refusal, matching_audience, same_resource
from mcp_resolve.client.auth.browser import HeadlessBrowser
from mcp_resolve.client.auth.discovery import discover_authorization_server, resource_covers
from mcp_resolve.client.auth.errors import AuthorizationError
from mcp_resolve.client.auth.registration import Registration
from mcp_resolve.client.auth.token_endpoint import secret_auth, token_request
from servers.attack_http import BOTH, with_meta
from servers.trickle_http import TrickleServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DEADLINE = 1.5
"""The verifiers' `timeout_s`: one fetch, whole, may take this long."""
MARGIN = 4.0
"""Room for two shared cores; the trickle itself would last minutes."""
ISSUER = "https://auth.example"
RESOURCE = "https://desk.example.com/mcp"


class Keys:
    """The authorization server's signing keys: `known` is published, `rotated` not yet."""

    def __init__(self) -> None:
        self.known = ECKey.generate_key("P-256", parameters={"kid": "known"})
        self.rotated = ECKey.generate_key("P-256", parameters={"kid": "rotated"})

    def jwks(self, method: str, path: str, body: bytes) -> dict[str, Any]:
        return {"keys": [self.known.as_dict(private=False)]}

    def mint(self, audience: Any, *, key: ECKey | None = None, **claims: Any) -> str:
        signer = key or self.known
        now = int(time.time())
        payload = {
            "iss": ISSUER,
            "sub": "alice",
            "aud": audience,
            "client_id": "c",
            "iat": now,
            "exp": now + 300,
        }
        payload.update(claims)
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode({"alg": "ES256", "kid": signer.kid}, payload, signer)


@pytest.fixture
def keys() -> Keys:
    return Keys()


@pytest.fixture
def jwks(keys: Keys) -> Iterator[TrickleServer]:
    with TrickleServer(keys.jwks) as server:
        yield server


def tools_list(token: str) -> dict[str, Any]:
    """A 2026-07-28 `tools/list` with a bearer token."""
    headers = {**BOTH, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    return {
        "json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": with_meta({})},
        "headers": {**headers, "authorization": f"Bearer {token}"},
    }


@asynccontextmanager
async def protected(verifier: Any) -> AsyncIterator[str]:
    """A protected MCP server under uvicorn on loopback; yields its URL (its resource URL too)."""

    def make(base: str) -> Any:
        mcp = MCPServer(
            "deadline-desk",
            token_verifier=verifier,
            auth=AuthSettings(issuer_url=ISSUER, resource_server_url=f"{base}/mcp"),
        )

        @mcp.tool()
        async def ping() -> str:
            return "pong"

        return mcp.streamable_http_app()

    async with serve_at_known_url(make) as base:
        yield f"{base}/mcp"


async def burst(url: str, tokens: list[str]) -> list[int]:
    """Every token's request at once; all must be answered within the deadline and the margin."""
    statuses = [0] * len(tokens)
    async with httpx.AsyncClient(timeout=60) as http:

        async def one(index: int) -> None:
            statuses[index] = (await http.post(url, **tools_list(tokens[index]))).status_code

        with anyio.fail_after(DEADLINE + MARGIN):
            async with anyio.create_task_group() as group:
                for index in range(len(tokens)):
                    group.start_soon(one, index)
    return statuses


def jwt_verifier(jwks: TrickleServer) -> JWTVerifier:
    return JWTVerifier(jwks_uri=f"{jwks.base}/jwks", timeout_s=DEADLINE, jwks_refetch_interval_s=1)


# -- outbound fetches have one deadline -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["trickle", "stall"])
async def test_a_slow_jwks_refuses_every_waiting_request_at_the_deadline(
    jwks: TrickleServer, keys: Keys, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    jwks.mode = mode
    async with protected(jwt_verifier(jwks)) as url:
        tokens = [keys.mint(url, sub=f"user-{n}") for n in range(20)]
        with caplog.at_level(logging.INFO, logger="mcp_resolve.auth"):
            statuses = await burst(url, tokens)
    assert statuses == [401] * 20
    assert jwks.connections == 1  # the twenty waited on one fetch, then gave up with it
    assert f"did not answer in full within {DEADLINE:g} s" in caplog.text
    assert not any(token in caplog.text for token in tokens) and "Traceback" not in caplog.text


async def test_cached_keys_keep_serving_while_a_refetch_trickles(jwks: TrickleServer, keys: Keys) -> None:
    async with protected(jwt_verifier(jwks)) as url:
        assert await burst(url, [keys.mint(url)]) == [200]  # the JWKS is fetched and cached
        jwks.mode = "trickle"  # then the authorization server slows to a byte a second
        known = [keys.mint(url, sub=f"known-{n}") for n in range(10)]
        rotated = [keys.mint(url, key=keys.rotated, sub=f"rotated-{n}") for n in range(10)]
        statuses = await burst(url, [token for pair in zip(known, rotated, strict=True) for token in pair])
        assert statuses == [200, 401] * 10  # a cached kid never waits; an unknown one gives up in time
        assert jwks.connections == 2  # the first fetch, and one refetch for the unknown kid
        assert await burst(url, known[:1]) == [200]


async def test_a_slow_introspection_endpoint_refuses_at_the_deadline() -> None:
    with TrickleServer(lambda *_: {"active": True}) as endpoint:
        endpoint.mode = "trickle"
        verifier = IntrospectionVerifier(f"{endpoint.base}/introspect", timeout_s=DEADLINE)
        async with protected(verifier) as url:
            statuses = await burst(url, [f"opaque-{n}" for n in range(20)])
    assert statuses == [401] * 20
    assert verifier.requests == 20  # each asked (on a loaded machine some are cut before they connect)
    assert 1 <= endpoint.connections <= 20


async def test_the_clients_fetches_from_an_authorization_server_have_one_deadline() -> None:
    with TrickleServer(lambda *_: {}) as server:
        server.mode = "trickle"
        async with httpx.AsyncClient(timeout=DEADLINE) as http:
            with anyio.fail_after(DEADLINE + MARGIN), pytest.raises(AuthorizationError) as caught:
                await discover_authorization_server(http, server.base)
            # cut at the deadline, and said so: no answer is not "no metadata here", so no next URL
            assert caught.value.error == "network_error"
            assert caught.value.description == (
                f"could not reach {server.base}/.well-known/oauth-authorization-server: "
                f"no complete answer within {DEADLINE:g} s"
            )
            metadata = {"token_endpoint": f"{server.base}/token"}
            auth = secret_auth(Registration("c"))
            with anyio.fail_after(DEADLINE + MARGIN), pytest.raises(httpx.TimeoutException):
                await token_request(http, metadata, server.base, "client_credentials", {}, auth)
    assert server.connections == 2


async def test_the_headless_browser_has_the_same_deadline() -> None:
    """Its visit to an authorization server that sends a redirect's headers a byte at a time is cut at the
    deadline; a page trickled after its headers is never waited for (a browser step needs no body)."""
    with TrickleServer(lambda *_: {}) as server:
        server.byte_every_s = 0.3  # well inside the per-read timeout
        browser = HeadlessBrowser(http_client=lambda: httpx.AsyncClient(timeout=DEADLINE))
        server.mode = "trickle_head"
        with anyio.fail_after(DEADLINE + MARGIN), pytest.raises(httpx.TimeoutException):
            await browser(f"{server.base}/authorize")
        server.mode = "trickle"
        with anyio.fail_after(MARGIN), pytest.raises(AuthorizationError) as caught:
            await browser(f"{server.base}/authorize")
        assert caught.value.error == "interaction_required"
    assert server.connections == 2


# -- audiences that only look like this server ----------------------------------------------------

HOSTILE_AUDIENCES = [
    "https://user@desk.example.com/mcp",
    "https://user:secret@desk.example.com/mcp",
    "https://@desk.example.com/mcp",
    "https://desk.example.com/mcp#x",
    "https://desk.example.com/mcp#",
    "https://desk.example.com#/mcp",
    "https://evil.example\\@desk.example.com/mcp",
    "https://desk.example.com:443@evil.example/mcp",
    "https://desk.example.com/mc\tp",
    "https://desk.exa\nmple.com/mcp",
    "https://desk.example.com/mcp\r\n",
    " https://desk.example.com/mcp",
    "https://desk.example.com:0443/mcp",
    "https://desk.example.com:99999/mcp",
    "https://desk.example.com:abc/mcp",
    "https://desk.example.com:-443/mcp",
    "https://desk%2eexample.com/mcp",
    "https://desk.example.com./mcp",
    "https://desk.example.com/mcp/..",
    "https://desk.example.com/MCP",
    "https://desk.example.com/mcp?x=1",
    "https://desk.example.com.evil.example/mcp",
    "http://desk.example.com/mcp",
    "wss://desk.example.com/mcp",
    "//desk.example.com/mcp",
    "desk.example.com/mcp",
    "https://[desk.example.com]/mcp",
]
SAME_RESOURCE = [
    "https://desk.example.com/mcp",
    "HTTPS://Desk.Example.COM:443/mcp/",
    "https://desk.example.com:/mcp",
]


def test_only_spellings_of_this_resource_match() -> None:
    """On both sides: the server's audience check and the client's check of resource metadata."""
    for spelling in SAME_RESOURCE:
        assert same_resource(spelling, RESOURCE), spelling
        assert resource_covers(spelling, RESOURCE), spelling
    for hostile in HOSTILE_AUDIENCES:
        assert not same_resource(hostile, RESOURCE), hostile
        assert not resource_covers(hostile, RESOURCE), hostile
        assert matching_audience([hostile, "https://other.example"], [RESOURCE]) == (None, True), hostile
    assert not same_resource(RESOURCE, "https://user@desk.example.com/mcp")  # nor as the configured side
    assert same_resource("api://default", "api://default") and not same_resource(
        "api://Default", "api://default"
    )
    with pytest.raises(ValueError, match="user name or password"):
        AuthSettings(issuer_url=ISSUER, resource_server_url="https://user:secret@desk.example.com/mcp")


@settings(max_examples=300, deadline=None)
@given(
    userinfo=st.text(st.characters(codec="ascii"), max_size=12),
    fragment=st.text(st.characters(codec="ascii"), max_size=12),
    where=st.sampled_from(["userinfo", "fragment", "both"]),
)
def test_any_userinfo_or_fragment_never_matches(userinfo: str, fragment: str, where: str) -> None:
    scheme, rest = RESOURCE.split("://")
    spelled = f"{scheme}://{userinfo}@{rest}" if where != "fragment" else RESOURCE
    spelled = f"{spelled}#{fragment}" if where != "userinfo" else spelled
    assert not same_resource(spelled, RESOURCE)
    assert not resource_covers(spelled, RESOURCE)


async def test_hostile_audiences_are_refused_by_both_verifiers_and_over_http(keys: Keys) -> None:
    answers: dict[str, dict[str, Any]] = {}

    def introspect(method: str, path: str, body: bytes) -> dict[str, Any]:
        token = parse_qs(body.decode())["token"][0]
        return answers.get(token, {"active": False})

    by_jwt = JWTVerifier(public_key=keys.known.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
    with TrickleServer(introspect) as endpoint:
        by_introspection = IntrospectionVerifier(
            f"{endpoint.base}/introspect", issuer=ISSUER, audience=RESOURCE
        )
        for number, audience in enumerate([*SAME_RESOURCE, *HOSTILE_AUDIENCES]):
            answers[f"opaque-{number}"] = {
                "active": True,
                "aud": audience,
                "iss": ISSUER,
                "exp": time.time() + 60,
            }
            accepted = audience in SAME_RESOURCE
            assert (await by_jwt.verify_token(keys.mint(audience)) is not None) is accepted, audience
            assert (await by_introspection.verify_token(f"opaque-{number}") is not None) is accepted, audience

    verifier = JWTVerifier(public_key=keys.known.as_pem(private=False))
    async with protected(verifier) as url:
        userinfo, fragment = url.replace("://", "://user@"), f"{url}#x"
        assert await burst(url, [keys.mint(url), keys.mint(userinfo), keys.mint(fragment)]) == [200, 401, 401]


# -- one clock-skew rule --------------------------------------------------------------------------

SKEW = [  # (claims relative to now, accepted with the default 30 s leeway, however long the test takes)
    ({"exp": -1}, True),
    ({"exp": -15}, True),
    ({"exp": -31}, False),
    ({"nbf": 10}, True),
    ({"nbf": 29}, True),
    ({"nbf": 90}, False),
    ({"iat": 29}, True),
    ({"iat": 90}, False),
]


def test_the_rule_moves_exp_nbf_and_iat_by_the_same_leeway() -> None:
    now = 1_000_000.0
    for claim, inside, outside in (
        ("exp", now - 29.9, now - 30),
        ("nbf", now + 30, now + 30.1),
        ("iat", now + 30, now + 30.1),
    ):
        assert lifetime_refusal({claim: inside}, 30, now=now) is None, claim
        assert lifetime_refusal({claim: outside}, 30, now=now) is not None, claim
        assert lifetime_refusal({claim: outside}, 0, now=now) is not None, claim
    assert lifetime_refusal({"exp": 10**400, "iat": -(10**400)}, 30, now=now) is None  # big, not broken
    for malformed in ("soon", True, float("nan"), float("inf"), [1]):
        assert lifetime_refusal({"exp": malformed}, 30, now=now) == "malformed exp"
    assert lifetime_refusal({}, 30, require_exp=True, now=now) == "no expiry (exp)"
    with pytest.raises(ValueError):
        JWTVerifier(public_key=ECKey.generate_key("P-256").as_pem(private=False), leeway_s=-1)


async def test_every_verifier_and_the_bearer_check_apply_the_same_skew(keys: Keys) -> None:
    now = int(time.time())

    def claims(offsets: dict[str, int]) -> dict[str, Any]:
        return {"exp": now + 300, **{name: now + delta for name, delta in offsets.items()}}

    answers: dict[str, dict[str, Any]] = {}

    def introspect(method: str, path: str, body: bytes) -> dict[str, Any]:
        return answers[parse_qs(body.decode())["token"][0]]

    class Ported:
        """A verifier of its own, no `leeway_s`: its expiry goes by the bearer check, with the default."""

        async def verify_token(self, token: str) -> AccessToken | None:
            return AccessToken(token=token, client_id="c", expires_at=int(token.split("_")[1]) + now)

    assert DEFAULT_LEEWAY_S == 30
    with TrickleServer(introspect) as endpoint:
        introspection = IntrospectionVerifier(f"{endpoint.base}/introspect", audience=RESOURCE)
        by_jwt = JWTVerifier(public_key=keys.known.as_pem(private=False), issuer=ISSUER, audience=RESOURCE)
        for number, (offsets, accepted) in enumerate(SKEW):
            answers[f"t{number}"] = {"active": True, "aud": RESOURCE, **claims(offsets)}
            assert (await introspection.verify_token(f"t{number}") is not None) is accepted, offsets
            token = keys.mint(RESOURCE, **claims(offsets))
            assert (await by_jwt.verify_token(token) is not None) is accepted, offsets

    async with protected(JWTVerifier(public_key=keys.known.as_pem(private=False))) as url:
        tokens = [keys.mint(url, **claims(offsets)) for offsets, _ in SKEW]
        assert await burst(url, tokens) == [200 if accepted else 401 for _, accepted in SKEW]
    async with protected(Ported()) as url:
        assert await burst(url, ["t_5", "t_-1", "t_-15", "t_-31"]) == [200, 200, 200, 401]


async def test_the_refund_desk_accepts_a_token_expired_a_second_ago(tmp_path: Path) -> None:
    """Issue 35: `--auth` refused a token its own verifier's leeway accepted."""
    desk_client = load_module(EXAMPLES / "refund_desk" / "client.py")
    key = ECKey.generate_key("P-256", parameters={"kid": "desk-demo"})
    pem = tmp_path / "desk.pem"
    pem.write_bytes(key.as_pem(private=False))
    async with desk_client.hosted_server(pem) as url, httpx.AsyncClient(timeout=30) as http:
        now = int(time.time())

        def token(**times: int) -> str:
            claims = {"iss": "https://auth.refund-desk.example", "sub": "alice", "aud": url}
            claims.update(client_id="demo", scope="refunds:write", iat=now - 600, exp=now + 600)
            claims.update({name: now + delta for name, delta in times.items()})
            return jwt.encode({"alg": "ES256", "kid": "desk-demo"}, claims, key)

        cases = [
            ({"exp": -1}, 200),
            ({"exp": -60}, 401),
            ({"nbf": 10}, 200),
            ({"nbf": 60}, 401),
            ({"iat": 60}, 401),
        ]
        for times, status in cases:
            response = await http.post(url, **tools_list(token(**times)))
            assert response.status_code == status, (times, response.text)


async def test_a_flood_of_distinct_valid_tokens_keeps_the_token_cache_in_its_bounds() -> None:
    """Every token is genuine and distinct (a `jti` each, padded claims): the cache stays within its count
    and byte bounds, oldest first, and the memory it holds does not grow with the flood."""
    import tracemalloc

    from auth_helpers import TestIssuer

    issuer = TestIssuer()
    issuer.add_key("flood", kind="EC")
    public = issuer.keys["flood"].as_dict(private=False)
    audience = "https://mcp.example.com/mcp"
    by_count = JWTVerifier(public_key=public, issuer=issuer.base, audience=audience, token_cache_size=20)
    by_bytes = JWTVerifier(
        public_key=public, issuer=issuer.base, audience=audience, token_cache_bytes=64 * 1024
    )
    tokens = [issuer.mint(audience, kid="flood", jti=f"t{n}", note="x" * 3000) for n in range(400)]
    for token in tokens[:100]:  # warm both (imports, key parsing) before measuring
        assert await by_count.verify_token(token) is not None
        assert await by_bytes.verify_token(token) is not None
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for token in tokens[100:]:
            assert await by_count.verify_token(token) is not None
            assert await by_bytes.verify_token(token) is not None
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert by_count.cached_tokens[0] == 20
    entries, held = by_bytes.cached_tokens
    assert held <= 64 * 1024 and 0 < entries < 20
    assert grown < 256 * 1024, grown  # 300 more tokens of ~4 KiB each would be over 1 MiB if kept
    assert await by_count.verify_token(tokens[0]) is not None  # an evicted token is checked afresh
    assert by_count.signature_checks == 401
