"""DPoP proofs, server side (RFC 9449 §4.3, §7, §9): is the caller the holder of the token's key?

A token bound to a key (`cnf.jkt`) comes with a proof: a JWT signed by that
key, made for this very request. Everything in it is checked before the
request is let through, and refused as `invalid_dpop_proof` otherwise:

* the header: `typ: dpop+jwt`, an asymmetric `alg` this server accepts
  (`none` and HMAC never), a public `jwk` (a private member is refused);
* the signature, by that key (joserfc's JOSE, as for access tokens);
* the claims: `htm` the request's method, `htu` its URL (no query or
  fragment), `iat` recent (`proof_max_age_s`, with 30 s for clocks ahead),
  `ath` the hash of the access token presented with it;
* the key: its thumbprint (RFC 7638) is the token's `cnf.jkt`;
* with nonces on, `nonce` one this server made lately (else `use_dpop_nonce`);
* last, the `jti` is claimed in the server's replay store (memory, SQLite or
  Redis, so a whole fleet refuses a proof seen once) until the proof is too
  old to be accepted anyway. A store that cannot answer refuses the request.

Sizes are bounded before anything is parsed. Nonces need no state: one is
an HMAC of the current period under the server's secret, so every worker
with the same secret makes and accepts the same ones.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey
from joserfc.jws import JWSRegistry

from .._resource_urls import canonical_url
from .jwt import jose_header
from .tokens import DEFAULT_LEEWAY_S

if TYPE_CHECKING:
    from ..replay import ReplayStore
    from .tokens import DPoPOptions

__all__ = ["MAX_PROOF_BYTES", "DPoPProofs", "ProofRefused", "access_token_hash"]

logger = logging.getLogger("mcp_resolve.auth")

MAX_PROOF_BYTES = 8 * 1024
"""A longer DPoP header is refused unread (an RSA-4096 proof is about 1.5 KB)."""
MAX_JTI_CHARS = 256
MAX_CACHED_KEYS = 1024
_RSA_MODULUS_CHARS = (342, 683)
"""The base64url length of a 2048-bit to 4096-bit modulus: RSA keys outside it (slow to check, or weak)
are refused before they are imported."""
_COMPACT_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_KEY_TYPES: dict[str, Any] = {"EC": ECKey, "RSA": RSAKey, "OKP": OKPKey}


class ProofRefused(Exception):
    """Why a proof was refused: `error` is the challenge's code, the message is for the log only."""

    def __init__(self, error: str, reason: str) -> None:
        super().__init__(reason)
        self.error = error


@dataclass(frozen=True)
class CheckedProof:
    jti: str
    iat: float


def access_token_hash(access_token: str) -> str:
    """`ath`: base64url (no padding) of the SHA-256 of the token (RFC 9449 §4.2)."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class _ClaimsOnly(jwt.JWTClaimsRegistry):
    """joserfc's claim registry without its clock: `iat` is checked here, against the proof window."""

    def validate_exp(self, value: object) -> None:
        pass

    def validate_nbf(self, value: object) -> None:
        pass

    def validate_iat(self, value: object) -> None:
        pass


class DPoPProofs:
    """Checks the DPoP proofs of one protected server, and makes its nonces."""

    def __init__(self, options: DPoPOptions, replay_store: ReplayStore) -> None:
        self.options = options
        self.replay_store = replay_store
        secret = options.nonce_secret
        if options.nonces and secret is None:
            logger.info("DPoP nonces use a per-process secret: give DPoPOptions(nonce_secret=...) to a fleet")
        self._secret = (secret or secrets.token_urlsafe(32)).encode()
        self._registries = {alg: _registry(alg) for alg in options.algorithms}
        self._keys: OrderedDict[str, tuple[Any, str]] = OrderedDict()
        """Public keys already imported, with their thumbprints, by their JWK: a client signs many proofs
        with one key (bounded, least recently used first out)."""

    @property
    def algs(self) -> str:
        """The `algs` parameter of a DPoP challenge."""
        return " ".join(self.options.algorithms)

    # -- nonces ------------------------------------------------------------------------------
    def _nonce_at(self, period: int) -> str:
        mac = hmac.new(self._secret, b"mcp-resolve dpop nonce " + str(period).encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()[:18]).decode("ascii")

    def _period(self, now: float) -> int:
        return math.floor(now / self.options.nonce_lifetime_s)

    def nonce(self, now: float | None = None) -> str:
        """The nonce to hand out now (the same in every worker sharing the secret)."""
        return self._nonce_at(self._period(time.time() if now is None else now))

    def nonce_ok(self, nonce: object, now: float | None = None) -> bool:
        """Whether `nonce` is this period's or the previous one's."""
        if not isinstance(nonce, str) or len(nonce) > 64:
            return False
        period = self._period(time.time() if now is None else now)
        return any(hmac.compare_digest(nonce, self._nonce_at(p)) for p in (period, period - 1))

    # -- proofs ------------------------------------------------------------------------------
    async def check(
        self, proofs: Sequence[bytes], *, method: str, urls: Sequence[str], access_token: str, jkt: str
    ) -> None:
        """Return when `proofs` hold exactly one valid, unreplayed proof for this request; else raise
        `ProofRefused` (or the replay store's own error, which must refuse the request too)."""
        if len(proofs) != 1:
            raise ProofRefused("invalid_dpop_proof", "not exactly one DPoP header")
        raw = proofs[0]
        if len(raw) > MAX_PROOF_BYTES:
            raise ProofRefused("invalid_dpop_proof", f"DPoP header over {MAX_PROOF_BYTES} bytes")
        try:
            proof = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise ProofRefused("invalid_dpop_proof", "DPoP header is not ASCII") from None
        try:
            checked = self._verify(proof, method, urls, access_token, jkt)
        except ProofRefused:
            raise
        except Exception as exc:  # a proof that breaks a parser is still just a refused proof, never a 5xx
            raise ProofRefused(
                "invalid_dpop_proof", f"it could not be checked ({type(exc).__name__})"
            ) from None
        expires_at = checked.iat + self.options.proof_max_age_s + DEFAULT_LEEWAY_S + 1
        digest = hashlib.sha256(f"{jkt} {checked.jti}".encode()).hexdigest()
        if not await self.replay_store.claim(f"dpop:{digest}", expires_at):
            raise ProofRefused("invalid_dpop_proof", "proof replayed (its jti was seen before)")

    def _verify(
        self, proof: str, method: str, urls: Sequence[str], access_token: str, jkt: str
    ) -> CheckedProof:
        if not _COMPACT_JWS.fullmatch(proof):
            raise ProofRefused("invalid_dpop_proof", "not a compact JWS")
        header = jose_header(proof)
        if header is None:
            raise ProofRefused("invalid_dpop_proof", "malformed header")
        if header.get("typ") != "dpop+jwt":
            raise ProofRefused("invalid_dpop_proof", "typ is not dpop+jwt")
        alg = header.get("alg")
        registry = self._registries.get(alg) if isinstance(alg, str) else None
        if registry is None:
            raise ProofRefused("invalid_dpop_proof", f"algorithm {str(alg)[:20]!r} is not accepted")
        key, thumbprint = self._key(header.get("jwk"))
        if not hmac.compare_digest(thumbprint, jkt):  # before the signature: a stranger's key costs no check
            raise ProofRefused("invalid_dpop_proof", "the proof's key is not the one the token is bound to")
        try:
            claims = jwt.decode(proof, key, algorithms=[str(alg)], registry=registry).claims
            _ClaimsOnly().validate(claims)
        except JoseError as exc:
            raise ProofRefused("invalid_dpop_proof", f"bad signature or structure ({exc.error})") from None
        except ValueError:
            raise ProofRefused("invalid_dpop_proof", "bad signature or structure") from None
        jti = claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= MAX_JTI_CHARS:
            raise ProofRefused("invalid_dpop_proof", "missing or oversized jti")
        if claims.get("htm") != method:
            raise ProofRefused("invalid_dpop_proof", "htm is not the request's method")
        if not _same_url(claims.get("htu"), urls):
            raise ProofRefused("invalid_dpop_proof", "htu is not this request's URL")
        iat = claims.get("iat")
        now = time.time()
        if isinstance(iat, bool) or not isinstance(iat, (int, float)) or not math.isfinite(iat):
            raise ProofRefused("invalid_dpop_proof", "missing or malformed iat")
        if iat < now - self.options.proof_max_age_s or iat > now + DEFAULT_LEEWAY_S:
            raise ProofRefused("invalid_dpop_proof", "iat outside the accepted window")
        ath = claims.get("ath")
        if not isinstance(ath, str) or not hmac.compare_digest(ath, access_token_hash(access_token)):
            raise ProofRefused("invalid_dpop_proof", "ath is not the hash of the presented access token")
        if self.options.nonces and not self.nonce_ok(claims.get("nonce"), now):
            raise ProofRefused("use_dpop_nonce", "the proof lacks a current nonce of this server")
        return CheckedProof(jti, float(iat))

    def _key(self, jwk: Any) -> tuple[Any, str]:
        """The proof's public key and its thumbprint (RFC 7638), imported once per key."""
        if not isinstance(jwk, dict) or len(jwk) > 16:
            raise ProofRefused("invalid_dpop_proof", "missing or malformed jwk header")
        try:
            cache_key = json.dumps(jwk, sort_keys=True)
        except (TypeError, ValueError):
            raise ProofRefused("invalid_dpop_proof", "missing or malformed jwk header") from None
        found = self._keys.get(cache_key)
        if found is not None:
            self._keys.move_to_end(cache_key)
            return found
        key = _public_key(jwk)
        found = (key, key.thumbprint())
        self._keys[cache_key] = found
        if len(self._keys) > MAX_CACHED_KEYS:
            self._keys.popitem(last=False)
        return found


def _registry(alg: str) -> JWSRegistry:
    """joserfc's checks for one algorithm, with room for an RSA-4096 key in the header (its default
    header bound, 512 bytes, fits only EC and OKP keys; the whole proof is bounded before this)."""
    registry = JWSRegistry(algorithms=[alg], strict_check_header=False)
    registry.max_header_length = 2048
    registry.max_payload_length = 4096
    return registry


def _public_key(jwk: Any) -> Any:
    """The proof's own public key (its `jwk` header), refused when it is anything else."""
    if not isinstance(jwk, dict) or len(jwk) > 16:
        raise ProofRefused("invalid_dpop_proof", "missing or malformed jwk header")
    if _PRIVATE_MEMBERS & set(jwk):
        raise ProofRefused("invalid_dpop_proof", "the jwk header holds a private key")
    kind = _KEY_TYPES.get(str(jwk.get("kty")))  # "oct" (an HMAC key) is no kind of key here
    if kind is None:
        raise ProofRefused("invalid_dpop_proof", "the jwk header is not an asymmetric public key")
    if kind is RSAKey and not (
        _RSA_MODULUS_CHARS[0] <= len(str(jwk.get("n", ""))) <= _RSA_MODULUS_CHARS[1]
        and len(str(jwk.get("e", ""))) <= 8
    ):
        raise ProofRefused("invalid_dpop_proof", "an RSA key outside 2048-4096 bits, or a huge exponent")
    try:
        return kind.import_key(jwk)
    except Exception:  # joserfc raises several types for a malformed key
        raise ProofRefused("invalid_dpop_proof", "the jwk header is not a usable key") from None


def _same_url(htu: object, urls: Sequence[str]) -> bool:
    """Whether `htu` names one of `urls` (normalised as resource URLs are; never with a query)."""
    if not isinstance(htu, str) or len(htu) > 2048 or "?" in htu or "#" in htu:
        return False
    theirs = canonical_url(htu)
    return theirs is not None and any(canonical_url(url) == theirs for url in urls)
