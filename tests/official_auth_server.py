"""The official SDK's server (`mcp` 2.3.0) protected by a token verifier: the peer our OAuth client must log in to.

The verifier is the SDK's `TokenVerifier` protocol, implemented with joserfc
against the authorization server's JWKS (fetched over HTTP): issuer, audience
(the RFC 8707 resource), expiry and signature. Everything else (the 401
challenge, the protected resource metadata route, the scope check) is the
SDK's own.
"""

from __future__ import annotations

from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

__all__ = ["official_protected_app"]


class JWKSVerifier:
    def __init__(self, jwks_uri: str, issuer: str, audience: str) -> None:
        self.jwks_uri, self.issuer, self.audience = jwks_uri, issuer, audience
        self._keys: KeySet | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        if self._keys is None:
            async with httpx.AsyncClient() as http:
                self._keys = KeySet.import_key_set((await http.get(self.jwks_uri)).json())
        try:
            decoded = jwt.decode(token, self._keys, algorithms=["ES256"])
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.audience},
                exp={"essential": True},
            ).validate(decoded.claims)
        except (JoseError, ValueError):
            return None
        claims: dict[str, Any] = decoded.claims
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id")),
            scopes=str(claims.get("scope") or "").split(),
            expires_at=claims.get("exp"),
            resource=self.audience,
            subject=claims.get("sub"),
            claims=claims,
        )


def official_protected_app(issuer: str, resource: str, jwks_uri: str, scopes: list[str]) -> Any:
    mcp = MCPServer(
        "official-protected",
        token_verifier=JWKSVerifier(jwks_uri, issuer, resource),
        auth=AuthSettings(
            issuer_url=issuer, resource_server_url=resource, required_scopes=scopes, validate_token_resource=True
        ),
    )

    @mcp.tool()
    def whoami() -> str:
        """The subject of the caller's token."""
        token = get_access_token()
        return token.subject if token is not None and token.subject else "nobody"

    return mcp.streamable_http_app()
