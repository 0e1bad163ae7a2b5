"""Protected servers: OAuth 2.1 resource-server pieces and the caller's identity as resolvers.

`MCPServer(..., token_verifier=..., auth=AuthSettings(...))` makes the HTTP
endpoint demand a bearer token; tools learn who calls through `ctx.access_token`
or the resolvers `access_token` and `require_scopes(...)`. Nothing here serves
HTTP (that is `transports/`), and the verifiers load on first use: `JWTVerifier`
needs the `mcp-resolve[auth]` extra (joserfc), and a server that protects
nothing imports none of it.

The server can also be its clients' authorization server:
`MCPServer(auth_server_provider=...)` with a provider of your own
(`mcp_resolve.auth.provider`), or with `OAuthProxy` and its presets
(`GitHubProvider`, `GoogleProvider` ...), which sign the person in at the
identity provider you already have (`mcp_resolve.auth.proxy`).
"""

from typing import TYPE_CHECKING, Any

from .resolvers import InsufficientScope, access_token, require_scopes
from .tokens import (
    AccessToken,
    AuthSettings,
    ClientRegistrationOptions,
    DPoPOptions,
    RevocationOptions,
    TokenVerifier,
    principal_of,
)

if TYPE_CHECKING:
    from .introspection import IntrospectionVerifier
    from .jwt import JWTVerifier
    from .proxy import (
        Auth0Provider,
        EntraIDProvider,
        GitHubProvider,
        GoogleProvider,
        KeycloakProvider,
        OAuthProxy,
        OIDCProxy,
        OktaProvider,
        UpstreamIdentity,
        UpstreamToken,
        upstream_identity,
        upstream_token,
    )

__all__ = [
    "AccessToken",
    "Auth0Provider",
    "AuthSettings",
    "ClientRegistrationOptions",
    "DPoPOptions",
    "EntraIDProvider",
    "GitHubProvider",
    "GoogleProvider",
    "InsufficientScope",
    "IntrospectionVerifier",
    "JWTVerifier",
    "KeycloakProvider",
    "OAuthProxy",
    "OIDCProxy",
    "OktaProvider",
    "RevocationOptions",
    "TokenVerifier",
    "UpstreamIdentity",
    "UpstreamToken",
    "access_token",
    "principal_of",
    "require_scopes",
    "upstream_identity",
    "upstream_token",
]


_PROXY = frozenset(
    {
        "Auth0Provider",
        "EntraIDProvider",
        "GitHubProvider",
        "GoogleProvider",
        "KeycloakProvider",
        "OAuthProxy",
        "OIDCProxy",
        "OktaProvider",
        "UpstreamIdentity",
        "UpstreamToken",
        "upstream_identity",
        "upstream_token",
    }
)
"""Sign in upstream (`auth.proxy`): loaded on first use, so a resource server never imports it."""


def __getattr__(name: str) -> Any:
    if name == "JWTVerifier":
        try:
            from .jwt import JWTVerifier
        except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
            raise ModuleNotFoundError(
                f"JWTVerifier needs joserfc: pip install 'mcp-resolve[auth]' ({exc})"
            ) from exc
        return JWTVerifier
    if name in _PROXY:
        try:
            from . import proxy
        except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
            raise ModuleNotFoundError(
                f"{name} needs joserfc and cryptography: pip install 'mcp-resolve[auth]' ({exc})"
            ) from exc
        return getattr(proxy, name)
    if name == "IntrospectionVerifier":
        from .introspection import IntrospectionVerifier

        return IntrospectionVerifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
