"""The proxy's signing keys: one ES256 key per rotation epoch, the same on every worker of a fleet.

Time is cut into epochs of `rotation_s`; the key of an epoch is made by the
first worker that needs it and stored sealed with `only_new`, so every other
worker that made one at the same moment loses the race, reads the winner's
and signs with that: a fleet converges on one key per epoch without talking.
A key's id says which epoch it belongs to (its start, in seconds since 1970)
and which sealing key guards it, so verification finds it by id alone.

A key signs during its epoch and verifies `keep_s` longer (set it to at least
the access tokens' lifetime: a token signed at the end of an epoch must still
verify until it expires). The JWKS lists every key still verifying plus the
next epoch's, published before it signs anything, so a resource server that
caches the JWKS already knows a key when the first token signed with it arrives.

Keys read from the store are kept in a small cache (bounded), so verifying a
token reads the store once per key, not once per token. ES256 keys are made
and used by joserfc, the JOSE library every verifier here uses.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from joserfc.jwk import ECKey

from ._vault import SealedStore

__all__ = ["SigningKeyUnavailable", "SigningKeys"]

_SKEW_S = 60
"""How far apart workers' clocks may be at an epoch's edge."""


class SigningKeyUnavailable(RuntimeError):
    """No signing key could be made or read for the current epoch (nothing is signed)."""


class SigningKeys:
    """Rotating ES256 keys shared through a `SealedStore` (every worker using the same store and secret agrees).

    `rotation_s` (whole seconds) must be the same on every worker; `keep_s`
    at least the access-token lifetime. `max_cached` bounds the keys kept in
    memory, and with it how many epochs `keep_s` may span.
    """

    def __init__(
        self,
        store: SealedStore,
        *,
        rotation_s: float = 86400,
        keep_s: float,
        max_cached: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(rotation_s, bool) or not float(rotation_s).is_integer() or rotation_s < 1:
            raise ValueError("rotation_s must be a whole number of seconds, at least 1")
        if isinstance(keep_s, bool) or not 0 <= keep_s < math.inf:
            raise ValueError("keep_s must be a number of seconds, 0 or more")
        self.rotation_s = int(rotation_s)
        self.keep_s = float(keep_s)
        if math.ceil(self.keep_s / self.rotation_s) + 3 > max_cached:
            raise ValueError(
                f"keep_s spans more epochs of rotation_s than max_cached ({max_cached}) keys: "
                "rotate less often, keep keys shorter, or raise max_cached"
            )
        self.store = store
        self.max_cached = max_cached
        self._clock = clock
        self._cache: OrderedDict[str, ECKey | None] = OrderedDict()
        """kid -> its key (None: a past epoch nobody made a key for)."""

    def __repr__(self) -> str:
        return f"SigningKeys(rotation_s={self.rotation_s}, keep_s={self.keep_s})"

    def kid(self, start: int, key_id: str | None = None) -> str:
        """The key id of the epoch starting at `start`: `<start>-<sealing key id>`. The sealing key's
        id keeps apart the keys of workers configured with different secrets; a previous sealing
        key's (`previous_encryption_keys`) still names the keys it sealed, which verify until they
        expire, so rotating the secret signs nobody out."""
        return f"{start}-{key_id or self.store.key_id}"

    async def current(self) -> tuple[str, Any]:
        """(kid, private key) of the current epoch; made (once per fleet) if nobody made it yet.

        Raises `StoreUnavailable` or `KeyValueStoreFull` from the store, and
        `SigningKeyUnavailable` if the epoch's stored key cannot be opened.
        """
        start = self._start(float(self._clock()))
        return self.kid(start), await self._ensure(start)

    async def verification_key(self, kid: str) -> Any | None:
        """The public key with this id, while tokens it signed may still be valid; None otherwise."""
        parsed = self._parse(kid)
        if parsed is None:
            return None
        start, key_id = parsed
        now = float(self._clock())
        if not self._verifies(start, now) or start > self._start(now) + self.rotation_s:
            return None
        key = await self._load(start, now, key_id)
        return None if key is None else ECKey.import_key(key.as_dict(private=False))

    async def jwks(self) -> dict[str, Any]:
        """The public JWK set: every key still verifying, and the next epoch's (made now if need be)."""
        now = float(self._clock())
        current = self._start(now)
        await self._ensure(current + self.rotation_s)
        keys = []
        for key_id in self.store.key_ids:
            start = current + self.rotation_s
            while self._verifies(start, now):
                key = await self._load(start, now, key_id)
                if key is not None:
                    keys.append(key.as_dict(private=False))
                start -= self.rotation_s
        return {"keys": keys}

    def _start(self, now: float) -> int:
        return math.floor(now / self.rotation_s) * self.rotation_s

    def _verifies(self, start: int, now: float) -> bool:
        return now < start + self.rotation_s + self.keep_s

    def _parse(self, kid: str) -> tuple[int, str] | None:
        text, _, key_id = kid.partition("-")
        if key_id not in self.store.key_ids or not text.isdigit() or len(text) > 12:
            return None
        start = int(text)
        return (start, key_id) if start % self.rotation_s == 0 else None

    def _name(self, start: int, key_id: str | None = None) -> str:
        return f"signing-key:{self.kid(start, key_id)}"

    async def _ensure(self, start: int) -> ECKey:
        key = self._cache.get(self.kid(start))
        if key is not None:
            return key
        name = self._name(start)
        made = ECKey.generate_key(
            "P-256", parameters={"kid": self.kid(start), "alg": "ES256", "use": "sig"}, private=True
        )
        ttl = start + self.rotation_s + self.keep_s + _SKEW_S - float(self._clock())
        if await self.store.put(name, {"jwk": made.as_dict(private=True)}, ttl=ttl, only_new=True):
            key = made
        else:  # another worker made this epoch's key first: use theirs
            key = _key(await self.store.get(name))
            if key is None:
                raise SigningKeyUnavailable(
                    "the signing key of this epoch is in the store but does not open: is every worker "
                    "configured with the same secret?"
                )
        self._remember(self.kid(start), key)
        return key

    async def _load(self, start: int, now: float, key_id: str | None = None) -> ECKey | None:
        kid = self.kid(start, key_id)
        if kid in self._cache:
            self._cache.move_to_end(kid)
            return self._cache[kid]
        key = _key(await self.store.get(self._name(start, key_id)))
        if key is not None or start + self.rotation_s + _SKEW_S < now:
            self._remember(kid, key)  # a past epoch nobody made a key for never gets one
        return key

    def _remember(self, kid: str, key: ECKey | None) -> None:
        self._cache[kid] = key
        self._cache.move_to_end(kid)
        while len(self._cache) > self.max_cached:
            self._cache.popitem(last=False)


def _key(entry: dict[str, Any] | None) -> ECKey | None:
    if entry is None or not isinstance(entry.get("jwk"), dict):
        return None
    try:
        key = ECKey.import_key(entry["jwk"])
    except Exception:  # a malformed key reads as no key
        return None
    return key if key.is_private else None
