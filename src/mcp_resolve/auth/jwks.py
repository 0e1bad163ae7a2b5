"""Signing keys for JWT verification: a fixed public key, or a JWKS fetched over HTTP and cached.

Rotation works without a restart: a token naming a key id the cached set
lacks makes the set be fetched again. That refetch is rate-limited (a flood
of made-up key ids costs the authorization server one request per interval,
not one per token), and concurrent requests share one fetch, bounded by one
deadline: nobody waits on it longer, and a token whose key is cached never
waits on it at all. Cached keys are trusted for `cache_ttl_s` after they
were fetched; past that, or when nothing was ever fetched, an unreachable
or slow endpoint means no key, so the token is refused (fail closed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, Key, KeySet, OKPKey, RSAKey, import_key

from .fetch import Unreachable, fetch_json

__all__ = ["JWKSKeys", "KeyUnavailable", "StaticKey", "load_public_key"]

logger = logging.getLogger("mcp_resolve.auth")

JWKS_LIMIT = 512 * 1024
"""Bytes of a JWKS document read at most (real ones are a few kilobytes)."""
_ASYMMETRIC = (RSAKey, ECKey, OKPKey)


class KeyUnavailable(Exception):
    """No key can check this token; `str()` is the reason, fit for the log."""


def _usable(key: Key, alg: str) -> bool:
    """A signature key of an asymmetric type, not pinned to another algorithm."""
    return isinstance(key, _ASYMMETRIC) and key.get("use") in (None, "sig") and key.alg in (None, alg)


def _pick(keys: list[Key], kid: str | None, alg: str) -> Key | None:
    if kid is None:
        usable = [key for key in keys if _usable(key, alg)]
        return usable[0] if len(usable) == 1 else None
    for key in keys:
        if key.kid == kid and _usable(key, alg):
            return key
    return None


def load_public_key(value: Any) -> list[Key]:
    """The keys of `public_key=`: a PEM (str or bytes), a JWK or JWKS dict, or joserfc key(s).

    Only asymmetric keys: a shared secret here would let anyone holding the
    public half forge tokens (the HS256 confusion this verifier refuses).
    """
    keys: list[Any]
    if isinstance(value, KeySet):
        keys = list(value.keys)
    elif isinstance(value, Mapping):
        try:
            keys = (
                list(KeySet.import_key_set(dict(value)).keys)  # type: ignore[arg-type]
                if "keys" in value
                else [import_key(dict(value))]  # type: ignore[call-overload]
            )
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"public_key is not a usable JWK or JWKS ({type(exc).__name__})") from None
    elif isinstance(value, (str, bytes)):
        data = value.encode() if isinstance(value, str) else value
        keys = []
        for key_type in ("RSA", "EC", "OKP"):
            try:
                keys = [import_key(data, key_type)]  # type: ignore[call-overload]
                break
            except (JoseError, ValueError, TypeError):
                continue
        if not keys:
            raise ValueError("public_key is not a PEM-encoded RSA, EC or OKP public key")
    else:
        keys = [value]
    if not keys or not all(isinstance(key, _ASYMMETRIC) for key in keys):
        raise ValueError("public_key must hold asymmetric keys (RSA, EC or OKP), never a shared secret")
    return keys


class StaticKey:
    """Keys given in code: nothing to fetch, nothing to rotate but by restarting."""

    def __init__(self, keys: list[Key]) -> None:
        self.keys = keys

    async def key_for(self, kid: str | None, alg: str) -> Key:
        if len(self.keys) == 1 and _usable(self.keys[0], alg):
            return self.keys[0]  # one configured key: a kid, if any, is the issuer's label, not a choice
        key = _pick(self.keys, kid, alg)
        if key is None:
            raise KeyUnavailable(f"no configured key fits kid {kid!r} and alg {alg}")
        return key


class JWKSKeys:
    """A JWKS URL's keys, fetched on first use, kept `cache_ttl_s`, refetched for an unknown key id.

    `timeout_s` is the deadline of one fetch, whole (connecting, headers,
    body). Requests that need the set while a fetch is under way wait for
    that fetch, not for a lock, and no longer than its deadline: then they
    are refused (401), like the request that started it.
    """

    def __init__(
        self,
        uri: str,
        *,
        cache_ttl_s: float,
        refetch_interval_s: float,
        timeout_s: float,
        http_client: httpx.AsyncClient | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.uri = uri
        self.cache_ttl_s = cache_ttl_s
        self.refetch_interval_s = refetch_interval_s
        self.timeout_s = timeout_s
        self.http_client = http_client
        self.clock = clock
        self._keys: list[Key] = []
        self._picked: dict[tuple[str | None, str], Key] = {}  # _pick's answers for _keys (see key_for)
        self._fetched_at: float | None = None
        self._last_refetch: float | None = None  # of a fetch an unknown kid asked for
        self._failed_at: float | None = None
        self._inflight: anyio.Event | None = None  # set when the fetch under way ends, however it ends
        self._inflight_until = 0.0  # its deadline, on the event loop's clock

    def _fresh(self) -> bool:
        return self._fetched_at is not None and self.clock() - self._fetched_at < self.cache_ttl_s

    async def key_for(self, kid: str | None, alg: str) -> Key:
        if self._fresh():
            key = self._picked.get((kid, alg))
            if key is None:
                key = self._pick(kid, alg)
            if key is not None:
                return key  # a known key never waits for a fetch, however slow one is
        if self._inflight is not None:
            with anyio.move_on_at(self._inflight_until):  # concurrent requests share one fetch
                await self._inflight.wait()
        elif self._fresh() and not self._may_refetch():
            raise KeyUnavailable(f"no key in {self.uri} fits kid {kid!r} and alg {alg}")
        else:
            await self._fetch(refetch=self._fresh())
        key = self._pick(kid, alg) if self._fresh() else None
        if key is not None:
            return key
        if self._failed_at is not None or not self._fresh():
            raise KeyUnavailable(f"JWKS unavailable: no key from {self.uri} for kid {kid!r}")
        raise KeyUnavailable(f"no key in {self.uri} fits kid {kid!r} and alg {alg}")

    def _pick(self, kid: str | None, alg: str) -> Key | None:
        """`_pick` over the current keys, each key found remembered until the set is replaced.

        Every cached token asks for its key again on every request (so a key rotated out, or a
        JWKS past its TTL, stops it); the answer for one (kid, alg) only changes with the set.
        Only keys found are kept, at most a few per key in the set, so a token's made-up kid adds nothing.
        """
        key = _pick(self._keys, kid, alg)
        if key is not None and len(self._picked) < 4 * len(self._keys) + 4:
            self._picked[(kid, alg)] = key
        return key

    def _may_refetch(self) -> bool:
        last = self._last_refetch
        return last is None or self.clock() - last >= self.refetch_interval_s

    async def _fetch(self, *, refetch: bool) -> None:
        now = self.clock()
        if self._failed_at is not None and now - self._failed_at < min(self.refetch_interval_s, 5.0):
            raise KeyUnavailable(f"the JWKS at {self.uri} failed moments ago; not asking again yet")
        if refetch:
            self._last_refetch = now
        done = self._inflight = anyio.Event()
        self._inflight_until = anyio.current_time() + self.timeout_s
        try:
            document = await fetch_json(
                self.http_client,
                "GET",
                self.uri,
                limit=JWKS_LIMIT,
                timeout=self.timeout_s,
                headers={"accept": "application/json"},
            )
            keys = _parse_jwks(document)
            self._keys, self._fetched_at, self._failed_at = keys, self.clock(), None
            self._picked = {}
        except (Unreachable, ValueError) as exc:
            self._failed_at = self.clock()
            logger.error("JWKS unavailable, refusing tokens it would have to check: %s", exc)
            raise KeyUnavailable(f"JWKS unavailable: {exc}") from None
        finally:
            self._inflight = None
            done.set()
        logger.info("fetched %d signing key(s) from %s", len(keys), self.uri)


def _parse_jwks(document: Any) -> list[Key]:
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("the JWKS is not a JSON object with a 'keys' list")
    keys: list[Key] = []
    for entry in document["keys"]:
        if not isinstance(entry, dict):
            continue
        try:
            key = import_key(entry)  # type: ignore[call-overload]
        except (JoseError, ValueError, TypeError, KeyError):
            continue  # RFC 7517 §5: skip a key this implementation cannot use, keep the others
        if isinstance(key, _ASYMMETRIC) and not key.is_private:
            keys.append(key)
    if not keys:
        raise ValueError("the JWKS holds no usable public signing key")
    return keys
