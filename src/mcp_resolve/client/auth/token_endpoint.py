"""The token endpoint: asking for tokens, and checking what comes back before anything uses it.

Every grant ends here: the form is encoded and the client authenticated by
Authlib; the answer is bounded in size and must hold a printable Bearer
access token of sensible length.

A request whose connection drops before any answer (refused, reset, closed
without a response) is sent once more, with the client authentication
prepared afresh (a `private_key_jwt` assertion is single-use too). That is
safe for every grant, even the authorization code, which is single-use: if
the first request never reached the server, the second gets the tokens; if
it did, the server refuses the second (`invalid_grant`) and the login ends
with that `AuthorizationError`, as it would have without the retry. A
timeout is not retried: the server may still be working on the first one.
Anything else that goes wrong on the way is for the caller (the `Grant`) to
turn into an `AuthorizationError`.

A token record keeps, beside the tokens,
where they came from (`issuer`, `resource`) and which scopes were asked for
(`requested_scope`), so a later refresh or step-up asks the same server for
the same things.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import quote

import anyio
import httpx

from .discovery import ProtectedResource, fetch_deadline, read_json
from .dpop import DPoPKey, Nonces
from .errors import AuthorizationError, printable, refusal
from .registration import Registration

__all__ = [
    "MAX_ACCESS_TOKEN_CHARS",
    "MAX_TOKEN_RESPONSE_BYTES",
    "RETRIED_FAILURES",
    "expiring",
    "record",
    "refreshed",
    "secret_auth",
    "token_request",
]

MAX_TOKEN_RESPONSE_BYTES = 64 * 1024
MAX_ACCESS_TOKEN_CHARS = 16 * 1024
"""It travels in a header on every request; a bigger one is not a token we can use."""

RETRIED_FAILURES: tuple[type[httpx.TransportError], ...] = (
    httpx.ConnectError,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)
"""A connection that failed or dropped before an answer came: the token request is sent once more."""
_RETRY_DELAY = 0.25

logger = logging.getLogger("mcp_resolve.client.auth")


def secret_auth(registration: Registration) -> Any:
    """Authlib's client authentication for `registration`'s method (`none`, or a secret, Basic or post)."""
    from authlib.oauth2.auth import ClientAuth

    if registration.method == "client_secret_basic":
        # RFC 6749 §2.3.1: form-encode both before Basic (Authlib's server decodes them so).
        return ClientAuth(
            quote(registration.client_id, safe=""),
            quote(registration.client_secret or "", safe=""),
            "client_secret_basic",
        )
    return ClientAuth(registration.client_id, registration.client_secret, registration.method)


async def token_request(
    http: httpx.AsyncClient,
    metadata: dict[str, Any],
    issuer: str,
    grant_type: str,
    form: dict[str, Any],
    client_auth: Any,
    *,
    dpop: DPoPKey | None = None,
    nonces: Nonces | None = None,
) -> dict[str, Any]:
    """The tokens `issuer`'s token endpoint grants for `form`, checked (an AuthorizationError if unusable).

    With `dpop`, each request carries a proof signed with it, and a token of type DPoP is accepted;
    `nonces` keeps what the endpoint says to put in the proofs.
    """
    from authlib.oauth2.rfc6749 import OAuth2Token

    endpoint = metadata.get("token_endpoint")
    if not isinstance(endpoint, str):
        raise AuthorizationError("metadata_invalid", f"{issuer} has no token_endpoint")
    nonces = nonces if nonces is not None else Nonces()
    retried = False
    try:
        payload, status = await _post(http, endpoint, grant_type, form, client_auth, dpop, nonces)
    except RETRIED_FAILURES as exc:
        logger.info("the token request to %s failed (%s); sending it once more", issuer, type(exc).__name__)
        await anyio.sleep(_RETRY_DELAY)
        retried = True
        payload, status = await _post(http, endpoint, grant_type, form, client_auth, dpop, nonces)
    if dpop is not None and _wants_nonce(payload, status) and nonces.get(endpoint) is not None:
        # RFC 9449 §8: the server wants its nonce in the proof; once, with a new proof (and client auth).
        payload, status = await _post(http, endpoint, grant_type, form, client_auth, dpop, nonces)
    if status != 200 or not isinstance(payload, dict):
        refused = refusal(payload, status, "token_request_failed", "token")
        if not retried:
            raise refused
        raise AuthorizationError(
            refused.error,
            f"{refused.description} (sent again after the connection dropped; the first request may have "
            "used up a single-use grant: sign in again)",
        )
    access_token = payload.get("access_token")
    token_type = payload.get("token_type", "Bearer")
    if (
        not isinstance(access_token, str)
        or not access_token
        or len(access_token) > MAX_ACCESS_TOKEN_CHARS
        or not access_token.isprintable()
    ):
        raise AuthorizationError("invalid_token_response", "the token endpoint sent no usable access_token")
    accepted = ("bearer", "dpop") if dpop is not None else ("bearer",)
    if not isinstance(token_type, str) or token_type.lower() not in accepted:
        raise AuthorizationError(
            "invalid_token_response",
            f"unsupported token_type {printable(token_type, 40)!r} ({' or '.join(accepted)} only)",
        )
    if payload.get("scope") is not None and not isinstance(payload.get("scope"), str):
        raise AuthorizationError("invalid_token_response", "scope must be a string")
    refresh_token = payload.get("refresh_token")
    try:
        token = OAuth2Token(
            {
                "access_token": access_token,
                "token_type": "DPoP" if token_type.lower() == "dpop" else "Bearer",
                "expires_in": payload.get("expires_in"),
                "scope": payload.get("scope"),
                "refresh_token": refresh_token if isinstance(refresh_token, str) else None,
            }
        )
    except (TypeError, ValueError):
        raise AuthorizationError("invalid_token_response", "expires_in is not a number") from None
    return {key: value for key, value in token.items() if value is not None}


def _wants_nonce(payload: Any, status: int) -> bool:
    return status == 400 and isinstance(payload, dict) and payload.get("error") == "use_dpop_nonce"


async def _post(
    http: httpx.AsyncClient,
    endpoint: str,
    grant_type: str,
    form: dict[str, Any],
    client_auth: Any,
    dpop: DPoPKey | None,
    nonces: Nonces,
) -> tuple[Any, int]:
    """One token request: the form encoded and authenticated now (with a fresh DPoP proof), the
    answer read within its bound."""
    from authlib.oauth2.rfc6749.parameters import prepare_token_request

    body = prepare_token_request(grant_type, **form)
    headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
    _url, headers, body = client_auth.prepare("POST", endpoint, headers, body)
    if dpop is not None:
        headers["DPoP"] = dpop.proof("POST", endpoint, nonce=nonces.get(endpoint))
    async with (
        fetch_deadline(http, endpoint),
        http.stream("POST", endpoint, content=body, headers=headers) as response,
    ):
        nonces.learn(endpoint, response)
        return await read_json(response, MAX_TOKEN_RESPONSE_BYTES), response.status_code


def record(
    tokens: dict[str, Any], issuer: str, resource: ProtectedResource, scopes: list[str]
) -> dict[str, Any]:
    """The token record to keep: the tokens, where they came from, and the scopes asked for."""
    return {**tokens, "issuer": issuer, "resource": resource.resource, "requested_scope": scopes}


def refreshed(old: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """The record after a refresh: `fresh` tokens, with what the server did not resend kept from `old`."""
    fresh.setdefault("refresh_token", old["refresh_token"])  # RFC 6749 §6: the old one stays valid
    if "scope" not in fresh and old.get("scope") is not None:
        fresh["scope"] = old["scope"]
    kept: dict[str, Any] = {k: old[k] for k in ("issuer", "resource", "requested_scope") if k in old}
    return {**fresh, **kept}


def expiring(tokens: dict[str, Any]) -> bool:
    """Whether the access token is expired or about to be: within 30 s, or a quarter of a short lifetime."""
    expires_at, lifetime = tokens.get("expires_at"), tokens.get("expires_in")
    if not isinstance(expires_at, (int, float)):
        return False
    leeway = min(30.0, lifetime / 4) if isinstance(lifetime, (int, float)) and lifetime > 0 else 30.0
    return expires_at - leeway < time.time()
