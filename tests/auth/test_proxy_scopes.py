"""Which scopes a sign-in through the proxy asks the person for: only this server's, never more."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import AnyUrl

from mcp_resolve.auth.provider import AuthorizationParams, OAuthClientInformationFull
from mcp_resolve.auth.proxy import OAuthProxy
from proxy_helpers import CORP

pytestmark = pytest.mark.anyio

CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def _proxy(**options: object) -> OAuthProxy:
    return OAuthProxy(upstream=CORP, base_url="https://desk.example.com", **options)  # type: ignore[arg-type]


async def _asked(
    proxy: OAuthProxy, scopes: list[str] | None, registered: str | None = None
) -> tuple[str, ...]:
    client = OAuthClientInformationFull(
        client_id="c1", redirect_uris=[AnyUrl("http://127.0.0.1/cb")], scope=registered
    )
    params = AuthorizationParams(
        state="s",
        scopes=scopes,
        code_challenge=CHALLENGE,
        redirect_uri=AnyUrl("http://127.0.0.1/cb"),
        redirect_uri_provided_explicitly=True,
        resource="https://desk.example.com/mcp",
    )
    consent = await proxy.authorize(client, params)
    txn = parse_qs(urlsplit(consent).query)["txn"][0]
    view = await proxy.consent_view(txn)
    assert view is not None
    return view.scopes


async def test_scopes_the_server_does_not_have_are_left_out() -> None:
    proxy = _proxy(scopes=["desk:read", "desk:write"], required_scopes=["desk:read"])
    assert await _asked(proxy, ["desk:write", "admin", "offline_access"]) == ("desk:write",)


async def test_a_client_asking_nothing_gets_the_least() -> None:
    proxy = _proxy(scopes=["desk:read", "desk:write"], required_scopes=["desk:read"])
    assert await _asked(proxy, None) == ("desk:read",)
    assert await _asked(proxy, ["admin"]) == ("desk:read",)
    assert await _asked(_proxy(scopes=["desk:read", "desk:write"]), None) == ()


async def test_a_server_offering_no_scopes_grants_none() -> None:
    """Scopes record what the person approved, not what they are entitled to: anyone who can sign in
    upstream can press Approve, so a scope the server does not offer is never granted."""
    assert await _asked(_proxy(), ["refunds:admin", "anything"]) == ()
    assert await _asked(_proxy(required_scopes=["desk"]), ["refunds:admin"]) == ("desk",)
