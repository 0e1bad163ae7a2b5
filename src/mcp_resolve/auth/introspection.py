"""IntrospectionVerifier: opaque access tokens, asked about at the authorization server (RFC 7662).

Each unknown token costs one request to the introspection endpoint; the
answer is cached, bounded in entries and in time, and never past the token's
own `exp`, so a token is not honoured a second longer than its issuer allows.
A positive answer may be served from the cache for up to `cache_ttl_s`: that
is how long a revocation can take to be seen here (set 0 to ask every time).
An unreachable endpoint, or one that has not answered in full within
`timeout_s` (one deadline for the whole exchange), refuses the token (fail
closed) and caches nothing.

Without an `http_client`, the verifier keeps one HTTP client of its own,
opened on the first request, so requests reuse its connections instead of
paying a TCP and TLS handshake each; `timeout_s` bounds each request through
it as a whole all the same. A protected `MCPServer` closes it (`aclose()`)
when its lifespan ends, and the next request opens a new one.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import httpx
from anyio.lowlevel import EventLoopToken, current_token

from .fetch import Unreachable, fetch_json
from .tokens import (
    DEFAULT_LEEWAY_S,
    AccessToken,
    check_leeway,
    check_scope,
    lifetime_refusal,
    matching_audience,
)

if TYPE_CHECKING:
    from .tokens import AuthSettings

__all__ = ["IntrospectionVerifier"]

logger = logging.getLogger("mcp_resolve.auth")

MAX_TOKEN_BYTES = 16 * 1024
INTROSPECTION_LIMIT = 64 * 1024
NEGATIVE_TTL_S = 30.0
"""How long an inactive answer is remembered (a flood of one bad token costs one request per this)."""
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""RFC 6750's token syntax: anything else is not a bearer token, so is not sent anywhere."""


class _Refused(Exception):
    """Why a token was refused, for the log."""


class IntrospectionVerifier:
    """Verify opaque tokens by asking `introspection_endpoint`, authenticating as `client_id`/`client_secret`.

    `audience` (default: the protected server's `resource_server_url`) must
    appear in the answer's `aud`; `issuer` (default: its `issuer_url`), when
    the answer names one, must match. `required_scopes` are needed by every token.
    The answer's `exp`, `nbf` and `iat` are checked by the same clock-skew rule
    as JWTVerifier's, with `leeway_s`; `timeout_s` bounds each request as a whole.
    """

    def __init__(
        self,
        introspection_endpoint: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        audience: str | Sequence[str] | None = None,
        issuer: str | None = None,
        required_scopes: Sequence[str] | None = None,
        cache_ttl_s: float = 60.0,
        cache_size: int = 10_000,
        leeway_s: float = DEFAULT_LEEWAY_S,
        timeout_s: float = 5.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if cache_ttl_s < 0 or cache_size < 0:
            raise ValueError("cache_ttl_s and cache_size must not be negative")
        self.endpoint = introspection_endpoint
        self._auth = (client_id, client_secret or "") if client_id is not None else None
        self.audience: tuple[str, ...] | None = (
            None if audience is None else (audience,) if isinstance(audience, str) else tuple(audience)
        )
        self.issuer = issuer
        self.required_scopes = tuple(check_scope(s) for s in required_scopes or ())
        self.cache_ttl_s = cache_ttl_s
        self.cache_size = cache_size
        self.leeway_s = check_leeway(leeway_s)
        self.timeout_s = timeout_s
        self.http_client = http_client
        self._own: tuple[EventLoopToken, httpx.AsyncClient] | None = None
        """The verifier's own client and the event loop it belongs to (httpx clients are per loop)."""
        self._cache: OrderedDict[bytes, tuple[AccessToken | None, float]] = OrderedDict()
        self.requests = 0
        """Introspection requests sent so far (for operators and tests: the cache at work)."""

    def _client(self) -> httpx.AsyncClient:
        """The `http_client` given, else the verifier's own, opened now if it has none on this loop."""
        if self.http_client is not None:
            return self.http_client
        loop = current_token()
        if self._own is None or self._own[0] != loop or self._own[1].is_closed:
            # A client left from another (most likely ended) loop is dropped: its sockets went with it.
            self._own = (loop, httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=False))
        return self._own[1]

    async def aclose(self) -> None:
        """Close the verifier's own HTTP client (never a given `http_client`); the verifier stays usable.

        The next request opens a new client. A protected `MCPServer` calls
        this when its lifespan ends.
        """
        own, self._own = self._own, None
        if own is not None and own[0] == current_token():
            await own[1].aclose()

    def bind_auth_settings(self, settings: AuthSettings) -> None:
        """Take the protected server's resource URL and issuer where none were given (MCPServer calls this)."""
        if self.audience is None:
            self.audience = (settings.resource_server_url,)
        if self.issuer is None:
            self.issuer = settings.issuer_url

    async def verify_token(self, token: str) -> AccessToken | None:
        if len(token) > MAX_TOKEN_BYTES or not _B64TOKEN.fullmatch(token):
            logger.info("refused an access token: not a bearer token of sane length and syntax")
            return None
        key = hashlib.sha256(token.encode()).digest()
        now = time.time()
        cached = self._cache.get(key)
        if cached is not None:
            access, until = cached
            if now < until:
                self._cache.move_to_end(key)
                return access
            del self._cache[key]
        try:
            access = await self._introspect(token, now)
        except Unreachable as exc:
            logger.error("introspection unavailable, refusing the token: %s", exc)
            return None
        except _Refused as exc:
            logger.info("refused an access token: %s", exc)
            self._remember(key, None, now + min(self.cache_ttl_s, NEGATIVE_TTL_S))
            return None
        until = now + self.cache_ttl_s
        if access.expires_at is not None:
            until = min(until, access.expires_at)
        self._remember(key, access, until)
        return access

    def _remember(self, key: bytes, access: AccessToken | None, until: float) -> None:
        if self.cache_size == 0 or until <= time.time():
            return
        self._cache[key] = (access, until)
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    async def _introspect(self, token: str, now: float) -> AccessToken:
        self.requests += 1
        answer = await fetch_json(
            self._client(),
            "POST",
            self.endpoint,
            limit=INTROSPECTION_LIMIT,
            timeout=self.timeout_s,
            data={"token": token, "token_type_hint": "access_token"},
            headers={"accept": "application/json"},
            auth=self._auth,
        )
        if not isinstance(answer, dict):
            raise Unreachable(f"{self.endpoint} answered with something other than a JSON object")
        if answer.get("active") is not True:
            raise _Refused("the authorization server reports it inactive")
        outside = lifetime_refusal(answer, self.leeway_s, now=now)
        if outside is not None:
            raise _Refused(outside)
        expires_at = answer.get("exp")
        issuer = answer.get("iss")
        if issuer is not None and self.issuer is not None and issuer != self.issuer:
            raise _Refused("issued by another authorization server")
        resource = self._matching_audience(answer)
        scope = answer.get("scope")
        scopes = tuple(scope.split()) if isinstance(scope, str) else ()
        missing = set(self.required_scopes) - set(scopes)
        if missing:
            raise _Refused(f"missing required scope(s) {' '.join(sorted(missing))}")
        subject = answer.get("sub")
        claims = {**answer, "iss": issuer if isinstance(issuer, str) else self.issuer or self.endpoint}
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id") or ""),
            scopes=scopes,
            expires_at=None if expires_at is None else int(expires_at),
            resource=resource,
            subject=subject if isinstance(subject, str) else None,
            claims=claims,
        )

    def _matching_audience(self, answer: dict[str, Any]) -> str:
        if self.audience is None:
            raise _Refused(
                "no audience configured: give IntrospectionVerifier(audience=...) or protect an MCPServer "
                "with AuthSettings(resource_server_url=...)"
            )
        found, named_any = matching_audience(answer.get("aud"), self.audience)
        if found is not None:
            return found
        raise _Refused("issued for another audience" if named_any else "the answer names no audience (aud)")
