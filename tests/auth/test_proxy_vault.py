"""The vault: HKDF keys from the operator's secret, AES-256-GCM blobs bound to their name, and the
sealed store the proxy keeps its state in (a real SQLite file, and memory)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcp_resolve.auth.proxy._vault import SealedStore, Vault, derive_key, secret_name
from mcp_resolve.stores import MemoryKeyValueStore, SqliteKeyValueStore

pytestmark = pytest.mark.anyio

SECRET = "an-operator-secret-of-at-least-32-bytes!"


def test_derive_key_is_per_secret_and_purpose_and_refuses_short_secrets() -> None:
    key = derive_key(SECRET, "vault")
    assert len(key) == 32
    assert derive_key(SECRET.encode(), "vault") == key
    assert derive_key(SECRET, "cookies") != key
    assert derive_key(SECRET + "x", "vault") != key
    with pytest.raises(ValueError, match="at least 32 bytes"):
        derive_key("too-short", "vault")
    with pytest.raises(ValueError):
        derive_key(SECRET, "")


def test_seal_and_open_round_trip_with_a_fresh_nonce_each_time() -> None:
    vault = Vault(derive_key(SECRET, "vault"))
    value = {"access_token": "upstream-gho-secret", "n": 1, "nested": {"é": [1, 2]}}
    one, two = vault.seal("upstream:a", value), vault.seal("upstream:a", value)
    assert one != two  # a random nonce per seal
    assert one[0] == 1  # the format's version
    assert b"upstream-gho-secret" not in one
    assert vault.open("upstream:a", one) == value
    assert vault.open("upstream:a", two) == value


def test_a_blob_opens_only_under_its_own_name_and_key() -> None:
    vault = Vault(derive_key(SECRET, "vault"))
    blob = vault.seal("refresh:A", {"gid": "g1"})
    assert vault.open("refresh:B", blob) is None
    assert Vault(derive_key(SECRET + "other", "vault")).open("refresh:A", blob) is None
    assert Vault(derive_key(SECRET, "other purpose")).open("refresh:A", blob) is None


def test_any_altered_byte_or_truncation_fails_to_open() -> None:
    vault = Vault(derive_key(SECRET, "vault"))
    blob = vault.seal("grant:g", {"subject": "alice"})
    for index in range(len(blob)):
        altered = bytearray(blob)
        altered[index] ^= 0x01
        assert vault.open("grant:g", bytes(altered)) is None, index
    for length in (0, 1, 5, 17, 32, len(blob) - 1):
        assert vault.open("grant:g", blob[:length]) is None
    assert vault.open("grant:g", blob + b"\x00") is None


def test_previous_keys_open_old_blobs_so_the_secret_can_rotate() -> None:
    old, new = derive_key(SECRET, "vault"), derive_key("a-brand-new-secret-of-32-bytes-or-more!", "vault")
    sealed_before = Vault(old).seal("grant:g", {"v": 1})
    rotated = Vault(new, previous=[old])
    assert rotated.open("grant:g", sealed_before) == {"v": 1}
    sealed_after = rotated.seal("grant:g", {"v": 2})
    assert Vault(new).open("grant:g", sealed_after) == {"v": 2}
    assert Vault(old).open("grant:g", sealed_after) is None
    assert rotated.key_id == Vault(new).key_id != Vault(old).key_id
    with pytest.raises(ValueError):
        Vault(b"short")
    with pytest.raises(TypeError):
        rotated.seal("x", ["not", "a", "mapping"])  # type: ignore[arg-type]


def test_secret_name_hashes_the_secret() -> None:
    name = secret_name("refresh", "the-raw-refresh-token")
    kind, _, digest = name.partition(":")
    assert kind == "refresh"
    assert len(digest) == 43 and "=" not in digest
    assert "the-raw-refresh-token" not in name
    assert secret_name("refresh", "the-raw-refresh-token") == name
    assert secret_name("refresh-used", "the-raw-refresh-token") != name


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_sealed_store_keeps_only_ciphertext_and_reads_altered_entries_as_absent(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = MemoryKeyValueStore() if backend == "memory" else SqliteKeyValueStore(tmp_path / "kv.db")
    store = SealedStore(raw, Vault(derive_key(SECRET, "vault")))
    name = secret_name("upstream", "person-1")
    assert await store.put(name, {"access_token": "gho_upstream_secret"}, ttl=30) is True
    assert await store.put(name, {"access_token": "other"}, ttl=30, only_new=True) is False
    blob = await raw.get(name)
    assert blob is not None and b"gho_upstream_secret" not in blob
    assert await store.get(name) == {"access_token": "gho_upstream_secret"}
    await raw.put(name, blob[:-1] + bytes([blob[-1] ^ 1]), ttl=30)  # someone with write access alters it
    with caplog.at_level(logging.WARNING, logger="mcp_resolve.auth"):
        assert await store.get(name) is None
    assert "'upstream' entry did not open" in caplog.text
    assert name.partition(":")[2] not in caplog.text
    await raw.put(name, blob, ttl=30)
    assert await store.take(name) == {"access_token": "gho_upstream_secret"}
    assert await store.take(name) is None
    await store.put("grant:g", {"a": 1}, ttl=30)
    await store.delete("grant:g")
    assert await store.get("grant:g") is None
    if isinstance(raw, SqliteKeyValueStore):
        raw.close()
