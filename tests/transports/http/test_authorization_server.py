"""A server that is its own authorization server (`auth_server_provider=`): the endpoints, and our client through them.

The provider is examples/auth_own_users.py, a team's own user table with a
login form. In process (httpx's ASGI transport) the tests read the metadata
and walk the code flow request by request; over real HTTP our `Client`
registers, a person signs in at the form, and the client calls a tool,
refreshes an expired token and steps up for a tool that needs more scope.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from conftest import initialize_request
from mcp_resolve import Client, MCPServer
from mcp_resolve.auth import AccessToken, AuthSettings, TokenVerifier
from mcp_resolve.auth.provider import ConfiguresProtection, ProviderTokenVerifier
from mcp_resolve.client.auth import OAuth
from own_users_helpers import REDIRECT_URI, Person, example, pkce, provider_of, register, served, sign_in

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:8765"


@pytest.fixture
async def app_and_http() -> AsyncIterator[tuple[Any, httpx.AsyncClient]]:
    app = example().app(BASE)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        yield app, http


async def test_the_metadata_names_every_endpoint_at_both_well_known_paths(
    app_and_http: tuple[Any, httpx.AsyncClient],
) -> None:
    _, http = app_and_http
    answer = await http.get(
        "/.well-known/oauth-authorization-server", headers={"origin": "https://x.example"}
    )
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "*"
    document = answer.json()
    assert document["issuer"] == BASE
    assert {
        k: document[k] for k in ("authorization_endpoint", "token_endpoint", "registration_endpoint")
    } == {
        "authorization_endpoint": f"{BASE}/authorize",
        "token_endpoint": f"{BASE}/token",
        "registration_endpoint": f"{BASE}/register",
    }
    assert document["revocation_endpoint"] == f"{BASE}/revoke"
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["authorization_response_iss_parameter_supported"] is True  # the example says it adds iss
    assert document["scopes_supported"] == ["desk", "desk:refund", "offline_access"]
    assert "client_id_metadata_document_supported" not in document
    assert (await http.get("/.well-known/openid-configuration")).json() == document
    prm = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
    assert prm["authorization_servers"] == [BASE] and prm["resource"] == f"{BASE}/mcp"


async def test_an_issuer_with_a_path_serves_everything_under_it() -> None:
    module = example()
    provider = module.OwnUsers(f"{BASE}/as", {})
    mcp = MCPServer(
        "n",
        auth_server_provider=provider,
        auth=AuthSettings(issuer_url=f"{BASE}/as", resource_server_url=f"{BASE}/mcp"),
    )
    app = mcp.streamable_http_app()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as http:
        inserted = await http.get("/.well-known/oauth-authorization-server/as")
        assert inserted.json()["authorization_endpoint"] == f"{BASE}/as/authorize"
        assert (await http.get("/as/.well-known/openid-configuration")).json() == inserted.json()
        assert "registration_endpoint" not in inserted.json()  # registration is off unless enabled
        assert (await http.post("/as/token", data={"grant_type": "refresh_token"})).status_code == 401
        assert (await http.post("/as/register", json={})).status_code == 404
        assert (await http.get("/authorize")).status_code == 404


async def test_the_code_flow_step_by_step_ends_in_a_token_the_mcp_endpoint_accepts(
    app_and_http: tuple[Any, httpx.AsyncClient],
) -> None:
    app, http = app_and_http
    client = await register(http)
    assert client["scope"] == "desk desk:refund offline_access"  # may step up later without registering again
    verifier, challenge = pkce()
    back = await sign_in(http, client["client_id"], challenge, resource=f"{BASE}/mcp")
    assert back["state"] == "st-1" and back["iss"] == BASE
    answer = await http.post(
        "/token",
        data={
            "grant_type": "authorization_code",
            "code": back["code"],
            "code_verifier": verifier,
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT_URI,
            "resource": f"{BASE}/mcp",
        },
    )
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    tokens = answer.json()
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "desk"
    bearer = {"authorization": f"Bearer {tokens['access_token']}"}
    ping = initialize_request({})
    headers = {
        **bearer,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    assert (await http.post("/mcp", json=ping, headers=headers)).status_code == 200
    provider = provider_of(app)
    assert provider.access[tokens["access_token"]].subject == "alice"

    # RFC 7009: the client ends its token; the MCP endpoint refuses it from then on.
    revoked = await http.post(
        "/revoke", data={"token": tokens["access_token"], "client_id": client["client_id"]}
    )
    assert revoked.status_code == 200 and revoked.content == b""
    assert (await http.post("/mcp", json=ping, headers=headers)).status_code == 401


async def test_a_confidential_client_authenticates_only_the_way_it_registered(
    app_and_http: tuple[Any, httpx.AsyncClient],
) -> None:
    _, http = app_and_http
    for method in ("client_secret_post", "client_secret_basic"):
        client = await register(http, token_endpoint_auth_method=method, application_type="web")
        client_id, secret = client["client_id"], client["client_secret"]
        assert len(secret) >= 43 and client["client_secret_expires_at"] == 0
        verifier, challenge = pkce()
        back = await sign_in(http, client_id, challenge)
        form = {
            "grant_type": "authorization_code",
            "code": back["code"],
            "code_verifier": verifier,
            "redirect_uri": REDIRECT_URI,
        }
        basic = {"authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}
        wrong_way = (
            http.post("/token", data=form, headers=basic)
            if method == "client_secret_post"
            else http.post("/token", data={**form, "client_id": client_id, "client_secret": secret})
        )
        refused = await wrong_way
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
        right_way = (
            http.post("/token", data={**form, "client_id": client_id, "client_secret": secret})
            if method == "client_secret_post"
            else http.post("/token", data=form, headers=basic)
        )
        answer = await right_way
        assert answer.status_code == 200, answer.text
        assert secret not in answer.text and secret not in refused.text


class _Protected:
    """A provider that knows its own verifier and settings (as OAuthProxy does): no `auth=` needed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def protection(self) -> tuple[TokenVerifier, AuthSettings]:
        return ProviderTokenVerifier(self.inner), AuthSettings(
            issuer_url=BASE, resource_server_url=f"{BASE}/mcp", required_scopes=["desk"]
        )


async def test_a_provider_that_configures_protection_needs_no_settings() -> None:
    provider = _Protected(example().OwnUsers(BASE, {}))
    assert isinstance(provider, ConfiguresProtection)
    mcp = MCPServer("n", auth_server_provider=provider)  # type: ignore[arg-type]
    assert mcp.auth is not None and mcp.auth.issuer_url == BASE and mcp.auth_server_provider is provider
    assert isinstance(mcp.token_verifier, ProviderTokenVerifier)
    token = AccessToken(token="t", client_id="c", subject="alice", expires_at=None)
    provider.inner.access["t"] = token
    assert await mcp.token_verifier.verify_token("t") == token


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_our_client_signs_in_at_the_form_refreshes_and_steps_up(mode: str, era: str) -> None:
    async with served(token_ttl=1) as (url, provider):
        person = Person()
        auth = OAuth(redirect_handler=person, callback_handler=person)
        async with Client(url, mode=mode, auth=auth) as client:  # type: ignore[arg-type]
            assert client.protocol_version == era
            who = await client.call_tool("whoami", {})
            assert who.content[0].text.startswith("alice (desk")  # type: ignore[union-attr]
            assert len(provider.clients) == 1 and provider.logins == 1

            await anyio.sleep(1.2)  # the access token has expired: the client refreshes, nobody signs in
            who = await client.call_tool("whoami", {})
            assert who.content[0].text.startswith("alice")  # type: ignore[union-attr]
            assert provider.refreshes >= 1 and provider.logins == 1

            # refund needs desk:refund: 403 insufficient_scope, a second sign-in for the wider scope
            refunded = await client.call_tool("refund", {"order_id": "A-1"})
            assert refunded.content[0].text == "alice refunded A-1"  # type: ignore[union-attr]
            assert provider.logins == 2 and person.pages_seen == 2
            assert len(provider.clients) == 1  # the same registration


@pytest.mark.slow
async def test_a_person_without_the_scope_cannot_step_up_into_it() -> None:
    async with served() as (url, provider):
        person = Person("bob", "builder")
        auth = OAuth(redirect_handler=person, callback_handler=person, max_step_ups=1)
        async with Client(url, auth=auth) as client:
            assert (await client.call_tool("whoami", {})).content[0].text.startswith("bob")  # type: ignore[union-attr]
            with pytest.raises(Exception) as refused:
                await client.call_tool("refund", {"order_id": "A-1"})
            assert "scope" in str(refused.value).lower() or "403" in str(refused.value)
        assert all("desk:refund" not in t.scopes for t in provider.access.values())
