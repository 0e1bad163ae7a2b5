"""Signing keys: one ES256 key per epoch that every worker agrees on, rotated, kept for verification.

Two workers are two `SigningKeys` over one store (two SQLite connections to one
file, as two processes on a host have); the clock is a number the test moves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

from mcp_resolve.auth.proxy._keys import SigningKeys, SigningKeyUnavailable
from mcp_resolve.auth.proxy._vault import SealedStore, Vault, derive_key
from mcp_resolve.stores import SqliteKeyValueStore

pytestmark = pytest.mark.anyio

SECRET = "an-operator-secret-of-at-least-32-bytes!"
DAY = 86400


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0 + 100

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[list[SqliteKeyValueStore]]:
    made = [SqliteKeyValueStore(tmp_path / "state.db") for _ in range(2)]
    yield made
    for store in made:
        store.close()


def sealed(raw: SqliteKeyValueStore, secret: str = SECRET) -> SealedStore:
    return SealedStore(raw, Vault(derive_key(secret, "vault")))


def workers(
    stores: list[SqliteKeyValueStore], clock: Clock, *, keep_s: float = 3600, **options: float
) -> list[SigningKeys]:
    return [SigningKeys(sealed(raw), keep_s=keep_s, clock=clock, **options) for raw in stores]


async def test_workers_converge_on_one_key_per_epoch(stores: list[SqliteKeyValueStore], clock: Clock) -> None:
    one, two = workers(stores, clock)
    results = await asyncio.gather(*(worker.current() for worker in (one, two) * 5))
    kids = {kid for kid, _ in results}
    publics = {tuple(sorted(key.as_dict(private=False).items())) for _, key in results}
    assert len(kids) == 1 and len(publics) == 1
    kid, key = results[0]
    assert kid == f"{int(clock.now // DAY * DAY)}-{one.store.key_id}"
    token = jwt.encode({"alg": "ES256", "kid": kid}, {"sub": "x"}, key, algorithms=["ES256"])
    public = await two.verification_key(kid)
    assert public is not None and not public.is_private
    assert jwt.decode(token, public, algorithms=["ES256"]).claims == {"sub": "x"}


async def test_rotation_keeps_the_old_key_for_verification_until_keep_s(
    stores: list[SqliteKeyValueStore], clock: Clock
) -> None:
    one, two = workers(stores, clock, rotation_s=DAY, keep_s=7200)
    old_kid, old_key = await one.current()
    clock.now += DAY  # the next epoch
    new_kid, new_key = await two.current()
    assert new_kid != old_kid
    assert new_key.as_dict(private=False) != old_key.as_dict(private=False)
    assert (await one.current())[0] == new_kid
    clock.now = (clock.now // DAY) * DAY + 7199  # the old epoch ended 7199 s ago
    assert await two.verification_key(old_kid) is not None
    assert old_kid in {k["kid"] for k in (await one.jwks())["keys"]}
    clock.now += 1  # keep_s has passed
    assert await two.verification_key(old_kid) is None
    assert old_kid not in {k["kid"] for k in (await one.jwks())["keys"]}


async def test_jwks_publishes_current_and_next_keys_and_no_private_part(
    stores: list[SqliteKeyValueStore], clock: Clock
) -> None:
    one, two = workers(stores, clock)
    kid, _ = await one.current()
    document = await one.jwks()
    kids = [k["kid"] for k in document["keys"]]
    start = int(clock.now // DAY * DAY)
    next_kid = f"{start + DAY}-{one.store.key_id}"
    assert kids == [next_kid, kid]
    assert all("d" not in k and k["kty"] == "EC" and k["alg"] == "ES256" for k in document["keys"])
    clock.now += DAY  # the next epoch signs with the key published a day ago
    assert (await two.current())[0] == next_kid
    assert ECKey.import_key((await one.jwks())["keys"][1]).as_dict() == (await two.current())[1].as_dict(
        private=False
    )


async def test_unknown_foreign_and_malformed_kids_find_no_key(
    stores: list[SqliteKeyValueStore], clock: Clock
) -> None:
    (mine,) = workers(stores[:1], clock)
    kid, _ = await mine.current()
    theirs = SigningKeys(
        sealed(stores[1], "another-secret-of-at-least-32-bytes!!!"), keep_s=3600, clock=clock
    )
    their_kid, _ = await theirs.current()
    assert their_kid != kid
    assert await mine.verification_key(their_kid) is None
    start = int(kid.split("-")[0])
    for bad in [
        "",
        "-",
        kid + "x",
        f"{start + 1}-{mine.store.key_id}",  # not an epoch start
        f"{start - DAY}-{mine.store.key_id}",  # an epoch nobody made a key for
        f"{start + 5 * DAY}-{mine.store.key_id}",  # the future
        "../" + kid,
        "9" * 40 + "-" + mine.store.key_id,
    ]:
        assert await mine.verification_key(bad) is None, bad


async def test_a_key_read_once_is_cached(stores: list[SqliteKeyValueStore], clock: Clock) -> None:
    one, two = workers(stores, clock)
    kid, _ = await one.current()
    assert await two.verification_key(kid) is not None
    await stores[0].delete(f"signing-key:{kid}")  # the store forgets it: the cache still has it
    assert await two.verification_key(kid) is not None
    assert (await one.current())[0] == kid


async def test_a_stored_key_that_does_not_open_signs_nothing(
    stores: list[SqliteKeyValueStore], clock: Clock
) -> None:
    (one,) = workers(stores[:1], clock)
    kid = one.kid(int(clock.now // DAY * DAY))
    await stores[0].put(f"signing-key:{kid}", b"\x01garbage-not-sealed-by-us" * 4, ttl=DAY)
    with pytest.raises(SigningKeyUnavailable, match="same secret"):
        await one.current()


def test_options_are_checked(stores: list[SqliteKeyValueStore]) -> None:
    store = sealed(stores[0])
    with pytest.raises(ValueError):
        SigningKeys(store, rotation_s=0.5, keep_s=10)
    with pytest.raises(ValueError):
        SigningKeys(store, keep_s=-1)
    with pytest.raises(ValueError, match="max_cached"):
        SigningKeys(store, rotation_s=60, keep_s=30 * DAY)
