"""Upstream identity providers the proxy knows by name: configuration only, one factory each.

Each factory returns an `UpstreamConfig` with the provider's real endpoints
(or its OpenID discovery URL), sensible default scopes and a claim map onto
the proxy's stable names (`subject`, `login`, `email`, `name`, `groups`).
Nothing here talks to the network. Every factory takes the client id and
secret the provider's console gave you; `scopes=` and `claim_map=` replace
the defaults, and any other `UpstreamConfig` field can be passed by keyword
(`timeout_s=`, `extra_authorize_params=`, `display_name=` ...).

Whatever the provider, the callback URL to register there is the MCP
server's base URL followed by `/auth/callback`, e.g.
`https://mcp.example.com/auth/callback`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._upstream import UpstreamConfig

__all__ = ["auth0", "entra_id", "github", "google", "keycloak", "okta", "oidc"]

_HOST = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+"
)
_SEGMENT = re.compile(r"[A-Za-z0-9._~-]{1,128}")
_OIDC_CLAIMS: Mapping[str, str] = {
    "subject": "sub",
    "login": "preferred_username",
    "email": "email",
    "name": "name",
    "groups": "groups",
}


def _host(value: str, what: str) -> str:
    """A bare host name ("example.okta.com"): no scheme, path or port, so it cannot point elsewhere."""
    if not _HOST.fullmatch(value):
        raise ValueError(
            f"{what} must be a host name such as 'example.com' (no https://, no path): {value!r}"
        )
    return value.lower()


def _segment(value: str, what: str) -> str:
    if not _SEGMENT.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"{what} must be one URL path segment (letters, digits, . _ ~ -): {value!r}")
    return value


def _config(
    defaults: dict[str, Any],
    scopes: Sequence[str] | None,
    claim_map: Mapping[str, str] | None,
    options: Mapping[str, Any],
) -> UpstreamConfig:
    fields = {**defaults, **options}
    if scopes is not None:
        fields["scopes"] = tuple(scopes)
    if claim_map is not None:
        fields["claim_map"] = dict(claim_map)
    return UpstreamConfig(**fields)


def github(
    client_id: str,
    client_secret: str,
    *,
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    **options: Any,
) -> UpstreamConfig:
    """GitHub (no OpenID: the identity comes from `GET https://api.github.com/user`).

    Register at github.com → Settings → Developer settings → OAuth Apps → New
    OAuth App (or GitHub Apps → New GitHub App for an organisation-owned app).
    Homepage URL: your server's base URL; Authorization callback URL: base URL +
    `/auth/callback`. Generate a client secret and pass both values here.

    Default scopes `read:user user:email` (add `repo` and so on when tools call
    the GitHub API with the person's token). The subject is GitHub's numeric
    user id (stable; logins can be renamed); `login`, `name` and `email` (the
    public e-mail, often empty) come from the same answer. An OAuth App's
    tokens do not expire and come without a refresh token; a GitHub App with
    "Expire user authorization tokens" on issues 8-hour tokens and refresh
    tokens, which the proxy then uses.
    """
    return _config(
        {
            "name": "github",
            "display_name": "GitHub",
            "client_id": client_id,
            "client_secret": client_secret,
            "authorization_endpoint": "https://github.com/login/oauth/authorize",
            "token_endpoint": "https://github.com/login/oauth/access_token",
            "userinfo_endpoint": "https://api.github.com/user",
            "scopes": ("read:user", "user:email"),
            "identity_source": "userinfo",
            "claim_map": {"subject": "id", "login": "login", "name": "name", "email": "email"},
            "userinfo_headers": {
                "accept": "application/vnd.github+json",
                "x-github-api-version": "2022-11-28",
            },
        },
        scopes,
        claim_map,
        options,
    )


def google(
    client_id: str,
    client_secret: str,
    *,
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    offline: bool = True,
    **options: Any,
) -> UpstreamConfig:
    """Google (OpenID Connect; the identity comes from the ID token).

    Register at console.cloud.google.com → APIs & Services: set up the OAuth
    consent screen (Google Auth Platform → Branding, Audience), then Clients →
    Create client → Web application, with Authorized redirect URI = base URL +
    `/auth/callback`. Pass the client ID and client secret here.

    Default scopes `openid email profile`; add Google API scopes (such as
    `https://www.googleapis.com/auth/calendar.readonly`) for tools that call
    Google with the person's token. `offline` asks for a refresh token
    (`access_type=offline`, `prompt=consent`: Google only issues one when the
    person consents). Google has no groups claim; the subject is Google's
    `sub`.
    """
    extra = {"access_type": "offline", "prompt": "consent"} if offline else {}
    return _config(
        {
            "name": "google",
            "display_name": "Google",
            "client_id": client_id,
            "client_secret": client_secret,
            "discovery_url": "https://accounts.google.com/.well-known/openid-configuration",
            "issuer": "https://accounts.google.com",
            "scopes": ("openid", "email", "profile"),
            "claim_map": {"subject": "sub", "email": "email", "name": "name"},
            "extra_authorize_params": extra,
        },
        scopes,
        claim_map,
        options,
    )


_ENTRA_MULTI_TENANT = frozenset({"common", "organizations", "consumers"})


def entra_id(
    tenant: str,
    client_id: str,
    client_secret: str,
    *,
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    **options: Any,
) -> UpstreamConfig:
    """Microsoft Entra ID (Azure AD), v2.0 endpoints of one tenant.

    Register at portal.azure.com → Microsoft Entra ID → App registrations →
    New registration; Redirect URI: platform "Web", base URL + `/auth/callback`.
    Then Certificates & secrets → New client secret. `tenant` is the Directory
    (tenant) ID from the app's Overview page (a domain such as
    `contoso.onmicrosoft.com` works too). The multi-tenant aliases `common`,
    `organizations` and `consumers` are refused: their ID tokens name each
    person's own tenant as issuer, which one configuration cannot check.

    Default scopes `openid profile email offline_access` (the last for refresh
    tokens; add `User.Read` for tools that call Microsoft Graph). Groups
    appear in the ID token only when Token configuration → Add groups claim is
    set; `login` is the `preferred_username` (usually the UPN).
    """
    tenant = _segment(tenant, "tenant")
    if tenant.lower() in _ENTRA_MULTI_TENANT:
        raise ValueError(
            f"tenant {tenant!r} is a multi-tenant alias: give the directory (tenant) ID, whose issuer can be checked"
        )
    base = f"https://login.microsoftonline.com/{tenant}/v2.0"
    guid = re.fullmatch(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", tenant)
    return _config(
        {
            "name": "entra_id",
            "display_name": "Microsoft",
            "client_id": client_id,
            "client_secret": client_secret,
            "discovery_url": f"{base}/.well-known/openid-configuration",
            # A domain-named tenant's issuer carries its ID, read from discovery.
            "issuer": base if guid else None,
            "scopes": ("openid", "profile", "email", "offline_access"),
            "claim_map": dict(_OIDC_CLAIMS),
        },
        scopes,
        claim_map,
        options,
    )


def auth0(
    domain: str,
    client_id: str,
    client_secret: str,
    *,
    audience: str | None = None,
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    **options: Any,
) -> UpstreamConfig:
    """Auth0 (OpenID Connect) at `domain`, e.g. `example.eu.auth0.com` or your custom domain.

    Register at manage.auth0.com → Applications → Create Application →
    Regular Web Applications; in Settings, Allowed Callback URLs = base URL +
    `/auth/callback`; under Advanced Settings → Grant Types keep Authorization
    Code and Refresh Token. Pass the Domain, Client ID and Client Secret here.

    Default scopes `openid profile email offline_access`. `audience` (an API
    identifier from Applications → APIs) makes Auth0 issue an access token for
    that API; refresh tokens for it need "Allow Offline Access" on the API.
    Auth0 has no standard groups claim: add one with an Action (a namespaced
    claim such as `https://example.com/groups`) and name it in `claim_map`.
    """
    domain = _host(domain, "domain")
    extra = {"audience": audience} if audience else {}
    return _config(
        {
            "name": "auth0",
            "display_name": "Auth0",
            "client_id": client_id,
            "client_secret": client_secret,
            "discovery_url": f"https://{domain}/.well-known/openid-configuration",
            "issuer": f"https://{domain}/",
            "scopes": ("openid", "profile", "email", "offline_access"),
            "claim_map": {"subject": "sub", "login": "nickname", "email": "email", "name": "name"},
            "extra_authorize_params": extra,
        },
        scopes,
        claim_map,
        options,
    )


def okta(
    domain: str,
    client_id: str,
    client_secret: str,
    *,
    authorization_server_id: str | None = "default",
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    **options: Any,
) -> UpstreamConfig:
    """Okta (OpenID Connect) at `domain`, e.g. `example.okta.com`, through a custom authorization server.

    Register in the Okta Admin Console → Applications → Applications → Create
    App Integration → OIDC - OpenID Connect, Web Application; Sign-in redirect
    URI = base URL + `/auth/callback`; Grant type: Authorization Code and
    Refresh Token; assign the people or groups who may sign in. Pass the
    Client ID and Client secret here.

    `authorization_server_id` is the one under Security → API → Authorization
    Servers ("default" unless you made another); None uses the org
    authorization server. Default scopes `openid profile email offline_access`;
    for a groups claim, add a `groups` claim to the authorization server (or
    the `groups` scope) and it maps to `groups`.
    """
    domain = _host(domain, "domain")
    if authorization_server_id is None:
        issuer = f"https://{domain}"
    else:
        issuer = f"https://{domain}/oauth2/{_segment(authorization_server_id, 'authorization_server_id')}"
    return _config(
        {
            "name": "okta",
            "display_name": "Okta",
            "client_id": client_id,
            "client_secret": client_secret,
            "discovery_url": f"{issuer}/.well-known/openid-configuration",
            "issuer": issuer,
            "scopes": ("openid", "profile", "email", "offline_access"),
            "claim_map": dict(_OIDC_CLAIMS),
        },
        scopes,
        claim_map,
        options,
    )


def keycloak(
    base_url: str,
    realm: str,
    client_id: str,
    client_secret: str,
    *,
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    **options: Any,
) -> UpstreamConfig:
    """Keycloak (OpenID Connect): `base_url` such as `https://sso.example.com` (add `/auth` for
    Keycloak before version 17), and the `realm`.

    Register in the Admin Console → your realm → Clients → Create client:
    OpenID Connect, Client authentication on, Standard flow on; Valid redirect
    URIs = base URL + `/auth/callback`. The secret is on the client's
    Credentials tab.

    Default scopes `openid profile email`; Keycloak issues refresh tokens
    without `offline_access`. Groups reach the ID token through a mapper
    (Client scopes → the client's dedicated scope → Add mapper → Group
    Membership, token claim name `groups`); for realm roles map
    `groups` to `realm_access.roles`.
    """
    realm = _segment(realm, "realm")
    issuer = f"{base_url.rstrip('/')}/realms/{realm}"
    return _config(
        {
            "name": "keycloak",
            "display_name": "Keycloak",
            "client_id": client_id,
            "client_secret": client_secret,
            "discovery_url": f"{issuer}/.well-known/openid-configuration",
            "issuer": issuer,
            "scopes": ("openid", "profile", "email"),
            "claim_map": dict(_OIDC_CLAIMS),
        },
        scopes,
        claim_map,
        options,
    )


def oidc(
    discovery_url: str,
    client_id: str,
    client_secret: str | None,
    *,
    name: str = "oidc",
    scopes: Sequence[str] | None = None,
    claim_map: Mapping[str, str] | None = None,
    **options: Any,
) -> UpstreamConfig:
    """Any OpenID provider, from its discovery document (`https://issuer/.well-known/openid-configuration`).

    Register a confidential web client at the provider with redirect URI =
    base URL + `/auth/callback` and the authorization code grant (and refresh
    token grant, if offered). The endpoints, the issuer and the signing keys
    are read from `discovery_url` on first use; pass `issuer=` to pin the
    issuer the document must name. Default scopes `openid profile email`;
    the claim map reads `sub`, `preferred_username`, `email`, `name`, `groups`.
    """
    return _config(
        {
            "name": name,
            "client_id": client_id,
            "client_secret": client_secret,
            "discovery_url": discovery_url,
            "scopes": ("openid", "profile", "email"),
            "claim_map": dict(_OIDC_CLAIMS),
        },
        scopes,
        claim_map,
        options,
    )
