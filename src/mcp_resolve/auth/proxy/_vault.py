"""Sealed state: what the OAuth proxy keeps in a store is AES-256-GCM ciphertext, bound to its name.

The proxy keeps upstream access and refresh tokens, its own signing keys and
its grants in a `KeyValueStore` that may be a Redis shared by a fleet (and its
backups). Everything is sealed before it leaves the process: anyone who can
read the store reads ciphertext, and anyone who can write it cannot forge or
alter an entry, nor move one entry to another name (the name is the AEAD's
associated data, so a sealed refresh-token record copied to the key of another
token fails to open).

`cryptography`'s AES-GCM (OpenSSL underneath) does the sealing, and its HKDF
derives the key from the operator's secret, one key per purpose: no
cryptography of our own. A blob is versioned:

    0x01 | key id (4 bytes) | nonce (12 random bytes) | ciphertext and 16-byte tag

The key id (an HMAC of the key, not the key) lets a `Vault` holding the
previous keys open what they sealed, so the secret can be rotated.
A random 96-bit nonce per seal keeps one key safe for far more entries
than any store holds (NIST's bound for random nonces is 2**32 seals).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ...stores.keyvalue import KeyValueStore

__all__ = ["MIN_SECRET_BYTES", "SealedStore", "Vault", "derive_key", "secret_name"]

logger = logging.getLogger("mcp_resolve.auth")

MIN_SECRET_BYTES = 32
"""The shortest operator secret `derive_key` accepts: 256 bits if it is random."""
_VERSION = 1
_HEADER = 1 + 4 + 12
_TAG = 16
_AAD = b"mcp-resolve sealed v1\x00"


def derive_key(secret: str | bytes, purpose: str) -> bytes:
    """A 32-byte key for `purpose` from the operator's secret (HKDF-SHA256).

    Different purposes give unrelated keys, so one secret can seal the store and
    sign cookies without either use weakening the other.
    """
    raw = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(raw) < MIN_SECRET_BYTES:
        raise ValueError(
            f"the secret must be at least {MIN_SECRET_BYTES} bytes: "
            'python -c "import secrets; print(secrets.token_urlsafe(32))" makes one'
        )
    if not purpose:
        raise ValueError("purpose must name what the key is for")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"mcp-resolve", info=purpose.encode())
    return hkdf.derive(raw)


def _key_id(key: bytes) -> bytes:
    return hmac.new(key, b"mcp-resolve vault key id", hashlib.sha256).digest()[:4]


class Vault:
    """Seals JSON objects under a name with AES-256-GCM; `previous` keys still open what they sealed."""

    def __init__(self, key: bytes, *, previous: Sequence[bytes] = ()) -> None:
        for candidate in (key, *previous):
            if not isinstance(candidate, bytes) or len(candidate) != 32:
                raise ValueError("a vault key is 32 bytes (derive_key makes one)")
        self._id = _key_id(key)
        self._sealer = AESGCM(key)
        self._openers = {_key_id(k): AESGCM(k) for k in reversed((key, *previous))}
        self._openers[self._id] = self._sealer

    def __repr__(self) -> str:
        return f"Vault(key_id={self.key_id!r})"

    @property
    def key_id(self) -> str:
        """The sealing key's id (hex): public, it says which key sealed a blob, nothing about the key."""
        return self._id.hex()

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id this vault opens: the sealing key's first, then the previous keys'."""
        return (self.key_id, *(key_id.hex() for key_id in self._openers if key_id != self._id))

    def seal(self, name: str, value: Mapping[str, Any]) -> bytes:
        """`value` as JSON, encrypted and authenticated for `name` (a fresh random nonce each time)."""
        if not isinstance(value, Mapping):
            raise TypeError("a vault seals a mapping (a JSON object)")
        plain = json.dumps(dict(value), separators=(",", ":"), ensure_ascii=False).encode()
        nonce = os.urandom(12)
        head = bytes([_VERSION]) + self._id + nonce
        return head + self._sealer.encrypt(nonce, plain, _AAD + name.encode())

    def open(self, name: str, blob: bytes) -> dict[str, Any] | None:
        """The object sealed for `name`; None if the blob was altered, sealed for another name or by an unknown key."""
        if not isinstance(blob, bytes) or len(blob) < _HEADER + _TAG or blob[0] != _VERSION:
            return None
        opener = self._openers.get(blob[1:5])
        if opener is None:
            return None
        try:
            plain = opener.decrypt(blob[5:_HEADER], blob[_HEADER:], _AAD + name.encode())
            value = json.loads(plain)
        except (InvalidTag, ValueError):
            return None
        return value if isinstance(value, dict) else None


class SealedStore:
    """A `KeyValueStore` holding sealed JSON objects: what the proxy's parts read and write.

    A value that does not open (tampered with, moved from another name, sealed
    with a key this vault does not have) reads as absent, and is logged by the
    kind of entry only (the part of the name before `:`), never by its name or content.
    """

    def __init__(self, store: KeyValueStore, vault: Vault) -> None:
        self.store = store
        self.vault = vault

    def __repr__(self) -> str:
        return f"SealedStore({self.store!r}, {self.vault!r})"

    @property
    def key_id(self) -> str:
        return self.vault.key_id

    @property
    def key_ids(self) -> tuple[str, ...]:
        return self.vault.key_ids

    async def put(self, name: str, value: Mapping[str, Any], *, ttl: float, only_new: bool = False) -> bool:
        return await self.store.put(name, self.vault.seal(name, value), ttl=ttl, only_new=only_new)

    async def get(self, name: str) -> dict[str, Any] | None:
        return self._open(name, await self.store.get(name))

    async def take(self, name: str) -> dict[str, Any] | None:
        return self._open(name, await self.store.take(name))

    async def delete(self, *names: str) -> None:
        await self.store.delete(*names)

    def _open(self, name: str, blob: bytes | None) -> dict[str, Any] | None:
        if blob is None:
            return None
        value = self.vault.open(name, blob)
        if value is None:
            logger.warning(
                "a sealed %r entry did not open (altered, moved, or sealed with another secret): "
                "read as absent",
                name.partition(":")[0][:40],
            )
        return value


def secret_name(kind: str, secret: str) -> str:
    """`kind:<SHA-256 of secret, base64url>`: the store key of a secret, so raw tokens never become keys."""
    digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()
    return f"{kind}:{base64.urlsafe_b64encode(digest).rstrip(b'=').decode()}"
