"""Hostile input against the OAuth proxy's state: someone who can write the store, or forge tokens.

An attacker with write access to the store (a shared Redis, a backup restored
in the wrong place) can alter, move or plant entries but holds no key; one on
the network can send any token. None of it may open, verify or sign. The store
is a real SQLite file; what an attacker plants is written straight into it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey

from mcp_resolve.auth.proxy._grants import Grant, Grants
from mcp_resolve.auth.proxy._keys import SigningKeys, SigningKeyUnavailable
from mcp_resolve.auth.proxy._vault import SealedStore, Vault, derive_key, secret_name
from mcp_resolve.stores import KeyValueStoreFull, MemoryKeyValueStore, SqliteKeyValueStore

pytestmark = pytest.mark.anyio

SECRET = "an-operator-secret-of-at-least-32-bytes!"
ISSUER = "https://mcp.example.com/"
RESOURCE = "https://mcp.example.com/mcp"


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[SqliteKeyValueStore]:
    store = SqliteKeyValueStore(tmp_path / "state.db", max_value_bytes=4096)
    yield store
    store.close()


def grants_over(raw: object, *, secret: str = SECRET, issuer: str = ISSUER) -> Grants:
    store = SealedStore(raw, Vault(derive_key(secret, "vault")))  # type: ignore[arg-type]
    return Grants(store, SigningKeys(store, keep_s=3600), issuer=issuer)


def a_grant(grant_id: str = "g-1", **changes: object) -> Grant:
    fields: dict[str, object] = {
        "grant_id": grant_id,
        "client_id": "client-1",
        "subject": "alice",
        "scopes": ("read",),
        "resource": RESOURCE,
        "claims": {"login": "alice"},
        "expires_at": time.time() + 86400,
    }
    fields.update(changes)
    return Grant(**fields)  # type: ignore[arg-type]


def b64(value: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


async def test_altered_ciphertext_of_a_grant_ends_its_tokens(raw: SqliteKeyValueStore) -> None:
    grants = grants_over(raw)
    await grants.create(a_grant())
    issued = await grants.issue("g-1")
    blob = await raw.get("grant:g-1")
    assert blob is not None and b"alice" not in blob
    for index in (0, 3, 20, len(blob) // 2, len(blob) - 1):
        altered = bytearray(blob)
        altered[index] ^= 0x80
        await raw.put("grant:g-1", bytes(altered), ttl=600)
        assert await grants.verify(issued.access_token, audience=RESOURCE) is None
    await raw.put("grant:g-1", blob, ttl=600)
    assert await grants.verify(issued.access_token, audience=RESOURCE) is not None


async def test_values_moved_between_names_do_not_open(raw: SqliteKeyValueStore) -> None:
    grants = grants_over(raw)
    await grants.create(a_grant("g-1"))
    await grants.create(a_grant("g-victim", subject="bob"))
    issued = await grants.issue("g-1")
    assert issued.refresh_token is not None
    # A refresh family's record copied to the name of a family the attacker made up.
    family, generation, mac = issued.refresh_token.split(".")
    record = await raw.get(secret_name("refresh-family", family))
    assert record is not None
    made_up = "A" * 22
    await raw.put(secret_name("refresh-family", made_up), record, ttl=600)
    assert await grants.store.get(secret_name("refresh-family", made_up)) is None
    assert await grants.load_refresh("client-1", f"{made_up}.{generation}.{mac}") is None
    assert await grants.load_refresh("client-1", issued.refresh_token) is not None
    # Alice's grant copied over Bob's revoked one does not bring it back as Alice's.
    bob = await grants.issue("g-victim")
    await grants.revoke("g-victim")
    alice = await raw.get("grant:g-1")
    assert alice is not None
    await raw.put("grant:g-victim", alice, ttl=600)
    assert await grants.verify(bob.access_token, audience=RESOURCE) is None


async def test_state_sealed_by_another_secret_opens_nothing_and_signs_nothing(
    raw: SqliteKeyValueStore,
) -> None:
    mine, theirs = grants_over(raw), grants_over(raw, secret="someone-elses-secret-of-32-bytes-or-more")
    await theirs.create(a_grant("g-1"))
    assert await mine.get("g-1") is None
    their_token = (await theirs.issue("g-1")).access_token
    assert await mine.verify(their_token, audience=RESOURCE) is None
    # A key planted at the name this worker's key for the epoch has: refused, nothing signed with it.
    planted = ECKey.generate_key("P-256", private=True)
    kid, _ = await theirs.keys.current()
    start = int(kid.split("-")[0])
    name = f"signing-key:{mine.keys.kid(start)}"
    foreign = SealedStore(raw, Vault(derive_key("someone-elses-secret-of-32-bytes-or-more", "vault")))
    await foreign.put(name, {"jwk": planted.as_dict(private=True)}, ttl=600)
    with pytest.raises(SigningKeyUnavailable):
        await mine.keys.current()
    await mine.create(a_grant("g-mine"))
    with pytest.raises(SigningKeyUnavailable):
        await mine.issue("g-mine")


async def test_oversized_values_and_a_store_filled_on_purpose_are_refused(tmp_path: Path) -> None:
    raw = MemoryKeyValueStore(max_entries=6, max_value_bytes=2048)
    grants = grants_over(raw)
    with pytest.raises(KeyValueStoreFull) as refused:
        await grants.create(a_grant(claims={"groups": ["g" * 100] * 50}))
    assert refused.value.bound == "max_value_bytes"
    await grants.create(a_grant("g-1"))
    issued = await grants.issue("g-1")  # the grant, the signing key, a refresh token: 3 entries
    for n in range(3):
        await grants.create(a_grant(f"filler-{n}"))
    with pytest.raises(KeyValueStoreFull) as refused:
        await grants.create(a_grant("one-too-many"))
    assert refused.value.bound == "max_entries"
    with pytest.raises(KeyValueStoreFull):
        await grants.issue("g-1")  # no token comes out of a write that did not land
    assert await grants.verify(issued.access_token, audience=RESOURCE) is not None  # reading still works


async def test_hs256_with_the_public_key_none_and_foreign_signers_are_refused(
    raw: SqliteKeyValueStore, caplog: pytest.LogCaptureFixture
) -> None:
    grants = grants_over(raw)
    await grants.create(a_grant())
    issued = await grants.issue("g-1")
    header = json.loads(base64.urlsafe_b64decode(issued.access_token.split(".")[0] + "=="))
    claims = json.loads(base64.urlsafe_b64decode(issued.access_token.split(".")[1] + "=="))
    public = (await grants.keys.jwks())["keys"][-1]
    caplog.set_level(logging.INFO, logger="mcp_resolve.auth")
    forged = []
    for secret in (json.dumps(public).encode(), ECKey.import_key(public).as_pem(private=False)):
        # The classic confusion: HMAC keyed with the public key (joserfc itself refuses to, so by hand).
        signing_input = f"{b64({**header, 'alg': 'HS256'})}.{b64({**claims, 'scope': 'admin'})}"
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        forged.append(f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}")
    forged.append(f"{b64({**header, 'alg': 'none'})}.{b64({**claims, 'scope': 'admin'})}.")
    stranger = ECKey.generate_key("P-256", private=True)  # the right kid, someone else's key
    forged.append(jwt.encode(header, {**claims, "scope": "admin"}, stranger, algorithms=["ES256"]))
    forged.append(
        jwt.encode({**header, "jwk": stranger.as_dict(private=False)}, claims, stranger, algorithms=["ES256"])
    )
    for token in forged:
        assert await grants.verify(token, audience=RESOURCE) is None
        await grants.revoke_token(token)  # a forged token revokes nothing
    assert await grants.verify(issued.access_token, audience=RESOURCE) is not None
    assert "is not this server's" in caplog.text and "bad signature" in caplog.text
    for token in forged:
        assert token.split(".")[-1] not in caplog.text or not token.split(".")[-1]


async def test_a_token_from_another_issuer_is_refused(raw: SqliteKeyValueStore) -> None:
    grants = grants_over(raw)
    same_keys_other_issuer = Grants(grants.store, grants.keys, issuer="https://evil.example.com/")
    await grants.create(a_grant())
    token = (await same_keys_other_issuer.issue("g-1")).access_token
    assert await grants.verify(token, audience=RESOURCE) is None
    await grants.revoke_token(token)
    assert await grants.get("g-1") is not None  # another issuer's token cannot revoke our grant
    elsewhere = grants_over(MemoryKeyValueStore(), secret="yet-another-secret-of-32-bytes-or-more!!")
    await elsewhere.create(a_grant())
    assert await grants.verify((await elsewhere.issue("g-1")).access_token, audience=RESOURCE) is None


async def test_hostile_token_shapes_are_refused_quietly(raw: SqliteKeyValueStore) -> None:
    grants = grants_over(raw)
    await grants.create(a_grant())
    issued = await grants.issue("g-1")
    _, body, signature = issued.access_token.split(".")
    hostile = [
        "",
        "x" * 100_000,
        ".".join(["a" * 10_000] * 3),
        f"{b64({'alg': 'ES256', 'typ': 'at+jwt', 'kid': '../../etc/passwd'})}.{body}.{signature}",
        f"{b64({'alg': 'ES256', 'typ': 'at+jwt', 'kid': 7})}.{body}.{signature}",
        f"{b64({'alg': 'ES256', 'typ': 'at+jwt', 'kid': 'k' * 5000})}.{body}.{signature}",
        f"{b64({'alg': 'ES256', 'typ': 'at+jwt'})}.{body}.{signature}",
        "W10.e30.AA",  # header is a JSON list
        "!!!.***.???",
        issued.access_token + ".extra",
    ]
    for token in hostile:
        assert await grants.verify(token, audience=RESOURCE) is None
        await grants.revoke_token(token)
    assert await grants.get("g-1") is not None


async def test_no_raw_token_or_claim_reaches_the_store(tmp_path: Path) -> None:
    raw = SqliteKeyValueStore(tmp_path / "state.db")
    try:
        grants = grants_over(raw)
        await grants.create(a_grant(claims={"login": "alice-the-login", "email": "alice@example.com"}))
        first = await grants.issue("g-1")
        assert first.refresh_token is not None
        second = await grants.refresh("client-1", first.refresh_token, [])
    finally:
        raw.close()
    with sqlite3.connect(tmp_path / "state.db") as conn:
        rows = conn.execute("SELECT key, value FROM mcp_resolve_kv").fetchall()
    dump = b"".join(key.encode() + bytes(value) for key, value in rows)
    assert rows
    secrets_seen = [first.refresh_token, second.refresh_token or "", first.access_token, second.access_token]
    for secret in [*secrets_seen, "alice-the-login", "alice@example.com", '"d"']:
        assert secret.encode() not in dump
