"""Sign-in under faults, against a certified OpenID provider: a failed login is a login failure, never an old server.

The authorization server is `oidc-provider` 9.x (tests/node/oidc_server.mjs on Node 22), which
nobody here wrote; the MCP server is ours on uvicorn, verifying its JWT access tokens through its
JWKS. A proxy on the issuer's URL drops one chosen connection: the token request before the
provider sees it, or after it has answered (the answer is lost, and the single-use code with it),
or the browser's first visit to the authorization endpoint. The person must be sent to the browser
once, the failure must surface as an `AuthorizationError` or be recovered from, and the Client must
never settle on the handshake era (2025-11-25) with a server that speaks 2026-07-28 because sign-in
failed. A metadata fetch that got no answer (the provider's, or the MCP server's own, behind a
proxy too) is a `network_error` naming the URL, never a reason to try the next URL or to take the
MCP server's origin for its authorization server. A step-up the provider will not grant is asked
for once, not `max_step_ups` times.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import pytest

from auth_helpers import serve_at_known_url
from http_helpers import http_server
from mcp_resolve import Client, MCPServer, Resolve
from mcp_resolve.auth import AccessToken, AuthSettings, JWTVerifier, access_token
from mcp_resolve.client.auth import AuthorizationError, HeadlessBrowser, OAuth
from mcp_resolve.errors import MCPError
from oidc_helpers import DroppingProxy, oidc_provider

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

READ, WRITE = "mcp:read", "mcp:write"
MODERN = "2026-07-28"


def protected_server(resource: str, issuer: str) -> MCPServer:
    mcp = MCPServer(
        "Protected desk",
        token_verifier=JWTVerifier(jwks_uri=f"{issuer}/jwks"),
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, required_scopes=(READ,)),
    )

    @mcp.tool()
    async def whoami(who: Annotated[AccessToken, Resolve(access_token)]) -> str:
        """Who the token says is calling."""
        return f"{who.subject} with {' '.join(sorted(who.scopes))}"

    @mcp.tool(scopes=[WRITE])
    async def refund(order_id: str) -> str:
        """Needs the wider scope: the client must step up."""
        return f"refunded {order_id}"

    return mcp


@asynccontextmanager
async def deployment(scopes: str = f"{READ} {WRITE}") -> AsyncIterator[tuple[str, DroppingProxy]]:
    """oidc-provider behind a dropping proxy (the issuer's URL), and the MCP server it protects."""
    proxy = DroppingProxy()
    async with (
        proxy.serving() as issuer,
        serve_at_known_url(
            lambda base: protected_server(f"{base}/mcp", issuer).streamable_http_app()
        ) as base,
        oidc_provider(f"{base}/mcp", issuer, scopes=scopes) as (announced, port),
    ):
        assert announced == issuer
        proxy.upstream_port = port
        yield f"{base}/mcp", proxy


class Person:
    """The redirect handler: a person sent to the browser, who logs in at once (counted)."""

    def __init__(self) -> None:
        self.browser = HeadlessBrowser()
        self.visits = 0

    async def __call__(self, url: str) -> None:
        self.visits += 1
        await self.browser(url)

    def oauth(self, **options: Any) -> OAuth:
        return OAuth(redirect_handler=self, callback_handler=self.browser, **options)


async def whoami(client: Client) -> str:
    result = await client.call_tool("whoami", {})
    assert result.is_error is not True
    return result.content[0].text  # type: ignore[union-attr, no-any-return]


async def test_the_provider_signs_the_client_in_and_widens_its_scope() -> None:
    """The baseline, no fault: one login, the modern era, a step-up that the provider grants."""
    async with deployment() as (url, proxy):
        person = Person()
        async with Client(url, auth=person.oauth()) as client:
            assert client.protocol_version == MODERN
            assert await whoami(client) == f"alice with {READ}"
            refunded = await client.call_tool("refund", {"order_id": "A-1"})
            assert refunded.content[0].text == "refunded A-1"  # type: ignore[union-attr]
        assert person.visits == 2
        assert proxy.seen.count(("POST", "/reg")) == 1


async def test_a_token_request_dropped_before_the_provider_saw_it_is_sent_once_more() -> None:
    async with deployment() as (url, proxy):
        proxy.drop_next("POST", "/token", "before")
        person = Person()
        async with Client(url, auth=person.oauth()) as client:
            assert client.protocol_version == MODERN
            assert await whoami(client) == f"alice with {READ}"
        assert person.visits == 1
        assert proxy.dropped == [("POST", "/token", "before")]
        assert proxy.seen.count(("POST", "/token")) == 2


async def test_a_token_answer_lost_on_the_way_back_fails_the_login_not_the_era() -> None:
    """The provider used up the code; the retry is refused. One visit, an AuthorizationError, no fallback."""
    async with deployment() as (url, proxy):
        proxy.drop_next("POST", "/token", "after")
        person = Person()
        oauth = person.oauth()
        with pytest.raises(AuthorizationError) as caught:
            async with Client(url, auth=oauth):
                pass
        assert caught.value.error == "invalid_grant"
        assert "sign in again" in caught.value.description
        assert person.visits == 1
        assert proxy.seen.count(("POST", "/token")) == 2

        async with Client(url, auth=oauth) as client:  # signing in again works, on the modern era
            assert client.protocol_version == MODERN
            assert await whoami(client) == f"alice with {READ}"
        assert person.visits == 2
        assert proxy.seen.count(("POST", "/reg")) == 1  # the registration outlived the failed login


async def test_a_redirect_handler_that_fails_is_called_once() -> None:
    """The browser's visit to the authorization endpoint breaks (an httpx error inside the handler)."""
    async with deployment() as (url, proxy):
        proxy.drop_next("GET", "/auth", "before")
        person = Person()
        oauth = person.oauth()
        with pytest.raises(AuthorizationError) as caught:
            async with Client(url, auth=oauth):
                pass
        assert caught.value.error == "redirect_failed"
        assert "RemoteProtocolError" in caught.value.description
        assert person.visits == 1
        assert ("POST", "/token") not in proxy.seen

        async with Client(url, auth=oauth) as client:
            assert client.protocol_version == MODERN
        assert person.visits == 2


async def test_a_registration_that_got_no_answer_is_an_authorization_error() -> None:
    """Dynamic registration's connection drops: a `network_error` naming the endpoint, not a fallback."""
    async with deployment() as (url, proxy):
        proxy.drop_next("POST", "/reg", "before")
        person = Person()
        oauth = person.oauth()
        with pytest.raises(AuthorizationError) as caught:
            async with Client(url, auth=oauth):
                pass
        assert caught.value.error == "network_error"
        assert caught.value.description.startswith(f"could not reach {proxy.url}/reg: ")
        assert person.visits == 0
        assert proxy.seen.count(("POST", "/reg")) == 1

        async with Client(url, auth=oauth) as client:
            assert client.protocol_version == MODERN
        assert person.visits == 1


async def test_an_authorization_server_metadata_fetch_that_got_no_answer_is_a_network_error() -> None:
    """The connection for the provider's metadata drops: a `network_error` naming the URL, at once.

    Not "no metadata here, try the next URL" (had the next one dropped too, the person would have been
    told the provider publishes no metadata: `metadata_not_found`).
    """
    async with deployment() as (url, proxy):
        first, second = "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"
        proxy.drop_next("GET", first, "before")
        proxy.drop_next("GET", second, "before")
        person = Person()
        oauth = person.oauth()
        with pytest.raises(AuthorizationError) as caught:
            async with Client(url, auth=oauth):
                pass
        assert caught.value.error == "network_error"
        assert caught.value.description.startswith(f"could not reach {proxy.url}{first}: RemoteProtocolError")
        assert person.visits == 0
        assert proxy.seen == [("GET", first)]  # no answer is not "not here": the next URL is not tried

        async with Client(url, auth=oauth) as client:
            assert client.protocol_version == MODERN
            assert await whoami(client) == f"alice with {READ}"
        assert person.visits == 1


@asynccontextmanager
async def behind_a_proxy() -> AsyncIterator[tuple[str, DroppingProxy]]:
    """The MCP server behind a dropping proxy (its public URL, and the resource), oidc-provider as is."""
    proxy = DroppingProxy()
    async with proxy.serving() as front:
        resource = f"{front}/mcp"
        async with (
            oidc_provider(resource) as (issuer, _port),
            serve_at_known_url(
                lambda _base: protected_server(resource, issuer).streamable_http_app()
            ) as base,
        ):
            proxy.upstream_port = int(base.rsplit(":", 1)[1])
            yield resource, proxy


async def test_resource_metadata_that_got_no_answer_is_no_reason_to_fall_back() -> None:
    """The fallback for a server without metadata (its origin is the issuer) follows a 404, not a dropped
    connection: otherwise whoever can cut a connection chooses where the person signs in."""
    async with behind_a_proxy() as (url, proxy):
        document = "/.well-known/oauth-protected-resource/mcp"  # the challenge's URL, and the well-known one
        # Each place the metadata may be drops a connection (the URL above counts twice: once as the
        # challenge's, once as the well-known one). Before, the client moved on through all three, then
        # asked the MCP server's origin for authorization server metadata.
        for path in (document, document, "/.well-known/oauth-protected-resource"):
            proxy.drop_next("GET", path, "before")
        for attempt in (1, 2):  # two logins, each meeting one dropped connection and stopping there
            person = Person()
            oauth = person.oauth()
            with pytest.raises(AuthorizationError) as caught:
                async with Client(url, auth=oauth):
                    pass
            assert caught.value.error == "network_error"
            assert caught.value.description.startswith(f"could not reach {proxy.url}{document}: ")
            assert person.visits == 0
            # nothing more, and nothing asked of the MCP server's origin as if it were an issuer
            assert proxy.seen == [("POST", "/mcp"), ("GET", document)] * attempt

        async with Client(url, auth=oauth) as client:
            assert client.protocol_version == MODERN
            assert await whoami(client) == f"alice with {READ}"
        assert person.visits == 1
        assert {path for _, path in proxy.seen if path.startswith("/.well-known/")} == {document}


async def test_a_step_up_the_provider_will_not_grant_is_asked_for_once() -> None:
    """The provider grants mcp:read only: after one step-up that comes back without mcp:write, stop."""
    async with deployment(scopes=READ) as (url, _proxy):
        person = Person()
        async with Client(url, auth=person.oauth(max_step_ups=3)) as client:
            assert await whoami(client) == f"alice with {READ}"
            with pytest.raises(AuthorizationError) as caught:
                await client.call_tool("refund", {"order_id": "A-1"})
            assert caught.value.error == "insufficient_scope"
            assert WRITE in caught.value.description
            assert person.visits == 2  # the login and one step-up, not three
            assert await whoami(client) == f"alice with {READ}"  # the connection goes on


async def test_a_probe_that_got_no_answer_does_not_fall_back_to_the_handshake() -> None:
    """A dropped connection says nothing about the server's era: the Client fails, it does not downgrade."""
    mcp = MCPServer("Open desk")

    @mcp.tool()
    async def ping() -> str:
        return "pong"

    proxy = DroppingProxy()
    async with http_server(mcp.streamable_http_app()) as base, proxy.serving() as front:
        proxy.upstream_port = int(base.rsplit(":", 1)[1])
        proxy.drop_next("POST", "/mcp", "before")
        with pytest.raises(MCPError) as caught:
            async with Client(f"{front}/mcp"):
                pass
        assert "HTTP request failed" in caught.value.message
        assert proxy.seen == [("POST", "/mcp")]  # no initialize after the failed probe
        async with Client(f"{front}/mcp") as client:
            assert client.protocol_version == MODERN
