"""DPoP end to end: our Client, through our server requiring DPoP, against oidc-provider issuing bound tokens.

oidc-provider 9.13 (a certified OpenID provider, on Node 22 on loopback) is
the authorization server, with DPoP on and a nonce demanded at its token
endpoint; our server requires DPoP and demands nonces of its own. Nothing is
mocked: the Client logs in (HeadlessBrowser plays the person), answers both
`use_dpop_nonce` challenges, and every call it makes carries a fresh proof
of the key its token is bound to, and so does the refresh of its (bound) refresh token. A refresh keeps the binding.
"""

from __future__ import annotations

from typing import Annotated

import httpx
import pytest

from auth_helpers import serve_at_known_url
from mcp_resolve import Client, MCPServer, Resolve
from mcp_resolve.auth import AccessToken, AuthSettings, JWTVerifier, access_token
from mcp_resolve.auth.tokens import DPoPOptions
from mcp_resolve.client.auth import HeadlessBrowser, MemoryTokenStorage, OAuth
from mcp_resolve.client.auth.dpop import DPoPKey
from oidc_helpers import DroppingProxy, oidc_provider

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

NONCE_SECRET = "dpop-interop-nonce-secret-0123456789abcdef"


def dpop_server(resource: str, issuer: str) -> MCPServer:
    mcp = MCPServer(
        "DPoP desk",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer}/jwks"),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            required_scopes=("mcp:read",),
            dpop=DPoPOptions(required=True, nonces=True, nonce_secret=NONCE_SECRET),
        ),
    )

    @mcp.tool()
    async def whoami(who: Annotated[AccessToken, Resolve(access_token)]) -> str:
        """Who calls, and the key their token is bound to."""
        return f"{who.subject} bound to {who.dpop_jkt}"

    return mcp


async def test_our_client_gets_a_bound_token_from_oidc_provider_and_proves_it_to_our_server() -> None:
    proxy = DroppingProxy()  # a plain pass-through here: it gives the provider a URL known in advance
    async with (
        proxy.serving() as issuer,
        serve_at_known_url(lambda base: dpop_server(f"{base}/mcp", issuer).streamable_http_app()) as base,
        oidc_provider(f"{base}/mcp", issuer, dpop_nonces=True) as (_announced, port),
    ):
        proxy.upstream_port = port
        url = f"{base}/mcp"
        storage = MemoryTokenStorage()
        browser = HeadlessBrowser()
        oauth = OAuth(
            redirect_handler=browser, callback_handler=browser, storage=storage, scopes=["mcp:read"]
        )
        async with Client(url, auth=oauth) as client:
            first = await client.call_tool("whoami", {})
            old_token = ((await storage.get(f"tokens {url}")) or {})["access_token"]
            oauth._tokens[url]["expires_at"] = 0  # type: ignore[index]  # due: refreshed before the next call
            second = await client.call_tool("whoami", {})
        tokens = (await storage.get(f"tokens {url}")) or {}
        assert tokens["token_type"] == "DPoP"
        key = DPoPKey.from_record(((await storage.get("dpop key")) or {}).get("jwk"))
        assert key is not None
        expected = f"alice bound to {key.thumbprint}"
        assert first.content[0].text == expected  # type: ignore[union-attr]
        assert second.content[0].text == expected  # type: ignore[union-attr]
        # a nonce challenge, then the code; the refresh (a bound refresh token: the same key's proof)
        assert proxy.seen.count(("POST", "/token")) == 3
        assert tokens["access_token"] != old_token and tokens.get("refresh_token")

        # The token alone is worth nothing: as Bearer, or without a proof, our server refuses it.
        async with httpx.AsyncClient() as http:
            for scheme in ("Bearer", "DPoP"):
                refused = await http.post(
                    url, json={}, headers={"authorization": f"{scheme} {tokens['access_token']}"}
                )
                assert refused.status_code == 401
