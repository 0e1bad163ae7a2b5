"""A request's token claims are its own: what one tool changes in them, the next request never sees.

Verifiers remember what they accepted (`JWTVerifier` by the token's hash,
`IntrospectionVerifier` for its TTL, a provider in its dict) and return the
same `AccessToken` for the same token. `claims` is a plain dict, as in the
official SDK, so the transport gives each request a copy of it. Here a tool
scribbles on the claims (a key added, `sub` and `iss` rewritten, a nested
list grown) and a second request with the same token, on the same session
and on a new one, still reads what the authorization server issued.
Real HTTP on loopback, a real issuer, both eras.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from auth_helpers import INTROSPECTION_CLIENT, TestIssuer, issuer_served, serve_at_known_url
from mcp_resolve import Client, Context, MCPServer
from mcp_resolve.auth import AccessToken, AuthSettings, IntrospectionVerifier, JWTVerifier, TokenVerifier
from mcp_resolve.auth.tokens import request_copy

pytestmark = pytest.mark.anyio

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/list",
}


class OneTokenVerifier:
    """A verifier of our own that keeps its AccessToken and returns that very object every time."""

    def __init__(self, access: AccessToken) -> None:
        self.access = access
        self.calls = 0

    async def verify_token(self, token: str) -> AccessToken | None:
        self.calls += 1
        return self.access if token == self.access.token else None


def scribbling_server(resource: str, issuer: str, verifier: TokenVerifier) -> MCPServer:
    mcp = MCPServer(
        "scribbler",
        token_verifier=verifier,
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource),
    )

    @mcp.tool()
    async def scribble(ctx: Context) -> dict[str, Any]:
        """Report the claims as they arrived, then change them every way a dict allows."""
        token = ctx.access_token
        assert token is not None and token.claims is not None
        claims = token.claims
        seen = {
            "iss": token.issuer,
            "sub": claims.get("sub"),
            "groups": list(claims.get("groups", [])),
            "marked": "marked" in claims,
        }
        claims["marked"] = True
        claims["sub"] = "mallory"
        claims["iss"] = "https://evil.example"
        claims["groups"].append("admins")
        return seen

    return mcp


@asynccontextmanager
async def scribbler(
    issuer: TestIssuer, make_verifier: Callable[[str], TokenVerifier]
) -> AsyncIterator[tuple[str, TokenVerifier]]:
    verifiers: list[TokenVerifier] = []

    def app(base: str) -> Any:
        verifiers.append(make_verifier(f"{base}/mcp"))
        return scribbling_server(f"{base}/mcp", issuer.base, verifiers[0]).streamable_http_app()

    async with serve_at_known_url(app) as base:
        yield f"{base}/mcp", verifiers[0]


async def scribble_four_times(url: str, token: str, mode: str) -> list[Any]:
    """Two calls on one session, then two on another, all with the same token."""
    seen = []
    for _ in range(2):
        async with Client(url, mode=mode, headers={"authorization": f"Bearer {token}"}) as client:  # type: ignore[arg-type]
            for _ in range(2):
                result = await client.call_tool("scribble")
                assert not result.is_error, result
                seen.append(result.structured_content)
    return seen


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


def issued(issuer: TestIssuer) -> dict[str, Any]:
    return {"iss": issuer.base, "sub": "alice", "groups": ["staff"], "marked": False}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_remembered_jwt_keeps_its_claims_whatever_a_tool_does_to_them(
    issuer: TestIssuer, mode: str
) -> None:
    async with scribbler(issuer, lambda _: JWTVerifier(jwks_uri=f"{issuer.base}/jwks")) as (url, verifier):
        token = issuer.mint(url, sub="alice", groups=["staff"])
        assert await scribble_four_times(url, token, mode) == [issued(issuer)] * 4
        assert (
            isinstance(verifier, JWTVerifier) and verifier.signature_checks == 1
        )  # the cache served the rest


@pytest.mark.slow
async def test_a_remembered_introspection_answer_keeps_its_claims(issuer: TestIssuer) -> None:
    def introspecting(resource: str) -> TokenVerifier:
        client_id, secret = INTROSPECTION_CLIENT
        return IntrospectionVerifier(f"{issuer.base}/introspect", client_id=client_id, client_secret=secret)

    async with scribbler(issuer, introspecting) as (url, _):
        token = issuer.opaque_token(url, groups=["staff"])
        assert await scribble_four_times(url, token, "2026-07-28") == [issued(issuer)] * 4
        assert issuer.introspections == 1


@pytest.mark.slow
async def test_a_verifier_of_our_own_returning_one_object_cannot_leak_between_requests(
    issuer: TestIssuer,
) -> None:
    claims = {"iss": issuer.base, "sub": "alice", "groups": ["staff"], "extra": {"keys": [1]}}
    own = OneTokenVerifier(AccessToken(token="t-123", client_id="desk", subject="alice", claims=claims))
    async with scribbler(issuer, lambda _: own) as (url, _):
        assert await scribble_four_times(url, "t-123", "legacy") == [issued(issuer)] * 4
    assert own.calls >= 4
    assert own.access.claims == {
        "iss": issuer.base,
        "sub": "alice",
        "groups": ["staff"],
        "extra": {"keys": [1]},
    }


def test_a_request_copy_shares_nothing_mutable_and_keeps_everything_else() -> None:
    class Tag:
        def __init__(self) -> None:
            self.names = ["a"]

    claims = {"sub": "alice", "aud": ["x"], "act": {"sub": "agent", "chain": [{"sub": "b"}]}, "tag": Tag()}
    token = AccessToken(
        token="t", client_id="c", scopes=("read",), expires_at=1, subject="alice", claims=claims
    )
    copy = request_copy(token, scopes=("read", "write"))
    assert copy.scopes == ("read", "write") and token.scopes == ("read",)
    assert (copy.token, copy.client_id, copy.expires_at, copy.subject) == ("t", "c", 1, "alice")
    assert copy.claims is not None
    copy.claims["aud"].append("y")
    copy.claims["act"]["chain"][0]["sub"] = "mallory"
    copy.claims["tag"].names.append("b")
    copy.claims["new"] = 1
    assert token.claims == {
        "sub": "alice",
        "aud": ["x"],
        "act": {"sub": "agent", "chain": [{"sub": "b"}]},
        "tag": claims["tag"],
    }
    assert claims["tag"].names == ["a"]
    bare = AccessToken(token="t", client_id="c")
    assert request_copy(bare) is bare  # nothing mutable in it: no copy needed


def test_a_claim_that_cannot_be_copied_is_shared_not_a_refusal() -> None:
    """A verifier may put its own handle in the claims (a lock, a client): copying it fails, so the
    request gets the verifier's object as given, and the token is not refused (nor a 500)."""
    lock = threading.Lock()
    token = AccessToken(token="t", client_id="c", claims={"sub": "alice", "session": lock, "aud": ["x"]})
    copied = request_copy(token)
    assert copied.claims is not None and copied.claims["session"] is lock
    copied.claims["aud"].append("y")
    assert token.claims is not None and token.claims["aud"] == ["x"]


@pytest.mark.slow
async def test_claims_nested_too_deeply_to_copy_refuse_the_token_not_the_server(issuer: TestIssuer) -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    own = OneTokenVerifier(
        AccessToken(token="t-deep", client_id="desk", claims={"sub": "alice", "deep": deep})
    )
    async with scribbler(issuer, lambda _: own) as (url, _), httpx.AsyncClient() as http:
        refused = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
            headers={**HEADERS, "authorization": "Bearer t-deep"},
        )
        assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
        assert own.calls == 1
