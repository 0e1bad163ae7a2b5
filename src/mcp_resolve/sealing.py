"""Sealing and verifying `requestState` tokens.

`requestState` is attacker-controlled input, so what we put in it must come
back provably ours, fresh, and for the very request presenting it. Hence a
codec (AEAD by default, pluggable) that makes the bytes opaque and
tamper-evident, around an envelope pinning method, target, argument digest,
audience, principal and lifetime. Every failure raises `InvalidRequestState`
with a precise reason for the server log; clients see `INVALID_STATE_MESSAGE`.

Keys are passed in (`keys=`), or are the operator's: `MCP_RESOLVE_STATE_KEYS`,
which `mcp_resolve.settings` reads and checks. This module reads no environment.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from typing_extensions import Unpack

from ._state_keys import ENV_KEYS, GENERATE_HINT, MIN_SECRET_BYTES
from .errors import InvalidRequestState

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "CLOCK_SKEW",
    "DEFAULT_TTL",
    "ENV_KEYS",
    "MIN_SECRET_BYTES",
    "AesGcmCodec",
    "RequestStateSecurity",
    "SecurityOptions",
    "StateBinding",
    "StateCodec",
    "UnsealedState",
    "digest_arguments",
]

DEFAULT_TTL = 600.0
CLOCK_SKEW = 30.0  # tolerated lead of a token's issue time over our clock (other hosts)
MAX_TOKEN_CHARS = 1 << 20  # refuse absurd tokens before decoding, so a client cannot make us allocate

_TOKEN_VERSION = 1
_FINGERPRINT_LEN = 8
_NONCE_LEN = 12
_HEADER_LEN = 1 + _FINGERPRINT_LEN
_MIN_TOKEN_BYTES = _HEADER_LEN + _NONCE_LEN + 16  # + GCM tag
_HKDF_SALT = b"mcp-resolve/requestState/hkdf-salt/v1"
_HKDF_INFO = b"mcp-resolve/requestState/aes-256-gcm-key/v1"
_FINGERPRINT_DOMAIN = b"mcp-resolve/requestState/key-fingerprint/v1\x00"
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_ENVELOPE_VERSION = 1
_BOUND_FIELDS = (("method", "m"), ("target", "t"), ("arguments digest", "a"), ("audience", "aud"))
MAX_CARRY_CHARS = 256
"""The longest `carry` a state takes: a note for the next round (telemetry's), not a second payload."""


@runtime_checkable
class StateCodec(Protocol):
    """What a replacement for the AEAD layer (a KMS, a JWE library) must offer.

    `unseal` must authenticate what it returns and raise `InvalidRequestState`
    otherwise; other exceptions are rejections too, minus the precise reason.
    """

    def seal(self, data: bytes) -> str: ...

    def unseal(self, token: str) -> bytes: ...


def _b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64url_decode_strict(token: str) -> bytes:
    """Accept exactly one spelling per byte string.

    Lenient decoders ignore padding, stray characters and the last character's
    unused bits, which would let a client mint many texts for one sealed value.
    """
    if not _B64URL.fullmatch(token):
        raise InvalidRequestState("requestState has characters outside unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestState("requestState is not valid base64url") from exc
    if _b64url_encode(raw) != token:
        raise InvalidRequestState("requestState is a non-canonical base64url spelling")
    return raw


def _secret_bytes(secret: object, index: int) -> bytes:
    raw = secret.encode("utf-8") if isinstance(secret, str) else secret
    if not isinstance(raw, bytes):
        kind = type(secret).__name__
        raise TypeError(f"requestState key #{index} must be bytes or str, not {kind}; {GENERATE_HINT}")
    if len(raw) < MIN_SECRET_BYTES:
        raise ValueError(f"requestState key #{index} is under {MIN_SECRET_BYTES} bytes; {GENERATE_HINT}")
    return raw


def _derive_key(raw: bytes) -> tuple[bytes, AESGCM]:
    """HKDF so a passphrase-like secret still yields a uniform key, unrelated to other uses of it."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=_HKDF_INFO).derive(raw)
    return hashlib.sha256(_FINGERPRINT_DOMAIN + derived).digest()[:_FINGERPRINT_LEN], AESGCM(derived)


class AesGcmCodec:
    """AES-256-GCM over a key ring: `keys[0]` seals, every key unseals.

    Each token names its key by a fingerprint, so rotation (prepend the new
    secret, drop the old one a TTL later) costs a dict lookup rather than
    trial decryption. Nonces are random: rotate well before 2**32 seals.
    Keys are checked at construction but derived at first use, so a server
    that never seals a state never loads the crypto library (memory, start-up).
    """

    def __init__(self, keys: Sequence[bytes | str]) -> None:
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
            raise TypeError(f"keys must be a list of secrets, e.g. [secret]; {GENERATE_HINT}")
        if not keys:
            raise ValueError(f"at least one requestState key is required; {GENERATE_HINT}")
        self._secrets = [_secret_bytes(secret, index) for index, secret in enumerate(keys)]
        self._ring: dict[bytes, AESGCM] = {}
        self._header = b""
        self._sealer: AESGCM | None = None

    def _derived(self) -> AESGCM:
        """The sealing key, deriving the whole ring on first use."""
        if self._sealer is None:
            ring = [_derive_key(raw) for raw in self._secrets]
            self._ring = dict(ring)
            self._header = bytes([_TOKEN_VERSION]) + ring[0][0]
            self._sealer = ring[0][1]
        return self._sealer

    def seal(self, data: bytes) -> str:
        sealer = self._derived()
        nonce = secrets.token_bytes(_NONCE_LEN)
        sealed = sealer.encrypt(nonce, bytes(data), self._header)
        token = _b64url_encode(self._header + nonce + sealed)
        if len(token) > MAX_TOKEN_CHARS:
            raise ValueError(f"requestState would exceed {MAX_TOKEN_CHARS} characters; keep the state small")
        return token

    def unseal(self, token: str) -> bytes:
        from cryptography.exceptions import InvalidTag

        if not isinstance(token, str):
            raise InvalidRequestState(f"requestState is {type(token).__name__}, not str")
        if len(token) > MAX_TOKEN_CHARS:
            raise InvalidRequestState(f"requestState is longer than {MAX_TOKEN_CHARS} characters")
        raw = _b64url_decode_strict(token)
        if len(raw) < _MIN_TOKEN_BYTES:
            raise InvalidRequestState("requestState is too short to be a sealed token")
        if raw[0] != _TOKEN_VERSION:
            raise InvalidRequestState(f"requestState token version {raw[0]} is unknown")
        header = raw[:_HEADER_LEN]
        self._derived()
        aead = self._ring.get(header[1:])
        if aead is None:
            raise InvalidRequestState("requestState was sealed with a key not in the key ring")
        nonce = raw[_HEADER_LEN : _HEADER_LEN + _NONCE_LEN]
        try:
            return aead.decrypt(nonce, raw[_HEADER_LEN + _NONCE_LEN :], header)
        except InvalidTag as exc:
            raise InvalidRequestState("requestState failed authentication (tampered or forged)") from exc


@dataclass(frozen=True)
class StateBinding:
    """The request a token must come back on: no replay on another tool, arguments, server or user."""

    method: str
    target: str
    arguments_digest: str
    audience: str
    principal: str | None = None


@dataclass(frozen=True)
class UnsealedState:
    """A verified payload plus what a replay store needs to consume it once."""

    payload: bytes
    state_id: str
    expires_at: float
    carried: str | None = None
    """The `carry` it was sealed with (the first round's trace context, when telemetry is on)."""


def digest_arguments(arguments: Mapping[str, Any] | None) -> str:
    """Hash arguments canonically, so key order or escaping cannot change the binding."""
    canonical = json.dumps(dict(arguments or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _same(left: str, right: str) -> bool:
    return hmac.compare_digest(_utf8(left), _utf8(right))


def _principal_digest(salt: bytes, principal: str) -> str:
    return hashlib.sha256(salt + _utf8(principal)).hexdigest()


def _operator_keys() -> list[str] | None:
    """The operator's key ring, as `mcp_resolve.settings` reads it (`MCP_RESOLVE_STATE_KEYS`); None when unset.

    Sealing reads no environment itself: the settings read it, check it and report a bad value
    (set but empty, or a key under 32 bytes, is `InvalidSetting`, a ValueError, never repeating a
    key). Imported here, not at the top: the settings model loads pydantic-settings, which a
    server given its keys, or configured by nothing, never needs.
    """
    from .settings import operator_state_keys

    return operator_state_keys()


class SecurityOptions(TypedDict, total=False):
    """The keyword options `ephemeral()` and `from_env()` pass through to the constructor."""

    ttl: float
    bind_principal: bool | Callable[..., str | None] | None
    audience: str | None
    clock: Callable[[], float]


def _binds_principal(bind_principal: object) -> bool:
    """`bind_principal` as a flag; the official SDK's spellings (`authenticated_principal`, None) too.

    The principal itself comes from the transport (the verified token's, or the
    HTTP app's `principal=` function), so a function other than
    `authenticated_principal` cannot be honoured here and is refused rather
    than silently treated as True.
    """
    if bind_principal is None or isinstance(bind_principal, bool):
        return bool(bind_principal)
    # Not at the top: `_principal` stands on the Context, a layer above sealing (it imports nothing of it).
    from ._principal import authenticated_principal

    if bind_principal is authenticated_principal:
        return True
    raise TypeError(
        "bind_principal takes True, False, None or mcp_resolve.authenticated_principal; to bind "
        "requestState to another identity, give the HTTP app a principal function: "
        "mcp.streamable_http_app(principal=lambda request: ...)"
    )


def _field(envelope: Mapping[str, Any], name: str, kind: type) -> Any:
    value = envelope.get(name)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidRequestState(f"requestState envelope field {name!r} is not a finite number")
        return float(value)
    if not isinstance(value, kind):
        raise InvalidRequestState(f"requestState envelope field {name!r} is missing or not {kind.__name__}")
    return value


class RequestStateSecurity:
    """Issue and verify request-bound, expiring `requestState` tokens.

    Built once per server. Defaults fail safe: without keys you must opt in
    to `ephemeral()` (tokens die with the process and are not shared between
    workers) rather than silently getting it, because a multi-worker
    deployment with per-process keys rejects most retries.
    """

    def __init__(
        self,
        *,
        keys: Sequence[bytes | str] | None = None,
        codec: StateCodec | None = None,
        ttl: float = DEFAULT_TTL,
        bind_principal: bool | Callable[..., str | None] | None = True,
        audience: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if keys is not None and codec is not None:
            raise ValueError("pass either keys or codec to RequestStateSecurity, not both")
        if codec is not None:
            if not isinstance(codec, StateCodec):
                raise TypeError("codec must provide seal(bytes) -> str and unseal(str) -> bytes")
            self._codec: StateCodec = codec
        else:
            if keys is None:
                keys = _operator_keys()
            if keys is None:
                hint = f"pass keys=[...], set {ENV_KEYS} (comma-separated), or use"
                raise ValueError(f"{hint} RequestStateSecurity.ephemeral() for one process; {GENERATE_HINT}")
            self._codec = AesGcmCodec(keys)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
            raise ValueError("ttl must be a positive, finite number of seconds")
        self._ttl = float(ttl)
        self._bind_principal = _binds_principal(bind_principal)
        self._audience = audience
        self._clock = clock
        self._ephemeral = False

    @classmethod
    def ephemeral(cls, **options: Unpack[SecurityOptions]) -> RequestStateSecurity:
        """A random per-process key: fine for one process, breaks across workers and restarts."""
        security = cls(keys=[secrets.token_bytes(32)], **options)
        security._ephemeral = True
        return security

    @classmethod
    def from_env(cls, **options: Unpack[SecurityOptions]) -> RequestStateSecurity:
        """Operator keys when configured (`MCP_RESOLVE_STATE_KEYS`), else ephemeral: the zero-config default."""
        return cls.from_keys(_operator_keys(), **options)

    @classmethod
    def from_keys(
        cls, keys: Sequence[bytes | str] | None, **options: Unpack[SecurityOptions]
    ) -> RequestStateSecurity:
        """`keys` when there are some, else ephemeral (what `from_env` does with the keys it read)."""
        return cls.ephemeral(**options) if keys is None else cls(keys=keys, **options)

    @property
    def is_ephemeral(self) -> bool:
        return self._ephemeral

    @property
    def ttl(self) -> float:
        return self._ttl

    @property
    def audience(self) -> str | None:
        return self._audience

    def resolve_audience(self, server_name: str) -> str:
        """The audience to bind: an explicit override lets several servers share one identity."""
        return server_name if self._audience is None else self._audience

    def seal(self, payload: bytes, binding: StateBinding, *, carry: str | None = None) -> str:
        """Seal `payload` for the request `binding` describes.

        `carry` is a short note the server passes to its own next round beside
        the payload (telemetry links a call's rounds with it): sealed like the
        rest, so a client can neither read it nor forge it.
        """
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"requestState payload must be bytes, not {type(payload).__name__}")
        if carry is not None and (not isinstance(carry, str) or len(carry) > MAX_CARRY_CHARS):
            raise ValueError(f"carry must be a string of at most {MAX_CARRY_CHARS} characters")
        now = float(self._clock())
        envelope = dict(v=_ENVELOPE_VERSION, sid=secrets.token_hex(16), iat=now, exp=now + self._ttl)
        envelope.update(m=binding.method, t=binding.target, a=binding.arguments_digest, aud=binding.audience)
        if self._bind_principal and binding.principal is not None:
            # Salted: a sign-only codec must neither reveal the user nor link two tokens to one user.
            salt = secrets.token_bytes(16)
            envelope["ps"] = salt.hex()
            envelope["pd"] = _principal_digest(salt, binding.principal)
        if carry is not None:
            envelope["c"] = carry
        envelope["p"] = base64.b64encode(bytes(payload)).decode("ascii")
        data = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
        return self._codec.seal(_utf8(data))

    def unseal(self, token: object, binding: StateBinding) -> UnsealedState:
        if not isinstance(token, str):
            raise InvalidRequestState(f"requestState is {type(token).__name__}, not str")
        if not token:
            raise InvalidRequestState("requestState is empty")
        try:
            data = self._codec.unseal(token)
        except InvalidRequestState:
            raise
        except Exception as exc:  # fail closed on any codec fault, but keep secrets out of the message
            raise InvalidRequestState(f"requestState codec raised {type(exc).__name__}") from exc
        if not isinstance(data, bytes):
            raise InvalidRequestState(f"requestState codec returned {type(data).__name__}, not bytes")
        envelope = self._parse_envelope(data)
        expires_at = self._check_time(envelope)
        self._check_binding(envelope, binding)
        try:
            payload = base64.b64decode(_field(envelope, "p", str), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequestState("requestState payload is not valid base64") from exc
        carried = envelope.get("c")
        if not isinstance(carried, str) or len(carried) > MAX_CARRY_CHARS:
            carried = None  # a note, not a binding: one we cannot read is dropped, never a rejection
        return UnsealedState(
            payload=payload, state_id=envelope["sid"], expires_at=expires_at, carried=carried
        )

    @staticmethod
    def _parse_envelope(data: bytes) -> dict[str, Any]:
        try:
            envelope = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise InvalidRequestState("requestState envelope is not valid JSON") from exc
        if not isinstance(envelope, dict):
            raise InvalidRequestState("requestState envelope is not a JSON object")
        version = envelope.get("v")
        if isinstance(version, bool) or version != _ENVELOPE_VERSION:
            raise InvalidRequestState(f"requestState envelope version {version!r} is unsupported")
        if not _field(envelope, "sid", str):
            raise InvalidRequestState("requestState envelope has an empty state id")
        return envelope

    def _check_time(self, envelope: Mapping[str, Any]) -> float:
        now = float(self._clock())
        iat, exp = _field(envelope, "iat", float), _field(envelope, "exp", float)
        if iat > now + CLOCK_SKEW:
            raise InvalidRequestState(f"requestState issued {iat - now:.1f}s in the future")
        # The current TTL also caps old tokens, so shortening it takes effect at once.
        deadline = min(exp, iat + self._ttl)
        if now >= deadline:
            raise InvalidRequestState("requestState has expired")
        return deadline

    def _check_binding(self, envelope: Mapping[str, Any], binding: StateBinding) -> None:
        presented_fields = (binding.method, binding.target, binding.arguments_digest, binding.audience)
        for (label, key), presented in zip(_BOUND_FIELDS, presented_fields, strict=True):
            sealed = _field(envelope, key, str)
            if not _same(sealed, presented):
                raise InvalidRequestState(
                    f"requestState {label} mismatch: sealed for {sealed!r}, presented with {presented!r}"
                )
        self._check_principal(envelope, binding.principal)

    def _check_principal(self, envelope: Mapping[str, Any], principal: str | None) -> None:
        """Honour a principal stamp even if binding is now off: the issuer asked for it."""
        if "pd" not in envelope and "ps" not in envelope:
            if self._bind_principal and principal is not None:
                raise InvalidRequestState("requestState was issued anonymously but presented by a principal")
            return
        if principal is None:
            raise InvalidRequestState("requestState is bound to a principal but presented anonymously")
        try:
            salt = bytes.fromhex(_field(envelope, "ps", str))
        except ValueError as exc:
            raise InvalidRequestState("requestState principal salt is malformed") from exc
        if not _same(_field(envelope, "pd", str), _principal_digest(salt, principal)):
            raise InvalidRequestState("requestState principal mismatch")
