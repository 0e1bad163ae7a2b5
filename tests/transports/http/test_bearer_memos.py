"""The bearer check's memos: a token's resource matched once, a caller's principal encoded once.

Each must stay bounded and must never decide for a request what only that
request can show: another resource is still refused after an accept, and an
expired token is refused although its resource and principal were remembered.
The verifier here keeps its tokens in a dict and hands back the same
`AccessToken` every time, as remembering verifiers do.
"""

from __future__ import annotations

import time

import anyio
import pytest

from mcp_resolve import MCPServer
from mcp_resolve.auth import AccessToken, AuthSettings
from mcp_resolve.auth.tokens import principal_of
from mcp_resolve.transports.http._auth.bearer import MEMO_ENTRIES, MEMO_KEY_CHARS, BearerCheck

pytestmark = pytest.mark.anyio

MINE = "https://mcp.example.com/mcp"


class DictVerifier:
    """Tokens issued in advance: each one's AccessToken, the same object on every call."""

    leeway_s = 0

    def __init__(self) -> None:
        self.tokens: dict[str, AccessToken] = {}

    def issue(self, name: str, resource: str | None = MINE, **fields: object) -> bytes:
        self.tokens[name] = AccessToken(
            token=name,
            client_id=str(fields.pop("client_id", "desk")),
            resource=resource,
            claims={"iss": "https://auth.example.com", **fields.pop("claims", {})},  # type: ignore[dict-item]
            **fields,  # type: ignore[arg-type]
        )
        return b"Bearer " + name.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)


def bearer_check(verifier: DictVerifier) -> BearerCheck:
    server = MCPServer(
        "memo-desk",
        token_verifier=verifier,
        auth=AuthSettings(issuer_url="https://auth.example.com", resource_server_url=MINE),
    )
    return BearerCheck(server)


async def test_another_resource_is_refused_after_a_remembered_accept() -> None:
    verifier = DictVerifier()
    check = bearer_check(verifier)
    ours = verifier.issue("ours", "HTTPS://MCP.example.com:443/mcp/")  # the same resource, spelled otherwise
    theirs = verifier.issue("theirs", "https://other.example.com/mcp")
    for _ in range(3):  # first computed, then remembered: the same answers
        assert isinstance(await check.authenticate(ours), AccessToken)
        refused = await check.authenticate(theirs)
        assert not isinstance(refused, AccessToken) and refused.status_code == 401
        assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert len(check._resource_matches) == 2


async def test_the_resource_memo_is_bounded_by_count_and_key_length() -> None:
    verifier = DictVerifier()
    check = bearer_check(verifier)
    for index in range(MEMO_ENTRIES + 50):
        refused = await check.authenticate(verifier.issue(f"t{index}", f"https://r{index}.example.com/mcp"))
        assert not isinstance(refused, AccessToken)
    assert len(check._resource_matches) == MEMO_ENTRIES
    long = "https://mcp.example.com/" + "a" * MEMO_KEY_CHARS
    assert not isinstance(await check.authenticate(verifier.issue("long", long)), AccessToken)
    assert (long, MINE) not in check._resource_matches
    # the oldest went first, and what is remembered still answers as computed
    assert isinstance(await check.authenticate(verifier.issue("ours", MINE)), AccessToken)
    assert not isinstance(await check.authenticate(b"Bearer t0"), AccessToken)


async def test_an_expired_token_is_refused_after_remembered_accepts() -> None:
    verifier = DictVerifier()
    check = bearer_check(verifier)
    expires = int(time.time()) + 1
    raw = verifier.issue("brief", expires_at=expires)
    first = await check.authenticate(raw)
    assert isinstance(first, AccessToken)
    assert check.identity(first) == principal_of(first)
    await anyio.sleep(max(0.0, expires - time.time() + 0.05))
    refused = await check.authenticate(raw)  # resource and principal remembered, but past exp
    assert not isinstance(refused, AccessToken) and refused.status_code == 401


async def test_each_caller_keeps_its_own_principal_and_the_memo_is_bounded() -> None:
    verifier = DictVerifier()
    check = bearer_check(verifier)
    seen = set()
    for index in range(MEMO_ENTRIES + 20):
        access = await check.authenticate(verifier.issue(f"u{index}", subject=f"user-{index}"))
        assert isinstance(access, AccessToken)
        identity = check.identity(access)
        assert identity == principal_of(access)
        seen.add(identity)
    assert len(seen) == MEMO_ENTRIES + 20 and len(check._principals) == MEMO_ENTRIES
    # the same subject through another client, or from another issuer, is another principal
    alice = await check.authenticate(verifier.issue("a1", subject="alice"))
    other_client = await check.authenticate(verifier.issue("a2", subject="alice", client_id="cli"))
    other_issuer = await check.authenticate(
        verifier.issue("a3", subject="alice", claims={"iss": "https://evil.example.com"})
    )
    identities = {check.identity(token) for token in (alice, other_client, other_issuer)}  # type: ignore[arg-type]
    assert len(identities) == 3
    huge = await check.authenticate(verifier.issue("huge", subject="x" * MEMO_KEY_CHARS))
    assert isinstance(huge, AccessToken) and check.identity(huge) == principal_of(huge)
    assert (huge.issuer, huge.subject, huge.client_id) not in check._principals
