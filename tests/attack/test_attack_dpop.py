"""Hostile DPoP proofs against a protected server: each breaks one rule of RFC 9449 §4.3 and is refused.

One desk, served on loopback, with a JWTVerifier and a token bound to a key
the attacker may or may not hold. Every case is a 401 `invalid_dpop_proof`
(or `invalid_token`), and the good proof made the same way beside it passes,
so a refusal is the rule being enforced, not the desk refusing everything.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from joserfc import jws
from joserfc.jwk import ECKey, OctKey, RSAKey

from auth_helpers import TestIssuer, issuer_served, serve_at_known_url
from dpop_helpers import dpop_desk, mcp_request, proof, proof_claims
from mcp_resolve import Context, MCPServer
from mcp_resolve.auth import AuthSettings, JWTVerifier

pytestmark = pytest.mark.anyio


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}."


def _hostile(key: ECKey, url: str, token: str, other_token: str) -> dict[str, str | list[str]]:
    """Proofs that each break one rule, by name."""
    public = key.as_dict(private=False)
    hmac_key = OctKey.generate_key(256)
    other_key = ECKey.generate_key("P-256")
    rsa = RSAKey.generate_key(2048)
    return {
        "wrong htu (another server)": proof(key, url, token, htu="https://evil.example/mcp"),
        "wrong htu (another path)": proof(key, url, token, htu=url + "/other"),
        "htu with a query": proof(key, url, token, htu=url + "?a=1"),
        "wrong htm": proof(key, url, token, htm="GET"),
        "stale iat": proof(key, url, token, iat=int(time.time()) - 3600),
        "iat in the future": proof(key, url, token, iat=int(time.time()) + 3600),
        "iat not a number": proof(key, url, token, iat="now"),
        "missing ath": proof(key, url, token, ath=None),
        "ath of another token": proof(key, url, other_token),
        "missing jti": proof(key, url, token, jti=None),
        "oversized jti": proof(key, url, token, jti="j" * 1000),
        "signed by another key than the token's": proof(other_key, url, token),
        "another key in the header than the signer": proof(
            key, url, token, header={"jwk": other_key.as_dict(private=False)}
        ),
        "an RSA key that is not the token's": proof(rsa, url, token),
        "alg none": _unsigned({"typ": "dpop+jwt", "alg": "none", "jwk": public}, proof_claims(url, token)),
        "HS256 with the public key's bytes": _hs256_with_public(key, url, token),
        "HS256 with an oct jwk": proof(
            hmac_key, url, token, header={"alg": "HS256", "jwk": hmac_key.as_dict(private=False)}
        ),
        "private key in the header": proof(key, url, token, header={"jwk": key.as_dict(private=True)}),
        "no jwk": proof(key, url, token, header={"jwk": None}),
        "typ JWT": proof(key, url, token, header={"typ": "JWT"}),
        "oversized header": proof(key, url, token, header={"pad": "p" * 10_000}),
        "claims that are a list": jws.serialize_compact(
            {"typ": "dpop+jwt", "alg": "ES256", "jwk": public}, b"[1, 2]", key
        ),
        "claims that are not JSON": jws.serialize_compact(
            {"typ": "dpop+jwt", "alg": "ES256", "jwk": public}, b"\xff\xfe", key
        ),
        "not a JWT": "not-a-jwt",
        "two proofs": [proof(key, url, token), proof(key, url, token)],
        "no proof": [],
    }


def _hs256_with_public(key: ECKey, url: str, token: str) -> str:
    import hashlib
    import hmac

    public = key.as_dict(private=False)
    signing_input = (
        f"{_b64(json.dumps({'typ': 'dpop+jwt', 'alg': 'HS256', 'jwk': public}).encode())}."
        f"{_b64(json.dumps(proof_claims(url, token)).encode())}"
    )
    mac = hmac.new(json.dumps(public).encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(mac)}"


@pytest.mark.slow
async def test_every_hostile_proof_is_refused_and_the_honest_one_passes(issuer: TestIssuer) -> None:
    key = ECKey.generate_key("P-256")
    async with dpop_desk(issuer) as url, httpx.AsyncClient() as http:
        token = issuer.mint(url, cnf={"jkt": key.thumbprint()})
        other_token = issuer.mint(url, cnf={"jkt": key.thumbprint()}, jti="another")
        for name, hostile in _hostile(key, url, token, other_token).items():
            response = await http.post(url, **mcp_request(token, hostile))
            assert response.status_code == 401, name
            assert 'error="invalid_dpop_proof"' in response.headers["www-authenticate"], name
            assert token not in response.text, name
        honest = await http.post(url, **mcp_request(token, proof(key, url, token)))
        assert honest.status_code == 200, honest.text


@pytest.mark.slow
async def test_a_token_bound_to_another_key_is_useless_to_whoever_holds_it(issuer: TestIssuer) -> None:
    """The thief has the token, not the key: neither as Bearer nor with a proof of their own key."""
    victim, thief = ECKey.generate_key("P-256"), ECKey.generate_key("P-256")
    async with dpop_desk(issuer) as url, httpx.AsyncClient() as http:
        stolen = issuer.mint(url, cnf={"jkt": victim.thumbprint()})
        with_own_key = await http.post(url, **mcp_request(stolen, proof(thief, url, stolen)))
        assert with_own_key.status_code == 401
        as_bearer = await http.post(url, **mcp_request(stolen, scheme="Bearer"))
        assert as_bearer.status_code == 401
        assert (await http.post(url, **mcp_request(stolen, proof(victim, url, stolen)))).status_code == 200


@pytest.mark.slow
async def test_a_captured_proof_is_refused_the_second_time(issuer: TestIssuer) -> None:
    key = ECKey.generate_key("P-256")
    async with dpop_desk(issuer) as url, httpx.AsyncClient() as http:
        token = issuer.mint(url, cnf={"jkt": key.thumbprint()})
        captured = proof(key, url, token)
        assert (await http.post(url, **mcp_request(token, captured))).status_code == 200
        for _ in range(3):
            replayed = await http.post(url, **mcp_request(token, captured))
            assert replayed.status_code == 401
            assert 'error="invalid_dpop_proof"' in replayed.headers["www-authenticate"]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Key size")
async def test_rsa_proof_keys_must_be_2048_to_4096_bits_even_when_the_token_is_bound_to_them(
    issuer: TestIssuer,
) -> None:
    weak, sound = RSAKey.generate_key(1024), RSAKey.generate_key(2048)
    async with dpop_desk(issuer) as url, httpx.AsyncClient() as http:
        weak_token = issuer.mint(url, cnf={"jkt": weak.thumbprint()})
        refused = await http.post(url, **mcp_request(weak_token, proof(weak, url, weak_token)))
        assert refused.status_code == 401
        assert 'error="invalid_dpop_proof"' in refused.headers["www-authenticate"]
        sound_token = issuer.mint(url, cnf={"jkt": sound.thumbprint()})
        accepted = await http.post(url, **mcp_request(sound_token, proof(sound, url, sound_token)))
        assert accepted.status_code == 200, accepted.text


def _unbinding_desk(resource: str, issuer: TestIssuer) -> MCPServer:
    """A desk whose tool tidies the claims before logging them: it drops `cnf`, on what it was handed."""
    mcp = MCPServer(
        "tidy-desk",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer.base}/jwks"),
        auth=AuthSettings(issuer_url=issuer.base, resource_server_url=resource),
    )

    @mcp.tool()
    async def tidy(ctx: Context) -> str:
        assert ctx.access_token is not None and ctx.access_token.claims is not None
        ctx.access_token.claims.pop("cnf", None)
        return "tidied"

    return mcp


@pytest.mark.slow
async def test_a_tool_dropping_cnf_does_not_unbind_the_remembered_token(issuer: TestIssuer) -> None:
    """The verifier remembers the token; a tool that edits its claims must not turn it into a bearer token
    that a thief could use without the key on the next request."""
    key = ECKey.generate_key("P-256")

    def app(base: str) -> Any:
        return _unbinding_desk(f"{base}/mcp", issuer).streamable_http_app()

    async with serve_at_known_url(app) as base, httpx.AsyncClient() as http:
        url = f"{base}/mcp"
        token = issuer.mint(url, cnf={"jkt": key.thumbprint()})
        call = mcp_request(token, proof(key, url, token))
        call["headers"] = [(k, "tools/call" if k == "mcp-method" else v) for k, v in call["headers"]]
        call["headers"].append(("mcp-name", "tidy"))
        call["json"] = {
            **call["json"],
            "method": "tools/call",
            "params": {**call["json"]["params"], "name": "tidy"},
        }
        tidied = await http.post(url, **call)
        assert tidied.status_code == 200 and "tidied" in tidied.text, tidied.text
        for _ in range(2):
            stolen = await http.post(url, **mcp_request(token, scheme="Bearer"))
            assert stolen.status_code == 401, stolen.text
            assert 'error="invalid_token"' in stolen.headers["www-authenticate"]
        honest = await http.post(url, **mcp_request(token, proof(key, url, token)))
        assert honest.status_code == 200, honest.text
