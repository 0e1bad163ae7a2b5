"""The proxy's side of the upstream login: authorization URL, code exchange, refresh, identity.

The upstream is a provider we do not control (GitHub, Google, Entra ...), so
every exchange with it is bounded: ONE deadline per operation (`timeout_s`)
covers OpenID discovery, the request, every byte of the answer and, for an
ID token, the JWKS fetch; answers are read up to a size limit; redirects are
never followed (an endpoint that moved is a configuration to fix, not a hop
to take with a client secret or a code in hand); and every URL, configured or
discovered, is https (http only on loopback, for tests, when allowed).

What fails becomes `UpstreamError`, whose `kind` tells the caller whether the
upstream could not be reached (`unreachable`: down, slow, a 5xx, garbage) or
said no (`refused`: an OAuth error, a bad ID token, a rejected token). Its
text names the endpoint and what happened, never a token, a code, a secret or
an answer's body (an OAuth `error` code is kept when it is one word).

PKCE S256 is used towards the upstream too, and an OpenID login carries a
`nonce` the ID token must echo. The ID token is checked with joserfc: the
signature with the upstream's JWKS (`JWKSKeys`, cached and rotated), `iss`,
`aud` (our client id; `azp` when there are several), `exp`/`iat` and `nonce`.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import anyio
import httpx
import pydantic_core
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jws import JWSRegistry

from ..fetch import Unreachable, fetch_json
from ..jwks import JWKSKeys, KeyUnavailable
from ..jwt import jose_header
from ..redirect_uris import is_loopback_host
from ..tokens import DEFAULT_LEEWAY_S, lifetime_refusal
from .identity import UpstreamIdentity

__all__ = ["UpstreamClient", "UpstreamConfig", "UpstreamError", "UpstreamTokens"]

ANSWER_LIMIT = 64 * 1024
"""Bytes of a token or user-info answer read at most."""
DISCOVERY_LIMIT = 256 * 1024
MAX_ID_TOKEN_BYTES = 16 * 1024
ID_TOKEN_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""Asymmetric only: an HS256 ID token would be signed with our own client secret."""

DEFAULT_CLAIM_MAP: Mapping[str, str] = {
    "subject": "sub",
    "login": "preferred_username",
    "email": "email",
    "name": "name",
    "groups": "groups",
}
_RESERVED_PARAMS = frozenset(
    {
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "nonce",
    }
)
_PROTOCOL_CLAIMS = frozenset(
    {
        "iss",
        "aud",
        "exp",
        "iat",
        "nbf",
        "nonce",
        "at_hash",
        "c_hash",
        "s_hash",
        "azp",
        "auth_time",
        "jti",
        "sid",
    }
)
_ERROR_CODE = re.compile(r"[a-z0-9_.-]{1,64}")
_ENDPOINTS = (
    "authorization_endpoint",
    "token_endpoint",
    "userinfo_endpoint",
    "jwks_uri",
    "revocation_endpoint",
)


class UpstreamError(Exception):
    """The upstream could not be reached or refused; `str()` is safe to log and to show a person."""

    def __init__(self, kind: Literal["unreachable", "refused"], message: str) -> None:
        super().__init__(message)
        self.kind: Literal["unreachable", "refused"] = kind


def check_upstream_url(url: str, what: str, *, allow_http_loopback: bool) -> str:
    """`url` when it is https (or http on loopback, if allowed) with a host; ValueError otherwise."""
    parts = urlsplit(url)
    if not parts.hostname or parts.username or parts.password or parts.fragment:
        raise ValueError(f"{what} must be an absolute URL with a host, no user info and no fragment: {url!r}")
    if parts.scheme == "https" or (
        parts.scheme == "http" and allow_http_loopback and is_loopback_host(parts.hostname)
    ):
        return url
    raise ValueError(f"{what} must be https (http only on loopback, with allow_http_loopback): {url!r}")


@dataclass(frozen=True)
class UpstreamConfig:
    """One upstream identity provider and our client registered there. Configuration only.

    Give `discovery_url` for an OpenID provider (the endpoints, the issuer
    and the JWKS are read from it on first use, and any given here win), or
    the endpoints themselves (GitHub). `identity_source` is where the person's
    identity comes from: the ID token (`openid` must then be among `scopes`)
    or the user-info endpoint with the access token. `claim_map` maps our
    stable names (`subject`, `login`, `email`, `name`, `groups`) to the
    provider's claims or fields; a dotted name reaches into an object
    (`realm_access.roles`).
    """

    name: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    userinfo_endpoint: str | None = None
    jwks_uri: str | None = None
    issuer: str | None = None
    """The ID token's expected `iss`. With discovery and no issuer given, the document's own is used."""
    revocation_endpoint: str | None = None
    discovery_url: str | None = None
    scopes: tuple[str, ...] = ()
    identity_source: Literal["id_token", "userinfo"] = "id_token"
    claim_map: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CLAIM_MAP))
    token_endpoint_auth: Literal["client_secret_post", "client_secret_basic", "none"] = "client_secret_post"
    extra_authorize_params: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 10.0
    allow_http_loopback: bool = False
    display_name: str | None = None
    """The provider as a person knows it ("GitHub"), for the consent page; default: `name`."""
    userinfo_headers: Mapping[str, str] = field(default_factory=dict)
    """Extra headers for the user-info call (GitHub wants its API media type)."""
    leeway_s: float = DEFAULT_LEEWAY_S
    """Clock skew allowed on the ID token's `exp` and `iat`."""

    def __post_init__(self) -> None:
        if not self.name or not self.client_id:
            raise ValueError("an upstream needs a name and a client_id")
        if self.token_endpoint_auth != "none" and not self.client_secret:
            raise ValueError(f"{self.name}: client_secret is needed for {self.token_endpoint_auth}")
        if not 0 < self.timeout_s <= 120:
            raise ValueError("timeout_s must be between 0 and 120 seconds")
        for what in (*_ENDPOINTS, "discovery_url", "issuer"):
            value = getattr(self, what)
            if value is not None:
                check_upstream_url(value, f"{self.name} {what}", allow_http_loopback=self.allow_http_loopback)
        if self.discovery_url is None and (
            self.authorization_endpoint is None or self.token_endpoint is None
        ):
            raise ValueError(f"{self.name}: give discovery_url, or authorization_endpoint and token_endpoint")
        if self.identity_source == "id_token":
            if "openid" not in self.scopes:
                raise ValueError(f"{self.name}: an ID token needs the 'openid' scope")
            if self.discovery_url is None and (self.jwks_uri is None or self.issuer is None):
                raise ValueError(
                    f"{self.name}: checking ID tokens needs jwks_uri and issuer (or discovery_url)"
                )
        elif self.discovery_url is None and self.userinfo_endpoint is None:
            raise ValueError(
                f"{self.name}: identity_source='userinfo' needs userinfo_endpoint (or discovery_url)"
            )
        if "subject" not in self.claim_map:
            raise ValueError(f"{self.name}: claim_map must say which claim is the subject")
        reserved = _RESERVED_PARAMS & set(self.extra_authorize_params)
        if reserved:
            raise ValueError(f"{self.name}: extra_authorize_params may not set {', '.join(sorted(reserved))}")

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True)
class UpstreamTokens:
    """What the upstream's token endpoint issued. Held by the proxy only, sealed at rest."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    """Wall-clock seconds (`time.time()`), so every worker of a fleet reads it alike; None: no expiry given."""
    id_token: str | None = field(default=None, repr=False)
    scope: str | None = None


@dataclass
class _Endpoints:
    authorization_endpoint: str | None
    token_endpoint: str | None
    userinfo_endpoint: str | None
    jwks_uri: str | None
    issuer: str | None
    revocation_endpoint: str | None


class UpstreamClient:
    """Talks to one upstream for the proxy. One per proxy; safe for concurrent use."""

    def __init__(self, config: UpstreamConfig, *, http_client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        self._owned = http_client is None
        self._http = http_client or httpx.AsyncClient(follow_redirects=False, timeout=config.timeout_s)
        self._endpoints: _Endpoints | None = None
        self._discovering: anyio.Lock = anyio.Lock()
        self._keys: JWKSKeys | None = None
        self._registry = JWSRegistry(algorithms=list(ID_TOKEN_ALGORITHMS), strict_check_header=False)

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    # -- the operations: each under one deadline -------------------------------------------

    async def authorization_url(
        self, *, state: str, code_challenge: str, redirect_uri: str, nonce: str
    ) -> str:
        """Where to send the person: the upstream's authorization endpoint with PKCE S256 and our state."""
        async with self._deadline("building the authorization URL"):
            endpoints = await self._discovered()
        url = endpoints.authorization_endpoint
        if url is None:
            raise UpstreamError("unreachable", f"{self.config.label} announces no authorization endpoint")
        params: dict[str, str] = {
            "response_type": "code",
            "client_id": self.config.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": code_challenge,
            "code_challenge_method": "S256",
        }
        if self.config.scopes:
            params["scope"] = " ".join(self.config.scopes)
        if "openid" in self.config.scopes:
            params["nonce"] = nonce
        params.update(self.config.extra_authorize_params)
        return f"{url}{'&' if urlsplit(url).query else '?'}{urlencode(params, quote_via=quote)}"

    async def exchange_code(self, *, code: str, code_verifier: str, redirect_uri: str) -> UpstreamTokens:
        """The upstream's tokens for the code it sent to our callback."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        }
        async with self._deadline("exchanging the authorization code"):
            return _tokens(await self._token_request(form, "the authorization code"), None)

    async def refresh(self, refresh_token: str) -> UpstreamTokens:
        """New upstream tokens; the refresh token is kept when the upstream does not rotate it."""
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        async with self._deadline("refreshing the upstream token"):
            return _tokens(await self._token_request(form, "the refresh token"), refresh_token)

    async def identity(self, tokens: UpstreamTokens, *, nonce: str | None) -> UpstreamIdentity:
        """Who signed in: from the ID token (checked, `nonce` must match when given) or from user-info."""
        async with self._deadline("reading the identity"):
            if self.config.identity_source == "id_token":
                if not tokens.id_token:
                    raise UpstreamError("refused", f"{self.config.label} sent no ID token")
                claims = await self._id_token_claims(tokens.id_token, nonce)
            else:
                claims = await self._userinfo(tokens.access_token)
        return self._identity(claims)

    async def revoke(self, token: str, *, token_type_hint: str = "refresh_token") -> bool:
        """Ask the upstream to revoke `token` (RFC 7009); False when it has no revocation endpoint."""
        async with self._deadline("revoking an upstream token"):
            endpoints = await self._discovered()
            if endpoints.revocation_endpoint is None:
                return False
            form = {"token": token, "token_type_hint": token_type_hint}
            status, _body = await self._post(
                endpoints.revocation_endpoint, form, "revocation", client_auth=True
            )
        if status != 200:
            raise UpstreamError(_kind(status), f"{self.config.label} revocation answered HTTP {status}")
        return True

    # -- the pieces -------------------------------------------------------------------------

    @asynccontextmanager
    async def _deadline(self, doing: str) -> AsyncIterator[None]:
        """One deadline for the whole operation; the fetches inside share what is left of it."""
        config = self.config
        with anyio.CancelScope(deadline=anyio.current_time() + config.timeout_s) as scope:
            yield
        if scope.cancelled_caught:
            raise UpstreamError(
                "unreachable", f"{config.label} did not answer within {config.timeout_s:g} s ({doing})"
            )

    def _remaining(self) -> float:
        deadline = anyio.current_effective_deadline()
        if deadline == float("inf"):
            return self.config.timeout_s
        return max(0.001, deadline - anyio.current_time())

    async def _discovered(self) -> _Endpoints:
        if self._endpoints is not None:
            return self._endpoints
        async with self._discovering:
            if self._endpoints is None:
                self._endpoints = await self._discover()
        return self._endpoints

    async def _discover(self) -> _Endpoints:
        config = self.config
        given = _Endpoints(
            config.authorization_endpoint,
            config.token_endpoint,
            config.userinfo_endpoint,
            config.jwks_uri,
            config.issuer,
            config.revocation_endpoint,
        )
        if config.discovery_url is None:
            return given
        try:
            document = await fetch_json(
                self._http,
                "GET",
                config.discovery_url,
                limit=DISCOVERY_LIMIT,
                timeout=self._remaining(),
                headers={"accept": "application/json"},
            )
        except Unreachable as exc:
            raise UpstreamError("unreachable", f"{config.label} discovery failed: {exc}") from None
        if not isinstance(document, dict):
            raise UpstreamError("unreachable", f"{config.label} discovery document is not a JSON object")
        issuer = document.get("issuer")
        if config.issuer is not None and issuer != config.issuer:
            raise UpstreamError(
                "refused", f"{config.label} discovery names another issuer than {config.issuer}"
            )
        found: dict[str, str | None] = {}
        for what in (*_ENDPOINTS, "issuer"):
            mine = getattr(given, what)
            theirs = document.get(what)
            if mine is not None or theirs is None:
                found[what] = mine
                continue
            if not isinstance(theirs, str):
                raise UpstreamError("unreachable", f"{config.label} discovery: {what} is not a string")
            try:
                found[what] = check_upstream_url(
                    theirs, f"discovered {what}", allow_http_loopback=config.allow_http_loopback
                )
            except ValueError as exc:
                raise UpstreamError("refused", f"{config.label}: {exc}") from None
        endpoints = _Endpoints(**found)
        missing = [w for w in ("authorization_endpoint", "token_endpoint") if getattr(endpoints, w) is None]
        if config.identity_source == "id_token":
            missing += [w for w in ("jwks_uri", "issuer") if getattr(endpoints, w) is None]
        elif endpoints.userinfo_endpoint is None:
            missing.append("userinfo_endpoint")
        if missing:
            raise UpstreamError("refused", f"{config.label} discovery lacks {', '.join(missing)}")
        return endpoints

    async def _token_request(self, form: dict[str, str], what: str) -> dict[str, Any]:
        endpoints = await self._discovered()
        assert endpoints.token_endpoint is not None
        status, body = await self._post(endpoints.token_endpoint, form, "token endpoint", client_auth=True)
        error = body.get("error") if isinstance(body, dict) else None
        if status == 200 and isinstance(body, dict) and error is None:
            return body
        label = self.config.label
        code = f" ({error})" if isinstance(error, str) and _ERROR_CODE.fullmatch(error) else ""
        if status < 500 and code:
            # GitHub answers errors with HTTP 200 and an `error` field; others with 400/401.
            raise UpstreamError("refused", f"{label} refused {what}: {error}")
        raise UpstreamError(_kind(status), f"{label} token endpoint answered HTTP {status} to {what}{code}")

    async def _post(self, url: str, form: dict[str, str], what: str, *, client_auth: bool) -> tuple[int, Any]:
        config = self.config
        headers = {"accept": "application/json"}
        data = dict(form)
        if client_auth:
            if config.token_endpoint_auth == "client_secret_basic":
                secret = config.client_secret or ""
                pair = f"{quote(config.client_id, safe='')}:{quote(secret, safe='')}"
                headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
            else:
                data["client_id"] = config.client_id
                if config.token_endpoint_auth == "client_secret_post":
                    data["client_secret"] = config.client_secret or ""
        return await self._exchange("POST", url, what, data=data, headers=headers)

    async def _exchange(self, method: str, url: str, what: str, **request: Any) -> tuple[int, Any]:
        """(status, decoded JSON or None) of one bounded exchange; UpstreamError when unreachable."""
        label = self.config.label
        try:
            async with self._http.stream(
                method, url, timeout=self._remaining(), follow_redirects=False, **request
            ) as response:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > ANSWER_LIMIT:
                    raise UpstreamError("unreachable", f"{label} {what} sent more than {ANSWER_LIMIT} bytes")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > ANSWER_LIMIT:
                        raise UpstreamError(
                            "unreachable", f"{label} {what} sent more than {ANSWER_LIMIT} bytes"
                        )
                status = response.status_code
        except httpx.TimeoutException:
            raise UpstreamError(
                "unreachable", f"{label} {what} did not answer within {self.config.timeout_s:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise UpstreamError(
                "unreachable", f"{label} {what} could not be reached ({type(exc).__name__})"
            ) from None
        if 300 <= status < 400:
            raise UpstreamError(
                "unreachable", f"{label} {what} redirected (HTTP {status}); redirects are not followed"
            )
        try:
            decoded = pydantic_core.from_json(bytes(body)) if body else None
        except ValueError:
            if status >= 400:
                return status, None
            raise UpstreamError("unreachable", f"{label} {what} sent a body that is not JSON") from None
        return status, decoded

    async def _userinfo(self, access_token: str) -> dict[str, Any]:
        endpoints = await self._discovered()
        assert endpoints.userinfo_endpoint is not None
        headers = {
            "accept": "application/json",
            "user-agent": "mcp-resolve",
            **self.config.userinfo_headers,
            "authorization": f"Bearer {access_token}",
        }
        status, body = await self._exchange("GET", endpoints.userinfo_endpoint, "user-info", headers=headers)
        label = self.config.label
        if status != 200:
            raise UpstreamError(_kind(status), f"{label} user-info answered HTTP {status}")
        if not isinstance(body, dict):
            raise UpstreamError("unreachable", f"{label} user-info is not a JSON object")
        return body

    async def _id_token_claims(self, id_token: str, nonce: str | None) -> dict[str, Any]:
        config, label = self.config, self.config.label
        endpoints = await self._discovered()
        assert endpoints.jwks_uri is not None and endpoints.issuer is not None
        if len(id_token) > MAX_ID_TOKEN_BYTES:
            raise UpstreamError("refused", f"{label} ID token is longer than {MAX_ID_TOKEN_BYTES} bytes")
        header = _jose_header(id_token)
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in ID_TOKEN_ALGORITHMS:
            raise UpstreamError("refused", f"{label} ID token algorithm {str(alg)[:20]!r} is not allowed")
        if kid is not None and not isinstance(kid, str):
            raise UpstreamError("refused", f"{label} ID token has a malformed key id")
        if self._keys is None:
            self._keys = JWKSKeys(
                endpoints.jwks_uri,
                cache_ttl_s=3600,
                refetch_interval_s=30,
                timeout_s=config.timeout_s,
                http_client=self._http,
            )
        try:
            key = await self._keys.key_for(kid, alg)
        except KeyUnavailable as exc:
            raise UpstreamError("unreachable", f"{label} signing keys unavailable: {exc}") from None
        try:
            claims = jwt.decode(id_token, key, algorithms=[alg], registry=self._registry).claims
        except (JoseError, ValueError):
            raise UpstreamError("refused", f"{label} ID token signature or structure is invalid") from None
        if claims.get("iss") != endpoints.issuer:
            raise UpstreamError("refused", f"{label} ID token was issued by another issuer")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if config.client_id not in audiences:
            raise UpstreamError("refused", f"{label} ID token was issued for another client")
        if len(audiences) > 1 and claims.get("azp") != config.client_id:
            raise UpstreamError("refused", f"{label} ID token's authorized party is another client")
        outside = lifetime_refusal(claims, config.leeway_s, require_exp=True)
        if outside is not None:
            raise UpstreamError("refused", f"{label} ID token refused: {outside}")
        if nonce is not None and claims.get("nonce") != nonce:
            raise UpstreamError("refused", f"{label} ID token nonce does not match this login")
        return dict(claims)

    def _identity(self, claims: Mapping[str, Any]) -> UpstreamIdentity:
        label, claim_map = self.config.label, self.config.claim_map
        subject = _pick(claims, claim_map["subject"])
        if isinstance(subject, bool) or not isinstance(subject, (str, int)) or subject == "":
            raise UpstreamError("refused", f"{label} named no subject ({claim_map['subject']!r})")
        fields: dict[str, Any] = {}
        for name in ("login", "email", "name"):
            if name in claim_map:
                value = _pick(claims, claim_map[name])
                if isinstance(value, str) and value:
                    fields[name] = value
        if "groups" in claim_map:
            groups = _pick(claims, claim_map["groups"])
            if isinstance(groups, str):
                fields["groups"] = (groups,)
            elif isinstance(groups, list):
                fields["groups"] = tuple(g for g in groups if isinstance(g, str))
        extra = {k: v for k, v in claims.items() if k not in _PROTOCOL_CLAIMS}
        return UpstreamIdentity(provider=self.config.name, subject=str(subject), claims=extra, **fields)


def _kind(status: int) -> Literal["unreachable", "refused"]:
    return "refused" if 400 <= status < 500 else "unreachable"


def _pick(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _jose_header(token: str) -> dict[str, Any]:
    header = jose_header(token)
    if header is None:
        raise UpstreamError("refused", "the ID token is not a signed JWT")
    return header


def _tokens(body: Mapping[str, Any], old_refresh: str | None) -> UpstreamTokens:
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise UpstreamError("unreachable", "the upstream token answer has no access_token")
    token_type = body.get("token_type")
    if isinstance(token_type, str) and token_type.lower() != "bearer":
        raise UpstreamError("refused", f"the upstream issued a {token_type[:20]!r} token, not a bearer token")
    expires_in = body.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = int(expires_in)  # some providers send a string
    expires_at = time.time() + expires_in if isinstance(expires_in, (int, float)) and expires_in > 0 else None
    refresh = body.get("refresh_token")
    id_token = body.get("id_token")
    scope = body.get("scope")
    return UpstreamTokens(
        access_token=access,
        refresh_token=refresh if isinstance(refresh, str) and refresh else old_refresh,
        expires_at=expires_at,
        id_token=id_token if isinstance(id_token, str) and id_token else None,
        scope=scope if isinstance(scope, str) else None,
    )
