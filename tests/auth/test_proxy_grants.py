"""The proxy's own tokens: JWT access tokens from grants, rotating refresh tokens, reuse revoking the
grant, revocation, and every way an access token is refused. The store is a real SQLite file (two
connections: two workers of one host); the Redis outage test uses a real redis-server."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_resolve.auth.provider import TokenError
from mcp_resolve.auth.proxy._grants import Grant, Grants
from mcp_resolve.auth.proxy._keys import SigningKeys
from mcp_resolve.auth.proxy._vault import SealedStore, Vault, derive_key
from mcp_resolve.stores import (
    MemoryKeyValueStore,
    RedisConnection,
    RedisKeyValueStore,
    SqliteKeyValueStore,
    StoreUnavailable,
)
from redis_helpers import RedisServer

pytestmark = pytest.mark.anyio

SECRET = "an-operator-secret-of-at-least-32-bytes!"
ISSUER = "https://mcp.example.com/"
RESOURCE = "https://mcp.example.com/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def make_grants(raw: object, clock: Clock, *, issuer: str = ISSUER, secret: str = SECRET) -> Grants:
    store = SealedStore(raw, Vault(derive_key(secret, "vault")))  # type: ignore[arg-type]
    keys = SigningKeys(store, keep_s=3600, clock=clock)
    return Grants(store, keys, issuer=issuer, clock=clock)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def two(tmp_path: Path, clock: Clock) -> Iterator[tuple[Grants, Grants]]:
    raws = [SqliteKeyValueStore(tmp_path / "state.db") for _ in range(2)]
    yield make_grants(raws[0], clock), make_grants(raws[1], clock)
    for raw in raws:
        raw.close()


@pytest.fixture
def grants(two: tuple[Grants, Grants]) -> Grants:
    return two[0]


def a_grant(clock: Clock, grant_id: str = "g-1", **changes: object) -> Grant:
    fields: dict[str, object] = {
        "grant_id": grant_id,
        "client_id": "client-1",
        "subject": "github|42",
        "scopes": ("read", "write"),
        "resource": RESOURCE,
        "claims": {"login": "octocat", "email": "octo@example.com", "upstream": "github"},
        "expires_at": clock.now + 90 * 86400,
    }
    fields.update(changes)
    return Grant(**fields)  # type: ignore[arg-type]


def segments(token: str) -> list[dict[str, object]]:
    return [json.loads(base64.urlsafe_b64decode(part + "==")) for part in token.split(".")[:2]]


async def test_issue_gives_an_rfc9068_jwt_that_verifies_on_another_worker(
    two: tuple[Grants, Grants], clock: Clock
) -> None:
    one, other = two
    await one.create(a_grant(clock))
    issued = await one.issue("g-1", ["read"])
    assert issued.token_type == "Bearer" and issued.expires_in == 3600 and issued.scope == "read"
    assert issued.refresh_token and issued.refresh_token not in issued.access_token
    header, claims = segments(issued.access_token)
    assert header["typ"] == "at+jwt" and header["alg"] == "ES256"
    assert claims["iss"] == ISSUER and claims["aud"] == RESOURCE and claims["gid"] == "g-1"
    assert claims["login"] == "octocat" and claims["upstream"] == "github"
    token = await other.verify(issued.access_token, audience=RESOURCE)
    assert token is not None
    assert token.client_id == "client-1" and token.subject == "github|42" and token.scopes == ("read",)
    assert token.resource == RESOURCE and token.expires_at == int(clock.now) + 3600
    assert token.claims is not None and token.claims["email"] == "octo@example.com"
    assert token.issuer == ISSUER


async def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant(
    two: tuple[Grants, Grants], clock: Clock
) -> None:
    one, other = two
    await one.create(a_grant(clock))
    first = await one.issue("g-1")
    assert first.refresh_token is not None
    loaded = await other.load_refresh("client-1", first.refresh_token)
    assert loaded is not None and loaded.scopes == ["read", "write"] and loaded.subject == "github|42"
    second = await other.refresh("client-1", first.refresh_token, ["read"])
    assert second.refresh_token not in (None, first.refresh_token)
    assert second.scope == "read"
    assert (await one.verify(second.access_token, audience=RESOURCE)) is not None
    assert second.refresh_token is not None
    third = await one.refresh("client-1", second.refresh_token, [])  # empty: the family's scopes
    assert third.scope == "read write"
    # The spent first token comes back (a stolen copy): the whole grant ends.
    with pytest.raises(TokenError) as refused:
        await one.refresh("client-1", first.refresh_token, [])
    assert refused.value.error == "invalid_grant"
    assert await one.get("g-1") is None
    for access in (first.access_token, second.access_token, third.access_token):
        assert await other.verify(access, audience=RESOURCE) is None
    assert third.refresh_token is not None
    with pytest.raises(TokenError):
        await other.refresh("client-1", third.refresh_token, [])
    assert await other.load_refresh("client-1", third.refresh_token) is None


async def test_a_spent_token_loaded_again_revokes_too(grants: Grants, clock: Clock) -> None:
    await grants.create(a_grant(clock))
    first = await grants.issue("g-1")
    assert first.refresh_token is not None
    second = await grants.refresh("client-1", first.refresh_token, [])
    assert await grants.load_refresh("client-1", first.refresh_token) is None
    assert await grants.verify(second.access_token, audience=RESOURCE) is None


async def test_concurrent_refreshes_of_one_token_have_one_winner_then_revoke(
    two: tuple[Grants, Grants], clock: Clock
) -> None:
    one, other = two
    await one.create(a_grant(clock))
    issued = await one.issue("g-1")
    assert issued.refresh_token is not None
    token = issued.refresh_token
    results = await asyncio.gather(
        *(w.refresh("client-1", token, []) for w in (one, other) * 4), return_exceptions=True
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(r, TokenError) and r.error == "invalid_grant" for r in results if r not in winners)
    assert await one.get("g-1") is None


async def test_refresh_checks_client_and_scope_without_spending_the_token(
    grants: Grants, clock: Clock
) -> None:
    await grants.create(a_grant(clock))
    issued = await grants.issue("g-1", ["read"])
    assert issued.refresh_token is not None
    with pytest.raises(TokenError) as refused:
        await grants.refresh("client-2", issued.refresh_token, [])
    assert refused.value.error == "invalid_grant"
    assert await grants.load_refresh("client-2", issued.refresh_token) is None
    with pytest.raises(TokenError) as refused:
        await grants.refresh("client-1", issued.refresh_token, ["write"])
    assert refused.value.error == "invalid_scope"
    with pytest.raises(TokenError) as refused:
        await grants.refresh("client-1", "never-issued", [])
    assert refused.value.error == "invalid_grant"
    assert (await grants.refresh("client-1", issued.refresh_token, [])).scope == "read"
    with pytest.raises(TokenError) as refused:
        await grants.issue("g-1", ["admin"])
    assert refused.value.error == "invalid_scope"


async def test_revoke_and_revoke_token_end_every_token_of_the_grant(grants: Grants, clock: Clock) -> None:
    for gid in ("g-1", "g-2", "g-3"):
        await grants.create(a_grant(clock, gid))
    one, two_, three = [await grants.issue(g) for g in ("g-1", "g-2", "g-3")]
    await grants.revoke("g-1")
    assert await grants.verify(one.access_token, audience=RESOURCE) is None
    assert one.refresh_token is not None and two_.refresh_token is not None
    with pytest.raises(TokenError):
        await grants.refresh("client-1", one.refresh_token, [])
    await grants.revoke_token(two_.access_token, client_id="someone-else")  # not theirs: nothing happens
    assert await grants.verify(two_.access_token, audience=RESOURCE) is not None
    await grants.revoke_token(two_.access_token, client_id="client-1")
    assert await grants.verify(two_.access_token, audience=RESOURCE) is None
    assert three.refresh_token is not None
    await grants.revoke_token(three.refresh_token)
    assert await grants.verify(three.access_token, audience=RESOURCE) is None
    assert await grants.load_refresh("client-1", three.refresh_token) is None
    await grants.revoke_token("not-a-token-of-ours")  # RFC 7009: ignored
    await grants.revoke_token("a.b.c")


async def test_wrong_audience_expired_tampered_none_and_unknown_kid_are_refused(
    grants: Grants, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    await grants.create(a_grant(clock))
    issued = await grants.issue("g-1")
    token = issued.access_token
    caplog.set_level(logging.INFO, logger="mcp_resolve.auth")
    assert await grants.verify(token, audience="https://other.example.com/mcp") is None
    assert "another audience" in caplog.text
    header, claims = segments(token)
    head, body, signature = token.split(".")

    def b64(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    tampered = f"{head}.{b64({**claims, 'scope': 'read write admin'})}.{signature}"
    assert await grants.verify(tampered, audience=RESOURCE) is None
    assert "bad signature" in caplog.text
    unsigned = f"{b64({**header, 'alg': 'none'})}.{body}."
    assert await grants.verify(unsigned, audience=RESOURCE) is None
    assert await grants.verify(f"{b64({**header, 'alg': 'none'})}.{body}.x", audience=RESOURCE) is None
    other_kid = f"{b64({**header, 'kid': '123-deadbeef'})}.{body}.{signature}"
    assert await grants.verify(other_kid, audience=RESOURCE) is None
    assert "does not have" in caplog.text
    not_at = f"{b64({**header, 'typ': 'JWT'})}.{body}.{signature}"
    assert await grants.verify(not_at, audience=RESOURCE) is None
    clock.now += 3600 + 29  # within the leeway
    assert await grants.verify(token, audience=RESOURCE) is not None
    clock.now += 2
    assert await grants.verify(token, audience=RESOURCE) is None
    assert "expired" in caplog.text
    assert token not in caplog.text and signature not in caplog.text


async def test_tokens_never_outlive_their_grant(grants: Grants, clock: Clock) -> None:
    await grants.create(a_grant(clock, expires_at=clock.now + 600))
    issued = await grants.issue("g-1")
    assert issued.expires_in == 600
    _, claims = segments(issued.access_token)
    assert claims["exp"] == int(clock.now) + 600
    clock.now += 601
    assert await grants.get("g-1") is None
    with pytest.raises(TokenError):
        await grants.issue("g-1")


async def test_grant_and_option_checks(grants: Grants, clock: Clock) -> None:
    with pytest.raises(ValueError, match="iss"):
        await grants.create(a_grant(clock, claims={"iss": "https://evil.example.com"}))
    with pytest.raises(ValueError, match="ended"):
        await grants.create(a_grant(clock, expires_at=clock.now - 1))
    with pytest.raises(TokenError):
        await grants.issue("no-such-grant")
    store = SealedStore(MemoryKeyValueStore(), Vault(derive_key(SECRET, "vault")))
    with pytest.raises(ValueError, match="keep_s"):
        Grants(store, SigningKeys(store, keep_s=60), issuer=ISSUER)


async def test_a_grant_without_resource_uses_the_default_audience(tmp_path: Path, clock: Clock) -> None:
    store = SealedStore(MemoryKeyValueStore(), Vault(derive_key(SECRET, "vault")))
    grants = Grants(
        store, SigningKeys(store, keep_s=3600, clock=clock), issuer=ISSUER, audience=RESOURCE, clock=clock
    )
    await grants.create(a_grant(clock, resource=None))
    issued = await grants.issue("g-1")
    assert segments(issued.access_token)[1]["aud"] == RESOURCE
    assert await grants.verify(issued.access_token, audience=RESOURCE) is not None


class FailingStore:
    """A KeyValueStore that stops answering on the Nth put from now (and, if asked, on deletes too),
    as Redis going down between two writes of one request does; the store under it is untouched."""

    def __init__(self, store: MemoryKeyValueStore) -> None:
        self.store = store
        self.puts_left: int | None = None
        self.failing_deletes = False
        self.failed = 0

    def fail_on_put(self, n: int, *, deletes: bool = False) -> None:
        self.puts_left, self.failing_deletes = n, deletes

    def heal(self) -> None:
        self.puts_left, self.failing_deletes = None, False

    def _down(self) -> StoreUnavailable:
        self.failed += 1
        return StoreUnavailable("the test store")

    async def put(self, key: str, value: bytes, *, ttl: float, only_new: bool = False) -> bool:
        if self.puts_left is not None:
            self.puts_left -= 1
            if self.puts_left <= 0:
                raise self._down()
        return await self.store.put(key, value, ttl=ttl, only_new=only_new)

    async def get(self, key: str) -> bytes | None:
        return await self.store.get(key)

    async def take(self, key: str) -> bytes | None:
        return await self.store.take(key)

    async def delete(self, *keys: str) -> None:
        if self.failing_deletes:
            raise self._down()
        await self.store.delete(*keys)


async def test_a_store_failure_mid_refresh_leaves_the_token_usable_not_revoked(clock: Clock) -> None:
    """Whichever write of a refresh the store fails, the client's retry of the same token (after its
    503) refreshes; it is not taken for reuse, and the grant lives. Reuse after that still revokes."""
    failing = FailingStore(MemoryKeyValueStore(clock=clock))
    grants = make_grants(failing, clock)
    failures = 0
    for n in range(1, 5):
        gid = f"g-{n}"
        await grants.create(a_grant(clock, gid))
        issued = await grants.issue(gid)
        assert issued.refresh_token is not None
        failing.fail_on_put(n)
        try:
            refreshed = await grants.refresh("client-1", issued.refresh_token, [])
        except StoreUnavailable:
            failures += 1
            failing.heal()
            refreshed = await grants.refresh("client-1", issued.refresh_token, [])  # the retry
        failing.heal()
        assert await grants.get(gid) is not None, n
        assert await grants.verify(refreshed.access_token, audience=RESOURCE) is not None, n
        with pytest.raises(TokenError):  # the spent token again: reuse
            await grants.refresh("client-1", issued.refresh_token, [])
        assert await grants.get(gid) is None, n
    assert failures >= 2  # every write of a refresh was failed once


async def test_a_refresh_whose_undo_failed_too_works_again_once_its_claim_ends(clock: Clock) -> None:
    """The store down for the write and for the undo after it: a minute later the token works."""
    failing = FailingStore(MemoryKeyValueStore(clock=clock))
    grants = make_grants(failing, clock)
    await grants.create(a_grant(clock))
    issued = await grants.issue("g-1")
    assert issued.refresh_token is not None
    failing.fail_on_put(2, deletes=True)
    with pytest.raises(StoreUnavailable):
        await grants.refresh("client-1", issued.refresh_token, [])
    failing.heal()
    clock.now += 61
    refreshed = await grants.refresh("client-1", issued.refresh_token, [])
    assert await grants.verify(refreshed.access_token, audience=RESOURCE) is not None


async def test_rotation_keeps_one_record_per_family_however_often_it_refreshes(clock: Clock) -> None:
    """A busy client refreshing all day costs the store one record, not one per refresh; a token
    from many rotations ago is still known as spent, and revokes the grant."""
    raw = MemoryKeyValueStore(clock=clock)
    grants = make_grants(raw, clock)
    await grants.create(a_grant(clock))
    first = await grants.issue("g-1")
    assert first.refresh_token is not None
    entries = len(raw)  # the grant, the signing key, the refresh family
    token = first.refresh_token
    for _ in range(200):
        clock.now += 1
        token = (await grants.refresh("client-1", token, [])).refresh_token or ""
        assert len(raw) == entries
    assert await grants.load_refresh("client-1", token) is not None
    with pytest.raises(TokenError) as refused:
        await grants.refresh("client-1", first.refresh_token, [])
    assert refused.value.error == "invalid_grant"
    assert await grants.get("g-1") is None
    assert await grants.load_refresh("client-1", token) is None


async def test_refresh_tokens_cannot_be_made_up_from_a_real_one(grants: Grants, clock: Clock) -> None:
    """The generation is in the token, under the family's MAC: changing it (to look older and revoke
    the grant, or newer) makes a token that is not ours, which does nothing."""
    await grants.create(a_grant(clock))
    first = await grants.issue("g-1")
    assert first.refresh_token is not None
    second = await grants.refresh("client-1", first.refresh_token, [])
    assert second.refresh_token is not None
    family, generation, mac = second.refresh_token.split(".")
    assert generation == "1"
    for forged in (
        f"{family}.0.{mac}",
        f"{family}.2.{mac}",
        f"{family}.1.{mac[:-2]}AA",
        f"{family}.01.{mac}",
    ):
        with pytest.raises(TokenError):
            await grants.refresh("client-1", forged, [])
        assert await grants.load_refresh("client-1", forged) is None
        await grants.revoke_token(forged)
    assert await grants.get("g-1") is not None
    assert (await grants.refresh("client-1", second.refresh_token, [])).refresh_token


@pytest.mark.slow
async def test_store_down_refuses_tokens_with_a_clear_reason(caplog: pytest.LogCaptureFixture) -> None:
    redis = RedisServer()
    redis.start_fresh()
    connection = RedisConnection(redis.url, connect_timeout=0.5, timeout=0.5)
    try:
        clock = Clock()
        clock.now = time.time()
        grants = make_grants(RedisKeyValueStore(connection), clock)
        await grants.create(a_grant(clock))
        issued = await grants.issue("g-1")
        assert await grants.verify(issued.access_token, audience=RESOURCE) is not None
        redis.stop()
        with caplog.at_level(logging.WARNING, logger="mcp_resolve.auth"):
            assert await asyncio.wait_for(grants.verify(issued.access_token, audience=RESOURCE), 10) is None
        assert "the store did not answer" in caplog.text
        assert issued.access_token not in caplog.text
        assert issued.access_token.split(".")[2] not in caplog.text
    finally:
        await connection.aclose()
        redis.close()
