"""DPoP on a protected server (RFC 9449): bound tokens need a proof, policy, challenges, nonces, replay.

Real parts throughout: the desk is served by uvicorn on loopback, its
JWTVerifier fetches keys from a served TestIssuer, and proofs come from our
own client's `DPoPKey` (the hostile ones are in tests/attack/test_attack_dpop.py).
Replay is refused through every replay store: memory, SQLite and a real
redis-server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc.jwk import ECKey

from auth_helpers import INTROSPECTION_CLIENT, TestIssuer, issuer_served, serve_at_known_url
from dpop_helpers import dpop_desk, mcp_request, proof
from mcp_resolve import MCPServer
from mcp_resolve.auth import AuthSettings, IntrospectionVerifier
from mcp_resolve.auth.dpop import DPoPProofs
from mcp_resolve.auth.tokens import DPoPOptions
from mcp_resolve.client.auth.dpop import DPoPKey
from mcp_resolve.replay import MemoryReplayStore, SqliteReplayStore
from mcp_resolve.stores import RedisReplayStore
from redis_helpers import redis_server

pytestmark = pytest.mark.anyio


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


def _challenge(response: httpx.Response) -> str:
    return response.headers.get("www-authenticate", "")


@pytest.mark.slow
async def test_a_bound_token_needs_its_key_s_proof_and_is_refused_as_bearer(issuer: TestIssuer) -> None:
    key = DPoPKey.generate()
    async with dpop_desk(issuer) as url, httpx.AsyncClient() as http:
        token = issuer.mint(url, cnf={"jkt": key.thumbprint})
        good = await http.post(url, **mcp_request(token, key.proof("POST", url, access_token=token)))
        assert good.status_code == 200, good.text
        assert "ping" in good.text
        as_bearer = await http.post(url, **mcp_request(token, scheme="Bearer"))
        assert as_bearer.status_code == 401
        assert _challenge(as_bearer).startswith("DPoP algs=") and 'error="invalid_token"' in _challenge(
            as_bearer
        )
        no_proof = await http.post(url, **mcp_request(token))
        assert no_proof.status_code == 401 and 'error="invalid_dpop_proof"' in _challenge(no_proof)
        unbound = issuer.mint(url)  # allowed policy: a plain bearer token still works as Bearer...
        assert (await http.post(url, **mcp_request(unbound, scheme="Bearer"))).status_code == 200
        # ...but not as DPoP: a proof cannot stand for a key the token names none of
        refused = await http.post(url, **mcp_request(unbound, key.proof("POST", url, access_token=unbound)))
        assert refused.status_code == 401
        metadata = (await http.get(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))).json()
        assert "ES256" in metadata["dpop_signing_alg_values_supported"]
        assert "none" not in metadata["dpop_signing_alg_values_supported"]
        assert "dpop_bound_access_tokens_required" not in metadata


@pytest.mark.slow
async def test_a_server_requiring_dpop_refuses_bearer_tokens_and_says_so(issuer: TestIssuer) -> None:
    key = DPoPKey.generate()
    options = DPoPOptions(required=True, algorithms=("ES256", "PS256"))
    async with dpop_desk(issuer, options) as url, httpx.AsyncClient() as http:
        nothing = await http.post(url, **mcp_request(None))
        assert nothing.status_code == 401
        assert _challenge(nothing).startswith('DPoP algs="ES256 PS256", resource_metadata=')
        bearer = await http.post(url, **mcp_request(issuer.mint(url), scheme="Bearer"))
        assert bearer.status_code == 401 and 'error="invalid_token"' in _challenge(bearer)
        token = issuer.mint(url, cnf={"jkt": key.thumbprint})
        good = await http.post(url, **mcp_request(token, key.proof("POST", url, access_token=token)))
        assert good.status_code == 200, good.text
        metadata = (await http.get(url.replace("/mcp", "/.well-known/oauth-protected-resource"))).json()
        assert metadata["dpop_signing_alg_values_supported"] == ["ES256", "PS256"]
        assert metadata["dpop_bound_access_tokens_required"] is True


@pytest.mark.slow
async def test_a_server_demanding_nonces_hands_one_out_and_takes_it(issuer: TestIssuer) -> None:
    key = DPoPKey.generate()
    options = DPoPOptions(nonces=True, nonce_secret="s" * 40)
    async with dpop_desk(issuer, options) as url, httpx.AsyncClient() as http:
        token = issuer.mint(url, cnf={"jkt": key.thumbprint})
        first = await http.post(url, **mcp_request(token, key.proof("POST", url, access_token=token)))
        assert first.status_code == 401 and 'error="use_dpop_nonce"' in _challenge(first)
        nonce = first.headers["dpop-nonce"]
        assert nonce == DPoPProofs(options, MemoryReplayStore()).nonce()  # stateless: any worker agrees
        again = await http.post(
            url, **mcp_request(token, key.proof("POST", url, access_token=token, nonce=nonce))
        )
        assert again.status_code == 200, again.text
        forged = await http.post(
            url, **mcp_request(token, key.proof("POST", url, access_token=token, nonce="x" * 24))
        )
        assert forged.status_code == 401 and 'error="use_dpop_nonce"' in _challenge(forged)


def test_nonces_rotate_and_the_previous_one_stays_good_for_one_period() -> None:
    options = DPoPOptions(nonces=True, nonce_lifetime_s=60, nonce_secret="k" * 40)
    one, other = DPoPProofs(options, MemoryReplayStore()), DPoPProofs(options, MemoryReplayStore())
    start = 6_000_000.0
    nonce = one.nonce(start)
    assert other.nonce_ok(nonce, start) and other.nonce(start) == nonce  # two workers, one secret
    assert one.nonce(start + 60) != nonce  # the next period has its own
    assert one.nonce_ok(nonce, start + 60)  # still good while it is the previous one
    assert not one.nonce_ok(nonce, start + 120)  # then gone
    stranger = DPoPProofs(DPoPOptions(nonces=True, nonce_secret="z" * 40), MemoryReplayStore())
    assert not stranger.nonce_ok(nonce, start)  # another secret, another server's nonces


def test_only_asymmetric_proof_algorithms_can_be_configured() -> None:
    for refused in (("none",), ("HS256",), ("ES256", "HS512"), ()):
        with pytest.raises(ValueError):
            DPoPOptions(algorithms=refused)
    with pytest.raises(ValueError):
        DPoPOptions(nonce_secret="short")


@pytest.mark.slow
async def test_an_introspected_bound_token_needs_its_proof_too(issuer: TestIssuer) -> None:
    key = DPoPKey.generate()

    def app(base: str) -> Any:
        mcp = MCPServer(
            "introspected",
            token_verifier=IntrospectionVerifier(
                f"{issuer.base}/introspect",
                client_id=INTROSPECTION_CLIENT[0],
                client_secret=INTROSPECTION_CLIENT[1],
            ),
            auth=AuthSettings(issuer_url=issuer.base, resource_server_url=f"{base}/mcp"),
        )

        @mcp.tool()
        async def ping() -> str:
            return "pong"

        return mcp.streamable_http_app()

    async with serve_at_known_url(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        token = issuer.opaque_token(url, cnf={"jkt": key.thumbprint})
        assert (await http.post(url, **mcp_request(token, scheme="Bearer"))).status_code == 401
        other = DPoPKey.generate()
        wrong = await http.post(url, **mcp_request(token, other.proof("POST", url, access_token=token)))
        assert wrong.status_code == 401 and 'error="invalid_dpop_proof"' in _challenge(wrong)
        good = await http.post(url, **mcp_request(token, key.proof("POST", url, access_token=token)))
        assert good.status_code == 200, good.text


async def _replay_refused(issuer: TestIssuer, replay_store: Any) -> None:
    key = ECKey.generate_key("P-256")
    async with dpop_desk(issuer, replay_store=replay_store) as url, httpx.AsyncClient() as http:
        token = issuer.mint(url, cnf={"jkt": key.thumbprint()})
        once = proof(key, url, token)
        assert (await http.post(url, **mcp_request(token, once))).status_code == 200
        replayed = await http.post(url, **mcp_request(token, once))
        assert replayed.status_code == 401 and 'error="invalid_dpop_proof"' in _challenge(replayed)
        assert (await http.post(url, **mcp_request(token, proof(key, url, token)))).status_code == 200


@pytest.mark.slow
async def test_a_replayed_proof_is_refused_with_the_memory_store(issuer: TestIssuer) -> None:
    await _replay_refused(issuer, MemoryReplayStore())


@pytest.mark.slow
async def test_a_replayed_proof_is_refused_with_the_sqlite_store(issuer: TestIssuer, tmp_path: Path) -> None:
    await _replay_refused(issuer, SqliteReplayStore(tmp_path / "claims.db"))


@pytest.mark.slow
async def test_a_replayed_proof_is_refused_with_the_redis_store(issuer: TestIssuer) -> None:
    with redis_server() as redis:
        await _replay_refused(issuer, RedisReplayStore(redis.url))


@pytest.mark.slow
async def test_a_replay_store_that_cannot_answer_refuses_the_request(issuer: TestIssuer) -> None:
    from http_helpers import free_port

    store = RedisReplayStore(f"redis://127.0.0.1:{free_port()}/0", settle_timeout=0.2)  # nobody listens
    key = DPoPKey.generate()
    async with dpop_desk(issuer, replay_store=store) as url, httpx.AsyncClient() as http:
        token = issuer.mint(url, cnf={"jkt": key.thumbprint})
        response = await http.post(url, **mcp_request(token, key.proof("POST", url, access_token=token)))
        assert response.status_code == 503  # fail closed: a proof that cannot be claimed is not accepted


async def test_the_client_key_lives_in_the_token_storage_and_proofs_name_the_request(tmp_path: Path) -> None:
    from mcp_resolve.client.auth import FileTokenStorage, OAuth

    storage = FileTokenStorage(tmp_path / "tokens.json")
    first = OAuth(storage=storage)
    key = await first._proof_key()
    again = await OAuth(storage=FileTokenStorage(tmp_path / "tokens.json"))._proof_key()
    assert again.thumbprint == key.thumbprint  # a new process signs with the key its tokens are bound to
    assert key.to_record()["d"] not in repr(key) and "d" not in key.public_jwk
    checker = DPoPProofs(DPoPOptions(), MemoryReplayStore())
    made = key.proof("post", "https://mcp.example/mcp?x=1#f", access_token="tok")
    await checker.check(
        [made.encode()],
        method="POST",
        urls=["https://mcp.example/mcp"],
        access_token="tok",
        jkt=key.thumbprint,
    )
