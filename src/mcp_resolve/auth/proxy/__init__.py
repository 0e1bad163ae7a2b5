"""Sign in with the identity provider you already have: `OAuthProxy` and its presets.

`MCPServer("desk", auth_server_provider=GitHubProvider(client_id=..., client_secret=...,
base_url="https://desk.example.com"))` makes the MCP server its clients' authorization
server, sending each person to GitHub (Google, Entra ID, Auth0, Okta, Keycloak, any OpenID
provider) to sign in. Tools learn who signed in with the `upstream_identity` resolver and
act for them upstream with `upstream_token`. Needs the `mcp-resolve[auth]` extra.
"""

from ._providers import (
    Auth0Provider,
    EntraIDProvider,
    GitHubProvider,
    GoogleProvider,
    KeycloakProvider,
    OIDCProxy,
    OktaProvider,
)
from ._proxy import OAuthProxy, ProxiedAccessToken, UpstreamToken
from ._upstream import UpstreamConfig, UpstreamError
from .identity import UpstreamIdentity
from .resolvers import upstream_identity, upstream_token

__all__ = [
    "Auth0Provider",
    "EntraIDProvider",
    "GitHubProvider",
    "GoogleProvider",
    "KeycloakProvider",
    "OAuthProxy",
    "OIDCProxy",
    "OktaProvider",
    "ProxiedAccessToken",
    "UpstreamConfig",
    "UpstreamError",
    "UpstreamIdentity",
    "UpstreamToken",
    "upstream_identity",
    "upstream_token",
]
