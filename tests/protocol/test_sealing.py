"""requestState sealing: every way a token can be wrong must fail closed."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from mcp_resolve.errors import InvalidRequestState
from mcp_resolve.sealing import (
    CLOCK_SKEW,
    ENV_KEYS,
    AesGcmCodec,
    RequestStateSecurity,
    StateBinding,
    StateCodec,
    UnsealedState,
    digest_arguments,
)

KEY_A = "a" * 16 + "-operator-secret-A"
KEY_B = "b" * 16 + "-operator-secret-B"
KEY_C = b"\x00" * 31 + b"\x01"
HINT = "secrets.token_urlsafe"


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def b64d(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def make_binding(**overrides: Any) -> StateBinding:
    fields: dict[str, Any] = {
        "method": "tools/call",
        "target": "refund",
        "arguments_digest": digest_arguments({"order": 42}),
        "audience": "shop",
        "principal": "alice",
    }
    fields.update(overrides)
    return StateBinding(**fields)


@pytest.fixture(autouse=True)
def _no_env_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_KEYS, raising=False)


# ---- AesGcmCodec ---------------------------------------------------------------------------------


def test_codec_round_trip_and_is_a_state_codec() -> None:
    codec = AesGcmCodec([KEY_A])
    assert isinstance(codec, StateCodec)
    token = codec.seal(b"hello")
    assert codec.unseal(token) == b"hello"
    assert "=" not in token
    assert codec.seal(b"hello") != token  # random nonce


def test_codec_every_single_byte_flip_rejected() -> None:
    codec = AesGcmCodec([KEY_A])
    raw = b64d(codec.seal(b"payload bytes"))
    for index in range(len(raw)):
        for mask in (0x01, 0x80, 0xFF):
            flipped = bytearray(raw)
            flipped[index] ^= mask
            with pytest.raises(InvalidRequestState):
                codec.unseal(b64e(bytes(flipped)))


@pytest.mark.parametrize("size", [0, 1, 2])
def test_codec_truncation_and_extension_rejected(size: int) -> None:
    codec = AesGcmCodec([KEY_A])
    token = codec.seal(b"x" * size)
    raw = b64d(token)
    for cut in range(1, len(raw)):
        with pytest.raises(InvalidRequestState):
            codec.unseal(b64e(raw[:cut]))
    for cut in range(1, len(token)):
        with pytest.raises(InvalidRequestState):
            codec.unseal(token[:cut])
    with pytest.raises(InvalidRequestState):
        codec.unseal(b64e(raw + b"\x00"))
    with pytest.raises(InvalidRequestState):
        codec.unseal(token + "A")


@pytest.mark.parametrize("size", [0, 1, 2])
def test_codec_padding_and_alphabet_variants_rejected(size: int) -> None:
    codec = AesGcmCodec([KEY_A])
    token = codec.seal(b"y" * size)
    variants = [
        token + "=",
        token + "==",
        token + "===",
        token[:-1] + "=" + token[-1],
        token + "\n",
        " " + token,
        token.replace(token[5], "+", 1),
        token.replace(token[5], "/", 1),
        token[:10] + "." + token[10:],
        token[:10] + "\u00e9" + token[10:],
    ]
    std = base64.b64encode(b64d(token)).decode()
    if std != token:
        variants.append(std)
    for variant in variants:
        with pytest.raises(InvalidRequestState):
            codec.unseal(variant)


def test_codec_non_canonical_trailing_bits_rejected() -> None:
    """Unused low bits of the last character must not give a second spelling."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    codec = AesGcmCodec([KEY_A])
    seen_remainders: set[int] = set()
    for size in range(3):
        token = codec.seal(b"z" * size)
        remainder = len(token) % 4
        seen_remainders.add(remainder)
        if remainder == 0:
            continue  # every bit of the last character is significant
        unused_bits = 4 if remainder == 2 else 2
        last = alphabet.index(token[-1])
        for low in range(1, 1 << unused_bits):
            variant = token[:-1] + alphabet[last ^ low]
            assert b64d(variant) == b64d(token)  # a lenient decoder would accept it
            with pytest.raises(InvalidRequestState):
                codec.unseal(variant)
    assert seen_remainders == {0, 2, 3}


def test_codec_rejects_garbage() -> None:
    codec = AesGcmCodec([KEY_A])
    for token in ["", "A", "AAAA", "A" * 51, "_" * 64, b64e(b"\x02" + b"\x00" * 60)]:
        with pytest.raises(InvalidRequestState):
            codec.unseal(token)
    with pytest.raises(InvalidRequestState):
        codec.unseal(b"bytes-token")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestState, match="longer than"):
        codec.unseal("A" * ((1 << 20) + 4))


def test_codec_unknown_version_and_fingerprint_reasons() -> None:
    codec = AesGcmCodec([KEY_A])
    raw = bytearray(b64d(codec.seal(b"v")))
    raw[0] = 2
    with pytest.raises(InvalidRequestState, match="version"):
        codec.unseal(b64e(bytes(raw)))
    with pytest.raises(InvalidRequestState, match="key ring"):
        AesGcmCodec([KEY_B]).unseal(codec.seal(b"v"))


def test_rotation() -> None:
    old, new = AesGcmCodec([KEY_A]), AesGcmCodec([KEY_B])
    token = old.seal(b"rotating")
    assert AesGcmCodec([KEY_B, KEY_A]).unseal(token) == b"rotating"
    assert AesGcmCodec([KEY_A, KEY_B]).unseal(token) == b"rotating"
    with pytest.raises(InvalidRequestState):
        new.unseal(token)
    # keys[0] seals: after rotation, new tokens are readable by the new key alone.
    assert new.unseal(AesGcmCodec([KEY_B, KEY_A]).seal(b"fresh")) == b"fresh"


def test_str_and_bytes_secret_are_the_same_key() -> None:
    assert AesGcmCodec([KEY_A.encode()]).unseal(AesGcmCodec([KEY_A]).seal(b"s")) == b"s"
    assert AesGcmCodec([KEY_C, KEY_C]).unseal(AesGcmCodec([KEY_C]).seal(b"s")) == b"s"


@pytest.mark.parametrize("secret", ["x" * 31, b"x" * 31, "\u00e9" * 15, "", b""])
def test_short_secret_refused_with_hint(secret: str | bytes) -> None:
    with pytest.raises(ValueError, match="32 bytes") as info:
        AesGcmCodec([secret])
    assert HINT in str(info.value)
    if secret:
        assert str(secret) not in str(info.value)


def test_multibyte_str_secret_counts_bytes() -> None:
    AesGcmCodec(["\u00e9" * 16])  # 32 UTF-8 bytes


@pytest.mark.parametrize("secret", [12345, None, bytearray(b"x" * 40), ["x" * 40]])
def test_wrong_secret_type_refused_with_hint(secret: object) -> None:
    with pytest.raises(TypeError) as info:
        AesGcmCodec([secret])  # type: ignore[list-item]
    assert HINT in str(info.value)


def test_key_ring_shape_refused() -> None:
    with pytest.raises(TypeError, match=HINT):
        AesGcmCodec(KEY_A)  # a bare secret is not a list of secrets
    with pytest.raises(ValueError, match=HINT):
        AesGcmCodec([])


# ---- digest_arguments ----------------------------------------------------------------------------


def test_digest_arguments_canonical() -> None:
    assert digest_arguments(None) == digest_arguments({})
    assert digest_arguments({"a": 1, "b": [1, 2]}) == digest_arguments({"b": [1, 2], "a": 1})
    assert digest_arguments({"a": 1}) != digest_arguments({"a": 2})
    assert digest_arguments({"a": 1}) != digest_arguments({"a": "1"})
    assert digest_arguments({"s": "h\u00e9llo \ud83d"}) != digest_arguments({"s": "hello"})
    assert len(digest_arguments({"x": None})) == 64


# ---- RequestStateSecurity ------------------------------------------------------------------------


def make_security(**kw: Any) -> RequestStateSecurity:
    kw.setdefault("keys", [KEY_A])
    return RequestStateSecurity(**kw)


def test_round_trip() -> None:
    clock = Clock()
    security = make_security(clock=clock)
    token = security.seal(b"\x00\xffstate", make_binding())
    result = security.unseal(token, make_binding())
    assert isinstance(result, UnsealedState)
    assert result.payload == b"\x00\xffstate"
    assert result.expires_at == clock.now + 600.0
    assert len(result.state_id) == 32
    again = security.unseal(security.seal(b"", make_binding()), make_binding())
    assert again.payload == b"" and again.state_id != result.state_id


def test_security_byte_flips_rejected() -> None:
    security = make_security()
    raw = b64d(security.seal(b"p", make_binding()))
    for index in range(len(raw)):
        flipped = bytearray(raw)
        flipped[index] ^= 0x04
        with pytest.raises(InvalidRequestState):
            security.unseal(b64e(bytes(flipped)), make_binding())


@pytest.mark.parametrize(
    "change",
    [
        {"method": "prompts/get"},
        {"target": "refund2"},
        {"target": "Refund"},
        {"arguments_digest": digest_arguments({"order": 43})},
        {"arguments_digest": digest_arguments(None)},
        {"audience": "other-server"},
        {"principal": "mallory"},
        {"principal": None},
        {"principal": ""},
    ],
)
def test_binding_mismatch_rejected(change: dict[str, Any]) -> None:
    security = make_security()
    token = security.seal(b"p", make_binding())
    with pytest.raises(InvalidRequestState, match=r"mismatch|anonymously"):
        security.unseal(token, replace(make_binding(), **change))


def test_anonymous_state_presented_by_principal_rejected() -> None:
    security = make_security()
    token = security.seal(b"p", make_binding(principal=None))
    assert security.unseal(token, make_binding(principal=None)).payload == b"p"
    with pytest.raises(InvalidRequestState, match="anonymously"):
        security.unseal(token, make_binding(principal="alice"))


def test_bind_principal_off_ignores_principal_but_honours_old_stamps() -> None:
    loose = make_security(bind_principal=False)
    token = loose.seal(b"p", make_binding(principal="alice"))
    assert loose.unseal(token, make_binding(principal="bob")).payload == b"p"
    assert loose.unseal(token, make_binding(principal=None)).payload == b"p"
    stamped = make_security().seal(b"p", make_binding(principal="alice"))
    with pytest.raises(InvalidRequestState, match="principal"):
        loose.unseal(stamped, make_binding(principal="bob"))


class PlainCodec:
    """Unauthenticated codec: exposes the envelope so tests can forge its fields."""

    def seal(self, data: bytes) -> str:
        return b64e(data)

    def unseal(self, token: str) -> bytes:
        try:
            return b64d(token)
        except ValueError as exc:
            raise InvalidRequestState("bad") from exc


def envelope_of(token: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(b64d(token))
    return result


def test_principal_is_salted_not_exposed() -> None:
    security = make_security(codec=PlainCodec(), keys=None)
    first = envelope_of(security.seal(b"p", make_binding()))
    second = envelope_of(security.seal(b"p", make_binding()))
    assert "alice" not in json.dumps(first)
    assert first["pd"] != second["pd"] and first["ps"] != second["ps"]


def test_expiry_with_injected_clock() -> None:
    clock = Clock()
    security = make_security(clock=clock, ttl=60)
    token = security.seal(b"p", make_binding())
    clock.now += 59.999
    security.unseal(token, make_binding())
    clock.now += 0.001
    with pytest.raises(InvalidRequestState, match="expired"):
        security.unseal(token, make_binding())


def test_shorter_ttl_caps_outstanding_tokens() -> None:
    clock = Clock()
    token = make_security(clock=clock, ttl=600).seal(b"p", make_binding())
    strict = make_security(clock=clock, ttl=60)
    assert strict.unseal(token, make_binding()).expires_at == clock.now + 60
    clock.now += 61
    with pytest.raises(InvalidRequestState, match="expired"):
        strict.unseal(token, make_binding())


def test_future_issue_time() -> None:
    clock = Clock()
    issuer_clock = Clock(clock.now + CLOCK_SKEW - 1)
    token = make_security(clock=issuer_clock).seal(b"p", make_binding())
    make_security(clock=clock).unseal(token, make_binding())
    issuer_clock.now = clock.now + CLOCK_SKEW + 1
    token = make_security(clock=issuer_clock).seal(b"p", make_binding())
    with pytest.raises(InvalidRequestState, match="future"):
        make_security(clock=clock).unseal(token, make_binding())


@pytest.mark.parametrize(
    "mutate",
    [
        lambda env: env.update(v=2),
        lambda env: env.update(v=True),
        lambda env: env.pop("v"),
        lambda env: env.update(sid=""),
        lambda env: env.update(sid=7),
        lambda env: env.update(iat="now"),
        lambda env: env.update(exp=float("inf")),
        lambda env: env.update(exp=None),
        lambda env: env.pop("m"),
        lambda env: env.update(a=None),
        lambda env: env.update(p="not base64!"),
        lambda env: env.update(ps="zz"),
        lambda env: env.pop("ps"),
        lambda env: env.pop("pd"),
    ],
)
def test_malformed_envelope_rejected(mutate: Any) -> None:
    security = make_security(codec=PlainCodec(), keys=None)
    envelope = envelope_of(security.seal(b"p", make_binding()))
    mutate(envelope)
    with pytest.raises(InvalidRequestState):
        security.unseal(b64e(json.dumps(envelope).encode()), make_binding())


@pytest.mark.parametrize("data", [b"\xff\xfe", b"[1, 2]", b"null", b"{", b"[" * 100_000])
def test_non_envelope_bytes_rejected(data: bytes) -> None:
    security = make_security(codec=PlainCodec(), keys=None)
    with pytest.raises(InvalidRequestState, match="envelope"):
        security.unseal(b64e(data), make_binding())


@pytest.mark.parametrize("token", [None, 42, b"abc", ["x"], {"t": 1}])
def test_non_str_token(token: object) -> None:
    with pytest.raises(InvalidRequestState, match="not str"):
        make_security().unseal(token, make_binding())


def test_empty_token() -> None:
    with pytest.raises(InvalidRequestState, match="empty"):
        make_security().unseal("", make_binding())


def test_faulty_codec_fails_closed() -> None:
    class Exploding:
        def seal(self, data: bytes) -> str:
            return "t"

        def unseal(self, token: str) -> bytes:
            raise ValueError("secret-detail-from-codec")

    class WrongType(Exploding):
        def unseal(self, token: str) -> bytes:
            return "text"  # type: ignore[return-value]

    with pytest.raises(InvalidRequestState, match="ValueError") as info:
        make_security(codec=Exploding(), keys=None).unseal("t", make_binding())
    assert "secret-detail" not in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(InvalidRequestState, match="returned str"):
        make_security(codec=WrongType(), keys=None).unseal("t", make_binding())


def test_custom_codec_round_trip() -> None:
    security = make_security(codec=PlainCodec(), keys=None)
    assert security.unseal(security.seal(b"c", make_binding()), make_binding()).payload == b"c"


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="not both"):
        RequestStateSecurity(keys=[KEY_A], codec=PlainCodec())
    with pytest.raises(TypeError, match="codec"):
        RequestStateSecurity(codec=object())  # type: ignore[arg-type]
    for ttl in (0, -1, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="ttl"):
            RequestStateSecurity(keys=[KEY_A], ttl=ttl)
    with pytest.raises(ValueError, match=HINT):
        RequestStateSecurity(keys=["short"])
    with pytest.raises(TypeError):
        make_security().seal("text", make_binding())  # type: ignore[arg-type]


def test_payload_must_not_be_huge() -> None:
    with pytest.raises(ValueError, match="small"):
        make_security().seal(b"\x00" * (1 << 20), make_binding())


def test_audience_override() -> None:
    assert make_security().resolve_audience("shop") == "shop"
    security = make_security(audience="cluster")
    assert security.audience == "cluster"
    assert security.resolve_audience("shop") == "cluster"


def test_ephemeral_keys_are_per_instance() -> None:
    first, second = RequestStateSecurity.ephemeral(), RequestStateSecurity.ephemeral(ttl=5)
    assert first.is_ephemeral and second.is_ephemeral and second.ttl == 5
    token = first.seal(b"p", make_binding())
    assert first.unseal(token, make_binding()).payload == b"p"
    with pytest.raises(InvalidRequestState, match="key ring"):
        second.unseal(token, make_binding())
    assert not make_security().is_ephemeral


# ---- environment ---------------------------------------------------------------------------------


def test_no_keys_anywhere_refused() -> None:
    with pytest.raises(ValueError, match=r"ephemeral\(\)") as info:
        RequestStateSecurity()
    assert ENV_KEYS in str(info.value)


def test_env_keys_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_KEYS, f" {KEY_B} ,, {KEY_A},")
    security = RequestStateSecurity()
    assert not security.is_ephemeral
    token = security.seal(b"p", make_binding())
    assert make_security(keys=[KEY_B]).unseal(token, make_binding()).payload == b"p"
    old = make_security(keys=[KEY_A]).seal(b"o", make_binding())
    assert security.unseal(old, make_binding()).payload == b"o"


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    fallback = RequestStateSecurity.from_env(audience="x")
    assert fallback.is_ephemeral and fallback.audience == "x"
    monkeypatch.setenv(ENV_KEYS, KEY_A)
    one, two = RequestStateSecurity.from_env(), RequestStateSecurity.from_env()
    assert not one.is_ephemeral
    assert two.unseal(one.seal(b"shared", make_binding()), make_binding()).payload == b"shared"


@pytest.mark.parametrize("value", ["", " , ,"])
def test_env_set_but_empty_is_an_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV_KEYS, value)
    with pytest.raises(ValueError, match=HINT):
        RequestStateSecurity.from_env()
    with pytest.raises(ValueError, match=HINT):
        RequestStateSecurity()


def test_env_short_key_refused_without_echoing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_KEYS, f"{KEY_A},tooshort-secret")
    with pytest.raises(ValueError, match=HINT) as info:
        RequestStateSecurity.from_env()
    assert "tooshort-secret" not in str(info.value) and KEY_A not in str(info.value)
