"""End to end, nothing mocked: our Client logs in to our protected server through a real authorization server.

The authorization server is Authlib's (tests/authlib_server.py) on loopback;
the MCP server is an `MCPServer` with a `JWTVerifier` fetching that server's
JWKS. The client discovers everything from the 401 (protected resource
metadata, authorization server metadata), registers itself dynamically,
logs in through the headless browser with PKCE and the `resource`
parameter, checks `iss`, refreshes an expired token without a new login,
and steps up when a tool needs a wider scope. The same client also logs in
to the official SDK's server (`mcp` 2.3.0) protected by a token verifier.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from auth_helpers import serve_at_known_url
from authlib_server import AuthlibServer
from mcp_resolve import Client
from mcp_resolve.client.auth import AuthorizationError, FileTokenStorage, HeadlessBrowser, OAuth
from oauth_helpers import READ, WRITE, deployment, headless

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_login_step_up_and_refresh_against_our_server(mode: str, era: str) -> None:
    async with deployment(token_ttl=3600) as (authz, url):
        auth = headless()
        async with Client(url, mode=mode, auth=auth) as client:  # type: ignore[arg-type]
            assert client.protocol_version == era
            assert {t.name for t in (await client.list_tools()).tools} == {"whoami", "refund"}
            who = await client.call_tool("whoami", {})
            assert who.content[0].text == f"alice with {READ} offline_access"  # type: ignore[union-attr]
            assert len(authz.authorization_requests) == 1 and authz.registrations == 1
            first = authz.authorization_requests[0]
            assert first["resource"] == url and first["code_challenge_method"] == "S256"
            assert first["scope"].split() == [READ, "offline_access"]

            refunded = await client.call_tool("refund", {"order_id": "A-1"})  # 403 insufficient_scope
            assert refunded.content[0].text == "refunded A-1"  # type: ignore[union-attr]
            assert len(authz.authorization_requests) == 2
            assert set(authz.authorization_requests[1]["scope"].split()) == {READ, WRITE, "offline_access"}
            assert authz.registrations == 1  # the registration is reused for the second login

            # Expire the access token on the client's side: the next request refreshes it, no new login.
            auth._tokens[url]["expires_at"] = 0  # type: ignore[index]
            who = await client.call_tool("whoami", {})
            assert who.content[0].text == f"alice with {READ} {WRITE} offline_access"  # type: ignore[union-attr]
            assert authz.token_requests.count("refresh_token") == 1
            assert len(authz.authorization_requests) == 2


async def test_a_token_the_server_refuses_is_refreshed_on_the_401_without_a_login() -> None:
    async with deployment() as (authz, url):
        auth = headless()
        async with Client(url, auth=auth) as client:
            assert (await client.call_tool("whoami", {})).is_error is not True
            # The server stops accepting the token (revoked, or expired by its clock): 401 invalid_token.
            auth._tokens[url]["access_token"] = "revoked-by-the-server"  # type: ignore[index]
            assert (await client.call_tool("whoami", {})).is_error is not True
        assert len(authz.authorization_requests) == 1
        assert authz.token_requests == ["authorization_code", "refresh_token"]


async def test_tokens_on_disk_spare_the_next_process_a_login(tmp_path: Path) -> None:
    path = tmp_path / "state" / "tokens.json"
    async with deployment() as (authz, url):
        async with Client(url, auth=headless(storage=FileTokenStorage(path))) as client:
            await client.list_tools()
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        async with Client(url, auth=headless(storage=FileTokenStorage(path))) as client:
            await client.list_tools()
        assert len(authz.authorization_requests) == 1 and authz.registrations == 1
        saved = json.loads(path.read_text())
        assert set(saved) == {f"tokens {url}", f"client {authz.issuer}"}


async def test_a_wrong_iss_in_the_redirect_stops_the_login_before_the_token_request() -> None:
    async with deployment() as (authz, url):
        real_issuer = authz.issuer

        class Impostor(HeadlessBrowser):
            async def __call__(self, url: str) -> None:
                await super().__call__(url)
                response = self._responses[-1]
                self._responses[-1] = type(response)(
                    {**response.params, "iss": real_issuer + "/"}  # a normalization-equivalent is still wrong
                )

        browser = Impostor()
        with pytest.raises(AuthorizationError) as caught:
            async with Client(url, auth=OAuth(redirect_handler=browser, callback_handler=browser)):
                pass
        assert caught.value.error == "iss_mismatch"
        assert "authorization_code" not in authz.token_requests


async def test_the_same_client_logs_in_to_the_official_sdk_server() -> None:
    from official_auth_server import official_protected_app

    authz = AuthlibServer(scopes=[READ, WRITE])
    async with serve_at_known_url(lambda base: authz.serve(base, f"{base}/unused")) as issuer:

        def make(base: str) -> Any:
            authz.resource = f"{base}/mcp"
            return official_protected_app(issuer, authz.resource, f"{issuer}/jwks", [READ])

        async with serve_at_known_url(make) as base:
            for mode in ("auto", "legacy"):
                async with Client(f"{base}/mcp", mode=mode, auth=headless()) as client:  # type: ignore[arg-type]
                    result = await client.call_tool("whoami", {})
                    assert result.content[0].text == "alice"  # type: ignore[union-attr]
            assert len(authz.authorization_requests) == 2  # one login per Client(auth=...) object


async def test_a_slow_login_does_not_make_a_modern_server_look_legacy() -> None:
    """The auto mode's probe has a timeout; minutes on a consent page must not count against it."""
    async with deployment() as (_authz, url):
        browser = HeadlessBrowser()

        async def slow_person(authorization_url: str) -> None:
            await anyio.sleep(3.0)  # longer than the probe's timeout, which is still generous on a busy host
            await browser(authorization_url)

        auth = OAuth(redirect_handler=slow_person, callback_handler=browser)
        async with Client(url, auth=auth, probe_timeout=2.0) as client:
            assert client.protocol_version == "2026-07-28"
        assert auth.time_with_person() >= 3.0
