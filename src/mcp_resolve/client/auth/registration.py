"""The client's identity at an authorization server, and dynamic client registration (RFC 7591).

A `Registration` is what the token endpoint needs to know who is asking: the
client id, its secret if it has one, and how it authenticates. It comes
from configuration, from a Client ID Metadata Document URL, or from
registering: `register` asks the authorization server for an identity and
checks the answer is one this client can use, then remembers it in the
token storage so the next run does not register again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from .discovery import fetch_deadline, is_secure_url, read_json
from .errors import AuthorizationError, printable, refusal
from .storage import TokenStorage

__all__ = [
    "HTTP_AUTH_METHODS",
    "Registration",
    "choose_method",
    "register",
    "stored_registration",
    "valid_metadata_url",
]

logger = logging.getLogger("mcp_resolve.client.auth")

HTTP_AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
"""The client authentications a registered client can use (`private_key_jwt` is configured, not registered)."""
MAX_REGISTRATION_BYTES = 64 * 1024
"""A registration response is a few hundred bytes; anything near this is not one."""


@dataclass
class Registration:
    """The client identity used at one authorization server."""

    client_id: str
    client_secret: str | None = None
    method: str = "none"
    redirect_uris: tuple[str, ...] = ()
    secret_expires_at: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.method,
            "redirect_uris": list(self.redirect_uris),
            "client_secret_expires_at": self.secret_expires_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Registration | None:
        client_id = data.get("client_id")
        if not isinstance(client_id, str):
            return None
        return cls(
            client_id,
            data.get("client_secret") if isinstance(data.get("client_secret"), str) else None,
            str(data.get("token_endpoint_auth_method") or "none"),
            tuple(u for u in data.get("redirect_uris") or () if isinstance(u, str)),
            int(data.get("client_secret_expires_at") or 0),
        )


def choose_method(metadata: dict[str, Any], has_secret: bool) -> str:
    """How a configured client authenticates: the first the server supports, Basic before post."""
    supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    preference = ("client_secret_basic", "client_secret_post") if has_secret else ("none",)
    for method in preference:
        if method in supported:
            return method
    return preference[0]


def valid_metadata_url(url: str) -> bool:
    """Whether `url` can be a client id (Client ID Metadata Documents): https, with a path."""
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


async def stored_registration(storage: TokenStorage, issuer: str) -> Registration | None:
    """The registration remembered for `issuer`, if any."""
    stored = await storage.get(f"client {issuer}")
    return Registration.from_json(stored) if stored else None


async def register(
    http: httpx.AsyncClient,
    storage: TokenStorage,
    issuer: str,
    metadata: dict[str, Any],
    redirect_uri: str,
    *,
    client_name: str,
    client_metadata: dict[str, Any],
) -> Registration:
    """Dynamic client registration (RFC 7591), as a native app when the redirect is to this machine."""
    endpoint = metadata.get("registration_endpoint")
    if not isinstance(endpoint, str):
        raise AuthorizationError(
            "registration_unavailable",
            f"{issuer} offers no dynamic registration and no client_id was configured for it",
        )
    supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    method = next((m for m in HTTP_AUTH_METHODS if m in supported), None)
    if method is None:
        raise AuthorizationError(
            "registration_unavailable",
            f"{issuer} supports none of the client authentications {HTTP_AUTH_METHODS}",
        )
    native = is_secure_url(redirect_uri) and not redirect_uri.startswith("https://")
    request = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native" if native else "web",
        **client_metadata,
    }
    async with (
        fetch_deadline(http, endpoint),
        http.stream("POST", endpoint, json=request, headers={"accept": "application/json"}) as response,
    ):
        payload = await read_json(response, MAX_REGISTRATION_BYTES)
        status = response.status_code
    if status not in (200, 201) or not isinstance(payload, dict):
        raise refusal(payload, status, "registration_failed", "registration")
    client_id, secret = payload.get("client_id"), payload.get("client_secret")
    assigned = payload.get("token_endpoint_auth_method") or method
    if (
        not isinstance(client_id, str)
        or not client_id
        or (secret is not None and not isinstance(secret, str))
    ):
        raise AuthorizationError("registration_failed", "the registration response has no usable client_id")
    if assigned not in HTTP_AUTH_METHODS or (assigned != "none" and not secret):
        raise AuthorizationError(
            "registration_failed",
            f"the server registered us for {printable(assigned, 40)!r}, which this client cannot use",
        )
    expires = payload.get("client_secret_expires_at")
    registration = Registration(
        client_id, secret, assigned, (redirect_uri,), int(expires) if isinstance(expires, int) else 0
    )
    await storage.set(f"client {issuer}", registration.to_json())
    logger.info("registered with %s", issuer)
    return registration
