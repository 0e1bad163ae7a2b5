"""JWTVerifier against a real JWKS served on loopback: what it accepts, everything it refuses, rotation.

Keys are generated per test with joserfc (RSA 2048 and EC P-256); the JWKS,
its failures and its rotations are those of a real HTTP server
(`auth_helpers.TestIssuer`, run by uvicorn). Refusals are `None` here; the
HTTP tests show each becomes a 401.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import anyio
import pytest
from joserfc.jwk import OctKey, RSAKey

from auth_helpers import TestIssuer, forged_tokens, issuer_served
from http_helpers import free_port
from mcp_resolve import MCPServer
from mcp_resolve.auth import AccessToken, AuthSettings, JWTVerifier
from mcp_resolve.auth.jwks import JWKSKeys, KeyUnavailable

pytestmark = pytest.mark.anyio

AUDIENCE = "https://mcp.example.com/mcp"


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


def verifier_for(issuer: TestIssuer, **options: object) -> JWTVerifier:
    return JWTVerifier(jwks_uri=f"{issuer.base}/jwks", issuer=issuer.base, audience=AUDIENCE, **options)  # type: ignore[arg-type]


@pytest.mark.slow
async def test_rsa_and_ec_tokens_verify_and_say_who_is_calling(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    for kid in ("rsa-1", "ec-1"):
        token = issuer.mint(AUDIENCE, kid=kid, sub="alice", scope="read refunds:write", client_id="desk")
        access = await verifier.verify_token(token)
        assert isinstance(access, AccessToken), kid
        assert (access.subject, access.client_id, access.scopes) == (
            "alice",
            "desk",
            ("read", "refunds:write"),
        )
        assert access.resource == AUDIENCE and access.issuer == issuer.base
        assert access.expires_at is not None and access.expires_at > time.time()
        assert access.token == token and token not in repr(access)  # a logged AccessToken leaks nothing
    assert issuer.jwks_fetches == 1  # both keys came in one fetch, then from the cache


@pytest.mark.slow
async def test_every_forged_or_wrong_token_is_refused(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is not None  # the baseline is accepted
    for name, token in forged_tokens(issuer, AUDIENCE).items():
        assert await verifier.verify_token(token) is None, name


@pytest.mark.slow
async def test_a_key_rotated_in_is_picked_up_without_a_restart(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    assert await verifier.verify_token(issuer.mint(AUDIENCE, kid="rsa-1")) is not None
    issuer.add_key("rsa-2")
    issuer.published = ["rsa-2", "ec-1"]  # rsa-1 retired, rsa-2 signing from now on
    access = await verifier.verify_token(issuer.mint(AUDIENCE, kid="rsa-2"))
    assert access is not None and access.subject == "alice"
    assert issuer.jwks_fetches == 2


@pytest.mark.slow
async def test_unknown_key_ids_refetch_the_jwks_at_most_once_per_interval(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, jwks_refetch_interval_s=60)
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is not None
    for number in range(20):  # a flood of tokens naming keys nobody published
        issuer.add_key(f"made-up-{number}")
        assert await verifier.verify_token(issuer.mint(AUDIENCE, kid=f"made-up-{number}")) is None
    assert issuer.jwks_fetches == 2  # the first unknown kid refetched; the other nineteen waited


@pytest.mark.slow
async def test_concurrent_first_requests_share_one_jwks_fetch(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    tokens = [issuer.mint(AUDIENCE, sub=f"user-{n}") for n in range(20)]
    results: list[AccessToken | None] = [None] * 20

    async def check(index: int) -> None:
        results[index] = await verifier.verify_token(tokens[index])

    async with anyio.create_task_group() as group:
        for index in range(20):
            group.start_soon(check, index)
    assert all(result is not None for result in results)
    assert issuer.jwks_fetches == 1


@pytest.mark.slow
async def test_an_unreachable_jwks_refuses_and_says_so_in_the_log(
    issuer: TestIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    token = issuer.mint(AUDIENCE)
    down = JWTVerifier(jwks_uri=f"http://127.0.0.1:{free_port()}/jwks", issuer=issuer.base, audience=AUDIENCE)
    with caplog.at_level(logging.INFO, logger="mcp_resolve.auth"):
        assert await down.verify_token(token) is None
    assert "JWKS unavailable" in caplog.text and "could not be reached" in caplog.text
    assert token not in caplog.text and "Traceback" not in caplog.text

    issuer.jwks_status = 503
    failing = verifier_for(issuer)
    assert await failing.verify_token(token) is None
    assert "answered HTTP 503" in caplog.text


@pytest.mark.slow
async def test_keys_stay_trusted_for_the_cache_ttl_only(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, jwks_cache_ttl_s=1.5)
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is not None
    issuer.jwks_status = 500  # the authorization server goes down after the keys were fetched
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is not None  # cached keys still serve
    await anyio.sleep(1.6)
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is None  # past the TTL: fail closed


@pytest.mark.slow
async def test_claims_checks_respect_leeway_and_audience_lists(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, leeway_s=60)
    now = int(time.time())
    assert await verifier.verify_token(issuer.mint(AUDIENCE, exp=now - 30)) is not None  # within leeway
    both = await verifier.verify_token(issuer.mint(["https://other.example", AUDIENCE]))
    assert both is not None and both.resource == AUDIENCE
    shouting = await verifier.verify_token(issuer.mint("HTTPS://MCP.EXAMPLE.COM:443/mcp/"))
    assert shouting is not None  # RFC 8707 canonical form: case, default port, trailing slash aside


@pytest.mark.slow
async def test_required_scopes_and_scope_claim_spellings(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, required_scopes=["read"])
    assert await verifier.verify_token(issuer.mint(AUDIENCE, scope="write")) is None
    listed = await verifier.verify_token(issuer.mint(AUDIENCE, scope=None, scp=["read", "write"]))
    assert listed is not None and listed.scopes == ("read", "write")


async def test_a_fixed_public_key_needs_no_jwks() -> None:
    key = RSAKey.generate_key(2048)
    issuer = TestIssuer()
    issuer.keys["solo"] = key
    for public in (key.as_pem(private=False), key.as_pem(private=False).decode(), key.as_dict(private=False)):
        verifier = JWTVerifier(public_key=public, issuer=issuer.base, audience=AUDIENCE)
        assert await verifier.verify_token(issuer.mint(AUDIENCE, kid="solo")) is not None
        assert await verifier.verify_token(issuer.mint(AUDIENCE, kid="rsa-1")) is None  # another signer


def test_configurations_that_would_accept_forgeries_are_refused() -> None:
    with pytest.raises(ValueError, match="asymmetric"):
        JWTVerifier(public_key=RSAKey.generate_key(2048).as_pem(private=False), algorithms=["HS256"])
    with pytest.raises(ValueError, match="asymmetric"):
        JWTVerifier(jwks_uri="https://a.example/jwks", algorithms=["none"])
    with pytest.raises(ValueError, match="shared secret"):
        JWTVerifier(public_key=OctKey.generate_key(256).as_dict(private=True))
    with pytest.raises(ValueError, match="exactly one"):
        JWTVerifier()


async def test_issuer_and_audience_default_to_the_protected_servers_settings() -> None:
    issuer = TestIssuer()
    issuer.base = "https://auth.example.com"
    verifier = JWTVerifier(public_key=issuer.public_pem())
    MCPServer(
        "bound",
        token_verifier=verifier,
        auth=AuthSettings(issuer_url=issuer.base, resource_server_url=AUDIENCE),
    )
    assert (verifier.issuer, verifier.audience) == (issuer.base, (AUDIENCE,))
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is not None
    assert await verifier.verify_token(issuer.mint("https://elsewhere.example/mcp")) is None


async def test_an_unbound_verifier_without_an_audience_refuses_everything() -> None:
    issuer = TestIssuer()
    verifier = JWTVerifier(public_key=issuer.public_pem())
    assert await verifier.verify_token(issuer.mint(AUDIENCE)) is None


async def test_an_opaque_token_is_refused_with_a_log_line_naming_introspection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Providers that issue opaque access tokens by default (oidc-provider) meet a 401: the log says why."""
    issuer = TestIssuer()
    verifier = JWTVerifier(public_key=issuer.public_pem(), issuer=issuer.base, audience=AUDIENCE)
    opaque = ["K6S5sJrEp0c1sXgZ1lO3mBqZ2vOQ9e2YwQm1bYk3xq8", "another-opaque-token-0123456789"]
    with caplog.at_level(logging.INFO, logger="mcp_resolve.auth"):
        for token in opaque:
            assert await verifier.verify_token(token) is None
    levels = [record.levelno for record in caplog.records if "not a signed JWT" in record.getMessage()]
    assert levels == [logging.WARNING, logging.INFO]  # said loudly once, then quietly
    assert "IntrospectionVerifier" in caplog.text
    assert not any(token in caplog.text for token in opaque)


# -- the accepted-token cache ------------------------------------------------------------------
def solo_issuer() -> tuple[TestIssuer, JWTVerifier]:
    """An issuer with one EC key and a verifier holding that key (no JWKS, no socket)."""
    issuer = TestIssuer()
    issuer.add_key("solo", kind="EC")
    return issuer, JWTVerifier(
        public_key=issuer.keys["solo"].as_dict(private=False), issuer=issuer.base, audience=AUDIENCE
    )


async def test_a_token_seen_again_skips_the_signature_check() -> None:
    issuer, verifier = solo_issuer()
    token = issuer.mint(AUDIENCE, kid="solo", sub="alice")
    first = await verifier.verify_token(token)
    for _ in range(5):
        again = await verifier.verify_token(token)
        assert again is not None and again.subject == "alice" and again.token == token
    assert first is not None and verifier.signature_checks == 1
    assert verifier.cached_tokens[0] == 1
    assert await verifier.verify_token(token[:-2] + "AA") is None  # another text is another token
    assert verifier.signature_checks == 2


async def test_a_cached_token_is_refused_once_it_expires() -> None:
    issuer, verifier = solo_issuer()
    verifier.leeway_s = 0
    token = issuer.mint(AUDIENCE, kid="solo", exp=int(time.time()) + 2)
    assert await verifier.verify_token(token) is not None
    assert verifier.cached_tokens[0] == 1
    await anyio.sleep(max(0.0, (int(time.time()) + 2) - time.time() + 0.05))
    assert await verifier.verify_token(token) is None  # from the cache, but past exp: refused
    assert verifier.cached_tokens == (0, 0) and verifier.signature_checks == 1


@pytest.mark.slow
async def test_a_cached_token_is_refused_after_its_key_is_retired(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, jwks_cache_ttl_s=0.3)
    token = issuer.mint(AUDIENCE, kid="rsa-1")
    assert await verifier.verify_token(token) is not None
    issuer.add_key("rsa-2")
    issuer.published = ["rsa-2", "ec-1"]  # rsa-1 retired from the key set
    await anyio.sleep(0.4)  # the key set's TTL passes, so it is fetched again
    assert await verifier.verify_token(token) is None
    assert verifier.cached_tokens[0] == 0


def test_token_cache_bounds_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="token_cache_size"):
        JWTVerifier(public_key=RSAKey.generate_key(2048).as_pem(private=False), token_cache_size=-1)


@pytest.mark.slow
async def test_the_key_memo_holds_only_keys_found_and_empties_with_a_new_key_set(issuer: TestIssuer) -> None:
    """Each cached token asks for its key on every request; the answer is remembered per (kid, alg) only
    while the key set it came from is the current one, and a made-up kid adds nothing to remember."""
    verifier = verifier_for(issuer, jwks_cache_ttl_s=0.3)
    keys = verifier.keys
    assert isinstance(keys, JWKSKeys)
    token = issuer.mint(AUDIENCE, kid="rsa-1")
    for index in range(20):  # the first fetches the set, another unknown kid may fetch it again
        with pytest.raises(KeyUnavailable):
            await keys.key_for(f"made-up-{index}", "RS256")
    assert await verifier.verify_token(token) is not None
    assert await verifier.verify_token(token) is not None
    for index in range(20):
        with pytest.raises(KeyUnavailable):
            await keys.key_for(f"made-up-{index}", "RS256")
    assert list(keys._picked) == [("rsa-1", "RS256")]
    issuer.published = ["ec-1"]  # rsa-1 retired
    await anyio.sleep(0.4)  # past the TTL: the next request fetches the set again
    assert await verifier.verify_token(token) is None
    assert ("rsa-1", "RS256") not in keys._picked
