"""The upstream presets: each builds a valid configuration with the provider's real endpoints,
documents where to register the app and which callback URL to enter, and refuses inputs that would
point the proxy somewhere else. The generic OpenID preset also signs a person in for real."""

from __future__ import annotations

import inspect
from urllib.parse import urlsplit

import pytest

from mcp_resolve.auth.proxy import presets
from mcp_resolve.auth.proxy._upstream import UpstreamClient, UpstreamConfig
from upstream_helpers import follow_login, upstream_provider

CALLBACK = "http://127.0.0.1:8123/auth/callback"

BUILT = {
    "github": lambda: presets.github("gh-id", "gh-secret"),
    "google": lambda: presets.google("g-id", "g-secret"),
    "entra_id": lambda: presets.entra_id("8eaef023-2b34-4da1-9baa-8bc8c9d6a490", "e-id", "e-secret"),
    "auth0": lambda: presets.auth0("example.eu.auth0.com", "a-id", "a-secret"),
    "okta": lambda: presets.okta("example.okta.com", "o-id", "o-secret"),
    "keycloak": lambda: presets.keycloak("https://sso.example.com", "staff", "k-id", "k-secret"),
    "oidc": lambda: presets.oidc(
        "https://idp.example.com/.well-known/openid-configuration", "i-id", "i-secret"
    ),
}


@pytest.mark.parametrize("name", sorted(BUILT))
def test_each_preset_builds_a_valid_config(name: str) -> None:
    config = BUILT[name]()
    assert isinstance(config, UpstreamConfig)
    assert config.name == name
    assert config.client_secret and config.client_secret not in repr(config)
    urls = [
        config.discovery_url,
        config.authorization_endpoint,
        config.token_endpoint,
        config.userinfo_endpoint,
    ]
    assert all(urlsplit(url).scheme == "https" for url in urls if url)
    assert "subject" in config.claim_map
    if config.identity_source == "id_token":
        assert "openid" in config.scopes and config.discovery_url
    else:
        assert config.userinfo_endpoint


@pytest.mark.parametrize("name", sorted(BUILT))
def test_each_preset_documents_the_console_steps_and_the_callback(name: str) -> None:
    doc = inspect.getdoc(getattr(presets, name)) or ""
    assert "/auth/callback" in doc
    assert "Register" in doc  # where to register the app
    assert "Default scopes" in doc


def test_the_real_endpoints() -> None:
    github = presets.github("id", "secret")
    assert github.authorization_endpoint == "https://github.com/login/oauth/authorize"
    assert github.token_endpoint == "https://github.com/login/oauth/access_token"
    assert github.userinfo_endpoint == "https://api.github.com/user"
    assert github.identity_source == "userinfo" and github.claim_map["subject"] == "id"
    assert github.scopes == ("read:user", "user:email")

    google = presets.google("id", "secret")
    assert google.discovery_url == "https://accounts.google.com/.well-known/openid-configuration"
    assert google.issuer == "https://accounts.google.com"
    assert google.extra_authorize_params == {"access_type": "offline", "prompt": "consent"}
    assert presets.google("id", "secret", offline=False).extra_authorize_params == {}

    tenant = "8eaef023-2b34-4da1-9baa-8bc8c9d6a490"
    entra = presets.entra_id(tenant, "id", "secret")
    assert entra.issuer == f"https://login.microsoftonline.com/{tenant}/v2.0"
    assert (
        entra.discovery_url
        == f"https://login.microsoftonline.com/{tenant}/v2.0/.well-known/openid-configuration"
    )
    assert "offline_access" in entra.scopes
    by_domain = presets.entra_id("contoso.onmicrosoft.com", "id", "secret")
    assert by_domain.issuer is None  # the tenant ID is read from discovery

    assert presets.auth0("Example.EU.auth0.com", "id", "s").issuer == "https://example.eu.auth0.com/"
    assert presets.auth0("x.auth0.com", "id", "s", audience="https://api").extra_authorize_params == {
        "audience": "https://api"
    }
    assert presets.okta("example.okta.com", "id", "s").issuer == "https://example.okta.com/oauth2/default"
    assert presets.okta("example.okta.com", "id", "s", authorization_server_id=None).issuer == (
        "https://example.okta.com"
    )
    kc = presets.keycloak("https://sso.example.com/", "staff", "id", "s")
    assert kc.discovery_url == "https://sso.example.com/realms/staff/.well-known/openid-configuration"


def test_overrides_replace_the_defaults() -> None:
    config = presets.github(
        "id",
        "secret",
        scopes=["read:user", "repo"],
        timeout_s=3,
        claim_map={"subject": "id", "login": "login"},
    )
    assert config.scopes == ("read:user", "repo") and config.timeout_s == 3
    assert dict(config.claim_map) == {"subject": "id", "login": "login"}
    assert (
        presets.keycloak(
            "https://sso.example.com",
            "r",
            "id",
            "s",
            claim_map={"subject": "sub", "groups": "realm_access.roles"},
        ).claim_map["groups"]
        == "realm_access.roles"
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda: presets.entra_id("common", "id", "s"),
        lambda: presets.entra_id("organizations", "id", "s"),
        lambda: presets.entra_id("../evil", "id", "s"),
        lambda: presets.auth0("https://example.auth0.com", "id", "s"),
        lambda: presets.auth0("evil.example/x?", "id", "s"),
        lambda: presets.okta("example.okta.com", "id", "s", authorization_server_id="a/b"),
        lambda: presets.keycloak("http://sso.example.com", "r", "id", "s"),  # http off loopback
        lambda: presets.keycloak("https://sso.example.com", "..", "id", "s"),
        lambda: presets.oidc("http://idp.example.com/.well-known/openid-configuration", "id", "s"),
        lambda: presets.github("id", ""),  # a confidential client needs its secret
    ],
)
def test_inputs_that_would_point_elsewhere_are_refused(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_generic_oidc_preset_signs_a_person_in() -> None:
    async with upstream_provider("oidc", account="bob") as upstream:
        config = presets.oidc(
            upstream.discovery_url,
            upstream.client_id,
            upstream.client_secret,
            name="corp",
            allow_http_loopback=True,
            timeout_s=5,
        )
        client = UpstreamClient(config)
        try:
            url = await client.authorization_url(
                state="st",
                code_challenge="E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                redirect_uri=CALLBACK,
                nonce="nn",
            )
            back = await follow_login(url, CALLBACK)
            tokens = await client.exchange_code(
                code=back["code"],
                code_verifier="dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                redirect_uri=CALLBACK,
            )
            identity = await client.identity(tokens, nonce="nn")
            assert (identity.provider, identity.subject, identity.login) == ("corp", "bob", "bob")
            assert (identity.email, identity.name, identity.groups) == (
                "bob@example.com",
                "Bob Builder",
                ("sales",),
            )
        finally:
            await client.aclose()
