"""`OAuthProxy` presets: the proxy in front of one well-known provider, configured from a few values.

Each is an `OAuthProxy` whose upstream comes from `presets` (endpoints,
scopes, claim map: configuration only), so everything `OAuthProxy` takes
(`scopes=`, `store=`, `consent=` ...) works on a preset too. `upstream_scopes`
are what the proxy asks the provider for (what a tool's `upstream_token` can
do there); `scopes` are this MCP server's own. `upstream_options` reach
`UpstreamConfig` unchanged (`timeout_s`, `claim_map`, `extra_authorize_params`).
The console steps for each provider are in `presets` and docs/auth-proxy.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import presets
from ._proxy import OAuthProxy

__all__ = [
    "Auth0Provider",
    "EntraIDProvider",
    "GitHubProvider",
    "GoogleProvider",
    "KeycloakProvider",
    "OIDCProxy",
    "OktaProvider",
]


def _upstream(options: Mapping[str, Any] | None, scopes: Sequence[str] | None) -> dict[str, Any]:
    return {**(options or {}), "scopes": scopes}


class GitHubProvider(OAuthProxy):
    """Sign in with GitHub. The identity comes from GitHub's user API (`login`, numeric id as subject)."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        base_url: str,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        upstream = presets.github(client_id, client_secret, **_upstream(upstream_options, upstream_scopes))
        super().__init__(upstream=upstream, base_url=base_url, **options)


class GoogleProvider(OAuthProxy):
    """Sign in with Google (OpenID Connect: the identity comes from the ID token)."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        base_url: str,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        upstream = presets.google(client_id, client_secret, **_upstream(upstream_options, upstream_scopes))
        super().__init__(upstream=upstream, base_url=base_url, **options)


class EntraIDProvider(OAuthProxy):
    """Sign in with Microsoft Entra ID (one tenant, v2 endpoints)."""

    def __init__(
        self,
        *,
        tenant: str,
        client_id: str,
        client_secret: str,
        base_url: str,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        upstream = presets.entra_id(
            tenant, client_id, client_secret, **_upstream(upstream_options, upstream_scopes)
        )
        super().__init__(upstream=upstream, base_url=base_url, **options)


class Auth0Provider(OAuthProxy):
    """Sign in with Auth0 (`domain` such as `example.eu.auth0.com`)."""

    def __init__(
        self,
        *,
        domain: str,
        client_id: str,
        client_secret: str,
        base_url: str,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        upstream = presets.auth0(
            domain, client_id, client_secret, **_upstream(upstream_options, upstream_scopes)
        )
        super().__init__(upstream=upstream, base_url=base_url, **options)


class OktaProvider(OAuthProxy):
    """Sign in with Okta (`domain` such as `example.okta.com`; the `default` authorization server)."""

    def __init__(
        self,
        *,
        domain: str,
        client_id: str,
        client_secret: str,
        base_url: str,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        upstream = presets.okta(
            domain, client_id, client_secret, **_upstream(upstream_options, upstream_scopes)
        )
        super().__init__(upstream=upstream, base_url=base_url, **options)


class KeycloakProvider(OAuthProxy):
    """Sign in with Keycloak (`keycloak_url` such as `https://sso.example.com`, and the `realm`)."""

    def __init__(
        self,
        *,
        keycloak_url: str,
        realm: str,
        client_id: str,
        client_secret: str,
        base_url: str,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        upstream = presets.keycloak(
            keycloak_url, realm, client_id, client_secret, **_upstream(upstream_options, upstream_scopes)
        )
        super().__init__(upstream=upstream, base_url=base_url, **options)


class OIDCProxy(OAuthProxy):
    """Sign in with any OpenID provider, configured from its discovery document.

    `upstream_name` is the provider's name in the tokens (`upstream` claim); `upstream_display_name`
    what the consent and error pages call it ("Corp SSO"; default: the name).
    """

    def __init__(
        self,
        *,
        discovery_url: str,
        client_id: str,
        client_secret: str | None,
        base_url: str,
        upstream_name: str = "oidc",
        upstream_display_name: str | None = None,
        upstream_scopes: Sequence[str] | None = None,
        upstream_options: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        options_upstream = _upstream(upstream_options, upstream_scopes)
        if upstream_display_name is not None:
            options_upstream["display_name"] = upstream_display_name
        upstream = presets.oidc(
            discovery_url, client_id, client_secret, name=upstream_name, **options_upstream
        )
        super().__init__(upstream=upstream, base_url=base_url, **options)
