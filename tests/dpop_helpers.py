"""DPoP in tests: a protected desk that checks proofs, requests that carry them, and hand-made proofs.

`dpop_desk` serves a real protected server (JWTVerifier against a served
`TestIssuer`) on loopback; `mcp_request` is a 2026-07-28 tools/list with the
headers a DPoP client sends. `proof` signs whatever claims and header a
hostile test wants with joserfc, so tests can break one thing at a time.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, Key
from joserfc.jws import JWSRegistry
from starlette.applications import Starlette

from auth_helpers import TestIssuer, serve_at_known_url
from mcp_resolve import MCPServer
from mcp_resolve.auth import AuthSettings, JWTVerifier
from mcp_resolve.auth.dpop import access_token_hash
from mcp_resolve.auth.tokens import DPoPOptions

__all__ = ["dpop_desk", "make_desk", "mcp_request", "proof", "proof_claims"]

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def make_desk(resource: str, issuer: TestIssuer, dpop: DPoPOptions | None = None, **server: Any) -> MCPServer:
    settings: dict[str, Any] = {} if dpop is None else {"dpop": dpop}
    mcp = MCPServer(
        "dpop-desk",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer.base}/jwks"),
        auth=AuthSettings(issuer_url=issuer.base, resource_server_url=resource, **settings),
        **server,
    )

    @mcp.tool()
    async def ping() -> str:
        return "pong"

    return mcp


@asynccontextmanager
async def dpop_desk(issuer: TestIssuer, dpop: DPoPOptions | None = None, **server: Any) -> AsyncIterator[str]:
    """Serve a protected desk checking DPoP as `dpop` says; yields its MCP URL."""

    def app(base: str) -> Starlette:
        return make_desk(f"{base}/mcp", issuer, dpop, **server).streamable_http_app()  # type: ignore[no-any-return]

    async with serve_at_known_url(app) as base:
        yield f"{base}/mcp"


def mcp_request(
    token: str | None, dpop: str | list[str] | None = None, scheme: str = "DPoP"
) -> dict[str, Any]:
    """A tools/list POST (2026-07-28) with `Authorization: <scheme> <token>` and the DPoP header(s)."""
    headers: list[tuple[str, str]] = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ]
    if token is not None:
        headers.append(("authorization", f"{scheme} {token}"))
    for value in [dpop] if isinstance(dpop, str) else dpop or []:
        headers.append(("dpop", value))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    return {"json": body, "headers": headers}


def proof_claims(url: str, token: str | None, **overrides: Any) -> dict[str, Any]:
    """The claims of a good proof for POST `url` with `token`; `overrides` replace (None removes)."""
    claims: dict[str, Any] = {
        "jti": secrets.token_urlsafe(16),
        "htm": "POST",
        "htu": url,
        "iat": int(time.time()),
        "ath": access_token_hash(token) if token is not None else None,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def proof(
    key: Key, url: str, token: str | None, *, header: dict[str, Any] | None = None, **claims: Any
) -> str:
    """A proof signed by `key` (ES256 for an EC key), its public JWK in the header unless `header` says."""
    base = {
        "typ": "dpop+jwt",
        "alg": "ES256" if isinstance(key, ECKey) else "RS256",
        "jwk": key.as_dict(private=False),
    }
    base.update(header or {})
    base = {k: v for k, v in base.items() if v is not None}
    registry = JWSRegistry(algorithms=[base["alg"]], strict_check_header=False)
    registry.header_registry.pop("jwk", None)  # a hostile test may put anything there
    return jwt.encode(base, proof_claims(url, token, **claims), key, registry=registry)
