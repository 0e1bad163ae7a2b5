"""Our Client's DPoP (RFC 9449) against an authorization server of our own making, and our server.

The authorization server is `TestIssuer` taught DPoP here: it advertises
ES256, checks the proof at its token endpoint (signature, `htm`, `htu`, and
its own nonce when asked to demand one) and binds the token to the proof's
key. The MCP server is our protected desk requiring DPoP. Real HTTP on
loopback throughout (the oidc-provider run is tests/interop/test_interop_dpop.py).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from auth_helpers import TestIssuer, issuer_served
from dpop_helpers import dpop_desk
from mcp_resolve import Client
from mcp_resolve.auth import DPoPOptions
from mcp_resolve.auth.jwt import jose_header
from mcp_resolve.client.auth import AuthorizationError, HeadlessBrowser, MemoryTokenStorage, OAuth

pytestmark = pytest.mark.anyio


class DPoPIssuer(TestIssuer):
    """TestIssuer with DPoP at its token endpoint (what it saw is kept for the test to read)."""

    def __init__(
        self, *, advertise: bool = True, demand_nonce: bool = False, token_type: str | None = None
    ) -> None:
        super().__init__()
        self.advertise = advertise
        self.demand_nonce = demand_nonce
        self.token_type = token_type
        self.nonce = secrets.token_urlsafe(12)
        self.proofs: list[dict[str, Any]] = []
        self.dpop_jkts: list[str | None] = []
        self.nonce_challenges = 0

    async def _metadata(self, request: Request) -> Response:
        document = json_of(await super()._metadata(request))
        if self.advertise:
            document["dpop_signing_alg_values_supported"] = ["ES256"]
        return JSONResponse(document)

    async def _authorize(self, request: Request) -> Response:
        self.dpop_jkts.append(request.query_params.get("dpop_jkt"))
        return await super()._authorize(request)

    async def _token(self, request: Request) -> Response:
        proof = request.headers.get("dpop")
        jkt = None
        if proof is not None:
            header = jose_header(proof) or {}
            key = ECKey.import_key(header["jwk"])
            claims = jwt.decode(proof, key, algorithms=["ES256"]).claims
            assert header["typ"] == "dpop+jwt" and claims["htm"] == "POST"
            assert claims["htu"] == f"{self.base}/token" and "ath" not in claims
            self.proofs.append(claims)
            if self.demand_nonce and claims.get("nonce") != self.nonce:
                self.nonce_challenges += 1
                return JSONResponse(
                    {"error": "use_dpop_nonce"}, status_code=400, headers={"DPoP-Nonce": self.nonce}
                )
            jkt = key.thumbprint()
        form = await request.form()
        grant = self._codes.pop(str(form.get("code")), None)
        verifier = str(form.get("code_verifier", ""))
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if grant is None or digest != grant["challenge"]:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        bound = {"cnf": {"jkt": jkt}} if jkt is not None else {}
        token = self.mint(grant["resource"], client_id=grant["client_id"], **bound)
        token_type = self.token_type or ("DPoP" if jkt is not None else "Bearer")
        return JSONResponse({"access_token": token, "token_type": token_type, "expires_in": 300})


def json_of(response: Response) -> dict[str, Any]:
    import json

    return dict(json.loads(bytes(response.body)))


def _oauth(storage: MemoryTokenStorage | None = None, **options: Any) -> OAuth:
    browser = HeadlessBrowser()
    return OAuth(redirect_handler=browser, callback_handler=browser, storage=storage, **options)


@pytest.mark.slow
async def test_the_client_binds_its_token_and_answers_both_nonce_challenges() -> None:
    storage = MemoryTokenStorage()
    async with (
        issuer_served(DPoPIssuer(demand_nonce=True)) as issuer,
        dpop_desk(issuer, DPoPOptions(required=True, nonces=True, nonce_secret="n" * 40)) as url,
    ):
        async with Client(url, auth=_oauth(storage)) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == {"ping"}
            assert (await client.call_tool("ping", {})).content[0].text == "pong"  # type: ignore[union-attr]
        assert isinstance(issuer, DPoPIssuer)
        key = ((await storage.get("dpop key")) or {})["jwk"]
        thumbprint = ECKey.import_key(key).thumbprint()
        assert issuer.dpop_jkts == [thumbprint]  # the code can be redeemed only with this key
        assert issuer.nonce_challenges == 1 and len(issuer.proofs) == 2  # a challenge, then its nonce
        assert issuer.proofs[0]["jti"] != issuer.proofs[1]["jti"]
        assert issuer.proofs[1]["nonce"] == issuer.nonce
        assert ((await storage.get(f"tokens {url}")) or {})["token_type"] == "DPoP"


@pytest.mark.slow
async def test_dpop_false_asks_for_bearer_tokens_even_where_dpop_is_offered() -> None:
    async with issuer_served(DPoPIssuer()) as issuer, dpop_desk(issuer) as url:
        async with Client(url, auth=_oauth(dpop=False)) as client:
            assert (await client.call_tool("ping", {})).content[0].text == "pong"  # type: ignore[union-attr]
        assert isinstance(issuer, DPoPIssuer)
        assert issuer.proofs == [] and issuer.dpop_jkts == [None]


@pytest.mark.slow
async def test_a_dpop_token_the_client_never_asked_for_is_refused() -> None:
    """The server did not advertise DPoP, so no proof was sent: a token_type of DPoP is not ours to use."""
    async with (
        issuer_served(DPoPIssuer(advertise=False, token_type="DPoP")) as issuer,
        dpop_desk(issuer) as url,
    ):
        with pytest.raises(AuthorizationError) as caught:
            async with Client(url, auth=_oauth()):
                pass
        assert caught.value.error == "invalid_token_response"


@pytest.mark.parametrize(
    ("listed", "challenged", "expected"),
    [((), False, False), (("ES256",), False, True), ((), True, True), (("PS256",), False, False)],
)
def test_by_default_dpop_is_used_only_where_the_mcp_server_takes_it(
    listed: tuple[str, ...], challenged: bool, expected: bool
) -> None:
    """A bound token is no use to a server that reads Bearer only: the server must list ES256 in its
    metadata, or challenge with the DPoP scheme, besides the authorization server offering it."""
    from mcp_resolve.client.auth.discovery import ProtectedResource
    from mcp_resolve.client.auth.grant import _Attempts

    offering = {"dpop_signing_alg_values_supported": ["ES256"]}
    resource = ProtectedResource("https://mcp.example/mcp", ("https://as.example",), None, None, listed)
    oauth = OAuth()
    oauth._note_dpop(resource, _Attempts(dpop_offered=challenged))
    assert oauth._uses_dpop(offering, resource) is expected
    assert oauth._uses_dpop({}, resource) is False  # nor where the authorization server does not offer it
    assert OAuth(dpop=True)._uses_dpop({}, resource) is True
    assert OAuth(dpop=False)._uses_dpop(offering, resource) is False
