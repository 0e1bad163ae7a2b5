"""The operator's policies on the proxy, and the rules a review found missing, each pinned."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import AnyUrl

from mcp_resolve import Client, MCPServer
from mcp_resolve.auth import AuthSettings
from mcp_resolve.auth.provider import AuthorizeError, OAuthClientInformationFull
from mcp_resolve.auth.proxy import OAuthProxy, UpstreamIdentity
from mcp_resolve.auth.redirect_uris import check_redirect_uri, redirect_uri_matches
from mcp_resolve.client.auth import AuthorizationError, OAuth
from proxy_helpers import CORP, ConsentingBrowser, proxied_desk

pytestmark = pytest.mark.anyio


def test_the_proxy_announces_iss_in_its_metadata() -> None:
    from mcp_resolve.transports.http._auth.authorization_server import authorization_server, metadata_document

    mcp = MCPServer(
        "Desk", auth_server_provider=OAuthProxy(upstream=CORP, base_url="https://desk.example.com")
    )
    document = metadata_document(authorization_server(mcp))  # type: ignore[arg-type]
    assert document["authorization_response_iss_parameter_supported"] is True


def test_no_consent_page_only_for_clients_the_operator_registers() -> None:
    with pytest.raises(ValueError, match="confused deputy"):
        OAuthProxy(upstream=CORP, base_url="https://desk.example.com", consent=False)
    OAuthProxy(
        upstream=CORP,
        base_url="https://desk.example.com",
        consent=False,
        client_registration=False,
        client_id_metadata_documents=False,
    )


def test_settings_that_contradict_the_proxy_are_refused() -> None:
    proxy = OAuthProxy(upstream=CORP, base_url="https://desk.example.com")
    elsewhere = AuthSettings(
        issuer_url="https://auth.example.com", resource_server_url="https://desk.example.com/mcp"
    )
    with pytest.raises(ValueError, match="another issuer or resource"):
        MCPServer("Desk", auth_server_provider=proxy, auth=elsewhere)


def test_a_client_that_registered_no_scope_may_ask_for_none() -> None:
    """The official SDK's rule: a registration names what its client may ask for."""
    client = OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("https://app.example/cb")])
    assert client.validate_scope(None) is None
    with pytest.raises(AuthorizeError):
        client.validate_scope("admin")
    assert OAuthClientInformationFull(client_id="c", scope="read write").validate_scope("read") == ["read"]


@pytest.mark.parametrize(
    "uri", ["javascript:alert(1)", "data:text/html,x", "http://evil.example/cb", "https://a.example/cb#x"]
)
def test_redirect_uris_no_client_may_register(uri: str) -> None:
    assert check_redirect_uri(uri, None) is not None


def test_redirect_uris_match_after_normalisation_and_on_any_loopback_port() -> None:
    assert redirect_uri_matches("https://app.example", "https://app.example/")
    assert redirect_uri_matches("http://127.0.0.1:5173/cb", "http://127.0.0.1/cb")
    assert not redirect_uri_matches("https://app.example/cb2", "https://app.example/cb")
    assert not redirect_uri_matches("http://127.0.0.1:5173/cb", "http://localhost/cb")


@pytest.mark.slow
async def test_allow_decides_who_may_sign_in() -> None:
    """`allow=` sees the upstream identity before any code is made: bob is turned away, alice is not."""
    seen: list[str] = []

    async def staff_only(who: UpstreamIdentity) -> bool:
        seen.append(who.subject)
        return "staff" in who.groups

    for account, admitted in (("bob", False), ("alice", True)):
        async with proxied_desk("oidc", account=account, allow=staff_only) as (_upstream, proxy, url):
            person = ConsentingBrowser()
            auth = OAuth(redirect_handler=person, callback_handler=person)
            if admitted:
                async with Client(url, auth=auth) as client:
                    who: Any = await client.call_tool("whoami", {})
                    assert who.content[0].text.startswith("google:alice")
            else:
                with pytest.raises(AuthorizationError, match="access_denied"):
                    async with Client(url, auth=auth) as client:
                        await client.call_tool("whoami", {})
            await proxy.aclose()
    assert seen == ["bob", "alice"]


async def test_a_registration_is_bounded_in_size() -> None:
    """Anyone may register and every registration is kept: each one is small."""
    import httpx

    mcp = MCPServer(
        "Desk", auth_server_provider=OAuthProxy(upstream=CORP, base_url="https://desk.example.com")
    )
    transport = httpx.ASGITransport(app=mcp.streamable_http_app())
    async with httpx.AsyncClient(transport=transport, base_url="https://desk.example.com") as http:
        base = {"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"}
        assert (await http.post("/register", json=base)).status_code == 201
        heavy = {**base, "contacts": [f"person{i}@example.com" for i in range(300)]}
        refused = await http.post("/register", json=heavy)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_client_metadata"
        named = await http.post("/register", json={**base, "client_name": "x" * 201})
        assert named.status_code == 400 and "client_name" in named.json()["error_description"]
