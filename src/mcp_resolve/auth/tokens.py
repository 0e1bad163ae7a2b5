"""What a protected server knows about a caller, and how it is configured to learn it.

`AccessToken`, `TokenVerifier` and `AuthSettings` carry the official SDK's
field names, so a resource server written for it ports by changing imports.
Nothing here speaks HTTP or JOSE: the transport calls a verifier and hands the
`AccessToken` to the request; verifiers live in their own modules, loaded only
by servers that use them. The rules they share live here, once: a token's
lifetime with clock skew (`lifetime_refusal`) and whether a resource URL is
this server's (`same_resource`).
"""

from __future__ import annotations

import copy
import ipaddress
import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._resource_urls import canonical_url, is_web_url

__all__ = [
    "DEFAULT_LEEWAY_S",
    "AccessToken",
    "AuthSettings",
    "ClientRegistrationOptions",
    "DPoPOptions",
    "RevocationOptions",
    "TokenVerifier",
    "check_leeway",
    "check_protection",
    "check_scope",
    "expand_scopes",
    "lifetime_refusal",
    "matching_audience",
    "principal_of",
    "request_copy",
    "same_resource",
]

_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 6749 scope-token: printable ASCII without space, quote or backslash (so it is safe in a header)."""


class AccessToken(BaseModel):
    """A bearer token a verifier accepted, and what it says about the caller.

    `token` is the raw credential: it never appears in `repr` (so a log line
    that prints the object leaks nothing), and a tool must not forward it to
    another service (the spec forbids token passthrough; get a token of your own).
    Frozen, so one resolver cannot widen the scopes another one checks. `claims`
    is a plain dict, as in the official SDK; the transport hands each request a
    copy of its own (`request_copy`), so what one request changes in it no
    other request sees, even when the verifier remembered the token.
    """

    model_config = ConfigDict(frozen=True)

    token: str = Field(repr=False)
    client_id: str
    scopes: tuple[str, ...] = ()
    expires_at: int | None = None
    """Seconds since the epoch (`exp`); None if the token does not say."""
    resource: str | None = None
    """The RFC 8707 resource the token was issued for (its matching `aud`), or None."""
    subject: str | None = None
    """`sub`: the resource owner, unique only within its issuer."""
    claims: dict[str, Any] | None = None
    """Every claim the verifier read (JWT claims, or the introspection response)."""

    @property
    def issuer(self) -> str | None:
        issuer = (self.claims or {}).get("iss")
        return issuer if isinstance(issuer, str) else None

    @property
    def dpop_jkt(self) -> str | None:
        """The thumbprint of the key the token is bound to (`cnf.jkt`, RFC 9449 §6), or None if unbound."""
        confirmation = (self.claims or {}).get("cnf")
        jkt = confirmation.get("jkt") if isinstance(confirmation, dict) else None
        return jkt if isinstance(jkt, str) else None


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


def _own(value: Any) -> Any:
    """A copy of a claim sharing nothing mutable with `value`: JSON's dicts and lists copied, its
    scalars kept, anything else a verifier put there deep-copied where it can be (else shared)."""
    kind = type(value)
    if kind is dict:
        copied = value.copy()  # then only the values that are containers: most claims are strings and numbers
        for key, item in copied.items():
            if type(item) not in _IMMUTABLE:
                copied[key] = _own(item)
        return copied
    if kind is list:
        return [item if type(item) in _IMMUTABLE else _own(item) for item in value]
    if kind in _IMMUTABLE:
        return value
    try:
        return copy.deepcopy(value)
    except RecursionError:
        raise
    except Exception:
        # A lock, a client handle: the verifier's own object, which cannot be copied, shared as given.
        return value


def request_copy(token: AccessToken, **update: Any) -> AccessToken:
    """`token` for one request: its claims copied (nested dicts and lists too), `update` applied.

    Verifiers remember what they accepted and return the same `AccessToken` for
    the same token (`JWTVerifier`, `IntrospectionVerifier`, a provider that keeps
    its tokens in a dict). Every other field is immutable, but `claims` is a
    dict a tool or a middleware may change; on the remembered object that
    change would reach the next request carrying the token. A few microseconds
    for a token's usual dozen claims. Claims nested deeper than the interpreter
    recurses raise RecursionError (the caller refuses such a token).
    """
    if token.claims is not None:
        update["claims"] = _own(token.claims)
    return token.model_copy(update=update) if update else token


@runtime_checkable
class TokenVerifier(Protocol):
    """Turns a bearer token into an `AccessToken`, or None when it must be refused.

    Return None for anything that is not a valid token for this server:
    expired, another audience, unknown signer, an authorization server that
    cannot be reached. A verifier that raises is treated the same way (401).
    """

    async def verify_token(self, token: str) -> AccessToken | None: ...


def _check_url(value: str, what: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError(f"{what} must be an absolute http(s) URL, got {value!r}")
    if parts.fragment or "#" in value:
        raise ValueError(f"{what} must not have a fragment, got {value!r}")
    if "@" in parts.netloc:
        raise ValueError(f"{what} must not carry a user name or password (userinfo)")
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ValueError(
            f"{what} must use https (plain http only on loopback, for development), got {value!r}"
        )
    return value


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_scope(scope: str) -> str:
    """A scope as RFC 6749 writes it; anything else (a space, a quote) is a configuration error."""
    if not isinstance(scope, str) or not _SCOPE_TOKEN.fullmatch(scope):
        raise ValueError(
            f"{scope!r} is not a valid OAuth scope (printable ASCII, no spaces, quotes or backslashes)"
        )
    return scope


class ClientRegistrationOptions(BaseModel):
    """Dynamic client registration (RFC 7591) at `/register` of a server with `auth_server_provider`: off unless enabled.

    The official SDK's names. `client_secret_expiry_seconds`: how long a
    confidential client's secret works (None: for ever). `valid_scopes`: the
    scopes a client may register (None: any); they are also what the
    authorization server metadata lists as `scopes_supported`.
    `default_scopes`: what a client that registers none gets.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    client_secret_expiry_seconds: int | None = None
    valid_scopes: list[str] | None = None
    default_scopes: list[str] | None = None

    @field_validator("valid_scopes", "default_scopes")
    @classmethod
    def _scopes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [check_scope(s) for s in value]

    @field_validator("client_secret_expiry_seconds")
    @classmethod
    def _expiry(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError("client_secret_expiry_seconds must be a positive number of seconds, or None")
        return value


class RevocationOptions(BaseModel):
    """Token revocation (RFC 7009) at `/revoke` of a server with `auth_server_provider`: off unless enabled."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False


DPOP_ALGORITHMS = ("ES256", "ES384", "ES512", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512", "Ed25519")
"""The DPoP proof algorithms a protected server accepts by default: asymmetric signatures only."""
_DPOP_ALLOWED = frozenset({*DPOP_ALGORITHMS, "EdDSA"})


class DPoPOptions(BaseModel):
    """How a protected server treats DPoP (RFC 9449): sender-constrained tokens a thief cannot use.

    A token bound to a key (`cnf.jkt`) is accepted only as `Authorization:
    DPoP` with a valid proof of that key for this very request, whatever
    these options say; presented as Bearer it is refused. `required`: every
    request must use DPoP (bearer tokens are refused). `algorithms`: the proof
    signatures accepted (asymmetric only). `proof_max_age_s`: how old a
    proof's `iat` may be (proof ids are remembered that long, in the server's
    replay store). `nonces`: demand a nonce of this server's making in every
    proof (`use_dpop_nonce`); it changes every `nonce_lifetime_s` and the
    previous one stays good for one more period. Nonces are an HMAC of the
    period under `nonce_secret`, so every worker of a fleet given the same
    secret agrees without sharing state (without one, each process makes
    its own: one worker only).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    required: bool = False
    algorithms: tuple[str, ...] = DPOP_ALGORITHMS
    proof_max_age_s: float = 300.0
    nonces: bool = False
    nonce_lifetime_s: float = 300.0
    nonce_secret: str | None = Field(default=None, repr=False)

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        refused = [alg for alg in value if alg not in _DPOP_ALLOWED]
        if refused or not value:
            raise ValueError(
                f"DPoP proofs must be signed with asymmetric algorithms ({', '.join(sorted(_DPOP_ALLOWED))}), "
                f"not {', '.join(refused) or 'none at all'}"
            )
        return value

    @field_validator("proof_max_age_s", "nonce_lifetime_s")
    @classmethod
    def _seconds(cls, value: float) -> float:
        if not 1 <= value <= 3600:
            raise ValueError("must be between 1 and 3600 seconds")
        return value

    @field_validator("nonce_secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is not None and len(value.encode()) < 32:
            raise ValueError("nonce_secret must be at least 32 bytes (secrets.token_urlsafe(32) makes one)")
        return value


class AuthSettings(BaseModel):
    """Where this protected resource gets its tokens, as Protected Resource Metadata announces it.

    `issuer_url` is the authorization server clients are sent to;
    `resource_server_url` is this server's own URL, the RFC 8707 resource
    (and the audience a token must carry). `required_scopes` are needed for
    every request and are what the metadata advertises as `scopes_supported`
    (the spec's "minimal set"; tools ask for more with `scopes=`, by step-up).
    `validate_token_resource`: True refuses a token whose `AccessToken.resource`
    is not this server's; None (default) refuses one that names another
    resource but accepts one that names none (the verifier checked the
    audience itself); False never compares. `scope_hierarchy` maps a broad
    scope to the narrower ones it implies (`{"refunds:admin": ["refunds:write"]}`):
    a token with the broad one is treated as holding them all, as the spec requires.

    With `MCPServer(auth_server_provider=...)` this server is its own
    authorization server: `issuer_url` is then this server's own URL (where it
    serves `/authorize`, `/token` ...), `client_registration_options` and
    `revocation_options` turn on `/register` and `/revoke`, and
    `client_id_metadata_documents` accepts clients whose id is the https URL
    of their metadata document (CIMD), fetched when they first come.

    `dpop` says how sender-constrained tokens are checked (`DPoPOptions`):
    by default DPoP is accepted beside bearer tokens, and a token bound to a
    key is accepted only with a proof of that key.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    issuer_url: str
    resource_server_url: str
    required_scopes: tuple[str, ...] | None = None
    service_documentation_url: str | None = None
    validate_token_resource: bool | None = None
    scope_hierarchy: Mapping[str, tuple[str, ...]] | None = None
    client_registration_options: ClientRegistrationOptions | None = None
    revocation_options: RevocationOptions | None = None
    client_id_metadata_documents: bool = False
    dpop: DPoPOptions = DPoPOptions()

    @field_validator("issuer_url", "resource_server_url", "service_documentation_url", mode="before")
    @classmethod
    def _url(cls, value: Any, info: Any) -> Any:
        return None if value is None else _check_url(str(value), info.field_name)

    @field_validator("required_scopes")
    @classmethod
    def _scopes(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(check_scope(s) for s in value)

    @field_validator("scope_hierarchy")
    @classmethod
    def _hierarchy(cls, value: Mapping[str, tuple[str, ...]] | None) -> Mapping[str, tuple[str, ...]] | None:
        if value is None:
            return None
        return {check_scope(k): tuple(check_scope(s) for s in v) for k, v in value.items()}


def expand_scopes(granted: Iterable[str], hierarchy: Mapping[str, Sequence[str]] | None) -> tuple[str, ...]:
    """The granted scopes plus every scope they imply, transitively, in a stable order."""
    result = list(dict.fromkeys(granted))
    if not hierarchy:
        return tuple(result)
    seen = set(result)
    index = 0
    while index < len(result):
        for implied in hierarchy.get(result[index], ()):
            if implied not in seen:
                seen.add(implied)
                result.append(implied)
        index += 1
    return tuple(result)


_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))
"""`json.dumps(..., separators=(",", ":"))` without building an encoder on each call."""


def principal_of(token: AccessToken) -> str:
    """Who a token stands for, as one string: issuer, subject and client, unambiguously joined.

    This is what requestState and handshake sessions are bound to. It survives
    a token refresh (same issuer, user and client) and differs between users,
    between issuers (a `sub` is unique only within its issuer) and between
    clients acting for the same user.
    """
    return _COMPACT_JSON.encode([token.issuer, token.subject, token.client_id])


DEFAULT_LEEWAY_S = 30
"""Clock skew tolerated between this server and the authorization server, in seconds."""


def check_leeway(value: float) -> float:
    """A verifier's `leeway_s`: a finite number of seconds, not negative."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(f"leeway_s must be a number of seconds, 0 or more, got {value!r}")
    return value


def _numeric_date(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def lifetime_refusal(
    claims: Mapping[str, Any], leeway_s: float, *, require_exp: bool = False, now: float | None = None
) -> str | None:
    """Why a token is outside its lifetime, or None when it is inside: the one clock-skew rule.

    Every verifier and the HTTP bearer check go by it, so `leeway_s` means
    the same everywhere: with `s` the leeway, a token is good while
    `now < exp + s`, from `nbf - s` on, and only if `iat - s <= now` (issued
    no later than the skew allows). Each bound moves by the same `s`, in the
    token's favour. A claim that is present but not a number refuses the token.
    """
    now = time.time() if now is None else now
    exp, nbf, iat = claims.get("exp"), claims.get("nbf"), claims.get("iat")
    for name, value in (("exp", exp), ("nbf", nbf), ("iat", iat)):  # checked on every request: ints go first
        if value is not None and type(value) is not int and not _numeric_date(value):
            return f"malformed {name}"
    if exp is None:
        if require_exp:
            return "no expiry (exp)"
    elif now >= exp + leeway_s:
        return "expired"
    if nbf is not None and now < nbf - leeway_s:
        return "not yet valid (nbf)"
    if iat is not None and now < iat - leeway_s:
        return "issued in the future (iat)"
    return None


def matching_audience(aud: Any, mine: Sequence[str]) -> tuple[str | None, bool]:
    """(the `aud` entry naming one of `mine`, or None; whether `aud` named any audience at all).

    `aud` is a JWT claim or an introspection answer's field: one string or a list of them. Shared
    by both verifiers so a token is matched to this server by one rule (RFC 8707).
    """
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    for candidate in audiences:
        if isinstance(candidate, str) and any(same_resource(candidate, own) for own in mine):
            return candidate, True
    return None, bool(audiences)


def same_resource(theirs: str, mine: str) -> bool:
    """Whether the resource URI a token names (`theirs`) is this server's (`mine`), by RFC 8707.

    Both are normalised (`canonical_url`, the rule the client checks resource
    metadata by too) and compared strictly. A `theirs` with a user name, a
    fragment or anything malformed matches nothing. An audience
    configured as something other than an http(s) URL (`api://default`, a
    client id) is matched exactly as written.
    """
    own = canonical_url(mine)
    if own is None:
        return not is_web_url(mine) and theirs == mine
    return canonical_url(theirs) == own


def check_protection(token_verifier: Any, auth: Any) -> None:
    """Refuse a half-protected server, and hand a verifier the settings its defaults come from.

    A verifier without settings would leave clients no way to find the
    authorization server (no metadata, no challenge to follow); settings
    without a verifier would advertise protection that nothing enforces.
    """
    if token_verifier is None and auth is None:
        return
    if token_verifier is None:
        raise ValueError(
            "MCPServer(auth=...) needs token_verifier=...: mcp-resolve is a resource server, not an "
            "authorization server, so something must check the tokens your authorization server issues "
            "(JWTVerifier, IntrospectionVerifier, or your own TokenVerifier)"
        )
    if not isinstance(auth, AuthSettings):
        raise ValueError(
            "MCPServer(token_verifier=...) needs auth=AuthSettings(issuer_url=..., resource_server_url=...): "
            "clients learn from it where to get a token and for which resource"
        )
    if not callable(getattr(token_verifier, "verify_token", None)):
        raise TypeError("token_verifier must have an async verify_token(token) method")
    bind = getattr(token_verifier, "bind_auth_settings", None)
    if callable(bind):
        bind(auth)
