"""IntrospectionVerifier against a real RFC 7662 endpoint on loopback: active, inactive, cached, down.

The test authorization server counts the introspection requests it serves,
so the cache is seen from outside: a hit costs nothing, and no cached answer
outlives the token's own `exp`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from auth_helpers import INTROSPECTION_CLIENT, TestIssuer, issuer_served, serve_at_known_url
from http_helpers import free_port
from mcp_resolve import Context, MCPServer
from mcp_resolve.auth import AuthSettings, IntrospectionVerifier

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

AUDIENCE = "https://mcp.example.com/mcp"


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


def verifier_for(issuer: TestIssuer, **options: object) -> IntrospectionVerifier:
    client_id, secret = INTROSPECTION_CLIENT
    return IntrospectionVerifier(
        f"{issuer.base}/introspect",
        client_id=client_id,
        client_secret=secret,
        audience=AUDIENCE,
        **options,  # type: ignore[arg-type]
    )


async def test_an_active_token_says_who_and_is_then_served_from_the_cache(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    token = issuer.opaque_token(AUDIENCE, sub="alice", scope="read refunds:write", client_id="desk")
    for _ in range(5):
        access = await verifier.verify_token(token)
        assert access is not None
        assert (access.subject, access.client_id, access.scopes) == (
            "alice",
            "desk",
            ("read", "refunds:write"),
        )
        assert access.resource == AUDIENCE and access.issuer == issuer.base
    assert issuer.introspections == 1


async def test_inactive_unknown_and_foreign_tokens_are_refused(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, required_scopes=["read"])
    now = int(time.time())
    refused = {
        "unknown to the server": "never-issued",
        "revoked": issuer.opaque_token(AUDIENCE),
        "for another resource": issuer.opaque_token("https://other.example/mcp"),
        "with no audience": issuer.opaque_token(AUDIENCE, aud=None),
        "expired by its exp": issuer.opaque_token(AUDIENCE, exp=now - 120),  # past the 30 s of skew
        "not yet valid": issuer.opaque_token(AUDIENCE, nbf=now + 600),
        "from another issuer": issuer.opaque_token(AUDIENCE, iss="https://evil.example"),
        "lacking a required scope": issuer.opaque_token(AUDIENCE, scope="write"),
    }
    del issuer.opaque[refused["revoked"]]
    issuer.opaque[refused["with no audience"]].pop("aud")
    verifier.issuer = issuer.base
    for name, token in refused.items():
        assert await verifier.verify_token(token) is None, name


async def test_the_cache_never_outlives_the_tokens_expiry(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, cache_ttl_s=600, leeway_s=0)
    token = issuer.opaque_token(AUDIENCE, exp=int(time.time()) + 2)
    assert await verifier.verify_token(token) is not None
    assert await verifier.verify_token(token) is not None
    assert issuer.introspections == 1
    await anyio.sleep(max(0.0, issuer.opaque[token]["exp"] - time.time()) + 0.1)
    # The cached answer ended with the token; asked again, the server's own exp check refuses it too.
    assert await verifier.verify_token(token) is None
    assert issuer.introspections == 2


async def test_revocation_shows_once_the_cache_ttl_passes(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, cache_ttl_s=1.5)
    token = issuer.opaque_token(AUDIENCE)
    assert await verifier.verify_token(token) is not None
    del issuer.opaque[token]  # revoked at the authorization server
    assert await verifier.verify_token(token) is not None  # still cached
    await anyio.sleep(1.6)
    assert await verifier.verify_token(token) is None


async def test_the_cache_is_bounded(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer, cache_size=3)
    tokens = [issuer.opaque_token(AUDIENCE) for _ in range(5)]
    for token in tokens:
        assert await verifier.verify_token(token) is not None
    assert len(verifier._cache) == 3
    assert await verifier.verify_token(tokens[0]) is not None  # evicted, so asked again
    assert issuer.introspections == 6


async def test_an_unreachable_or_unwelcoming_endpoint_refuses_and_caches_nothing(
    issuer: TestIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    token = issuer.opaque_token(AUDIENCE)
    down = IntrospectionVerifier(f"http://127.0.0.1:{free_port()}/introspect", audience=AUDIENCE)
    wrong_secret = IntrospectionVerifier(
        f"{issuer.base}/introspect", client_id="resource-server", client_secret="guess", audience=AUDIENCE
    )
    with caplog.at_level(logging.INFO, logger="mcp_resolve.auth"):
        assert await down.verify_token(token) is None
        assert await wrong_secret.verify_token(token) is None
    assert "could not be reached" in caplog.text and "answered HTTP 401" in caplog.text
    assert token not in caplog.text and "Traceback" not in caplog.text
    assert len(down._cache) == 0 and len(wrong_secret._cache) == 0


async def test_hostile_tokens_are_refused_before_anything_is_sent(issuer: TestIssuer) -> None:
    verifier = verifier_for(issuer)
    for token in ("a" * 20_000, "has space", 'quote"d', "\x00", ""):
        assert await verifier.verify_token(token) is None
    assert issuer.introspections == 0


async def test_an_introspecting_server_end_to_end(issuer: TestIssuer) -> None:
    """A protected server whose verifier introspects: the audience comes from its AuthSettings."""

    def app(base: str) -> object:
        client_id, secret = INTROSPECTION_CLIENT
        mcp = MCPServer(
            "introspecting",
            token_verifier=IntrospectionVerifier(
                f"{issuer.base}/introspect", client_id=client_id, client_secret=secret
            ),
            auth=AuthSettings(issuer_url=issuer.base, resource_server_url=f"{base}/mcp"),
        )

        @mcp.tool()
        async def whoami(ctx: Context) -> str:
            assert ctx.access_token is not None
            return str(ctx.access_token.subject)

        return mcp.streamable_http_app()

    async with serve_at_known_url(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        token = issuer.opaque_token(url, sub="frank")
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "whoami",
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "whoami",
        }
        answer = await http.post(url, json=body, headers={**headers, "authorization": f"Bearer {token}"})
        assert answer.json()["result"]["content"][0]["text"] == "frank"
        del issuer.opaque[token]
        inactive = issuer.opaque_token(url)
        del issuer.opaque[inactive]
        refused = await http.post(url, json=body, headers={**headers, "authorization": f"Bearer {inactive}"})
        assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]


@pytest.mark.slow
async def test_requests_share_one_connection_until_the_server_stops(issuer: TestIssuer) -> None:
    """Without an `http_client`, the verifier keeps one client: one TCP (and TLS) handshake, not one per
    token. A protected server closes it when its lifespan ends; the verifier then opens a new one."""
    verifier = verifier_for(issuer)
    mcp = MCPServer(
        "introspecting",
        token_verifier=verifier,
        auth=AuthSettings(issuer_url=issuer.base, resource_server_url=AUDIENCE),
    )
    async with mcp.running():
        for _ in range(4):
            assert await verifier.verify_token(issuer.opaque_token(AUDIENCE)) is not None
    assert issuer.introspections == 4
    assert len(set(issuer.introspection_ports)) == 1  # one connection, kept alive between tokens
    assert await verifier.verify_token(issuer.opaque_token(AUDIENCE)) is not None
    assert issuer.introspection_ports[-1] != issuer.introspection_ports[0]  # closed with the lifespan
    await verifier.aclose()
    await verifier.aclose()  # twice, or with nothing open: nothing to do
