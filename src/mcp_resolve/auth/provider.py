"""An authorization server inside the MCP server: the provider interface the endpoints call.

`MCPServer(auth_server_provider=provider, auth=AuthSettings(...))` serves, on
the MCP server's own origin, the OAuth 2.1 endpoints MCP clients expect of an
authorization server (RFC 8414 metadata, `/authorize`, `/token`, `/register`,
`/revoke`). The endpoints parse and check the requests (PKCE S256, exact
redirect URIs, client authentication, `resource`) and call a provider for what
only the deployment knows: who the clients are, how a person signs in, and
what a token means.

The names and the meaning of every method and model are the official SDK's
(`mcp.server.auth.provider`), so a provider written for it ports by changing
imports: `from mcp_resolve.auth.provider import ...`. `OAuthProxy` is one such
provider (the person signs in upstream, at GitHub, Google, Entra ...); a team
with its own user table writes another.

Nothing here speaks HTTP: the endpoints live in `transports/http/_auth/`.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import AnyHttpUrl, AnyUrl, BaseModel, ConfigDict, Field, field_validator

from .redirect_uris import redirect_uri_matches
from .tokens import AccessToken, AuthSettings, ClientRegistrationOptions, RevocationOptions, TokenVerifier

__all__ = [
    "AccessToken",
    "AuthorizationCode",
    "AuthorizationErrorCode",
    "AuthorizationParams",
    "AuthorizeError",
    "ClientRegistrationOptions",
    "ConfiguresProtection",
    "OAuthAuthorizationServerProvider",
    "OAuthClientInformationFull",
    "OAuthClientMetadata",
    "OAuthToken",
    "ProviderTokenVerifier",
    "RefreshToken",
    "RegistrationError",
    "RegistrationErrorCode",
    "RevocationOptions",
    "TokenError",
    "TemporarilyUnavailable",
    "TokenErrorCode",
    "code_challenge_s256",
    "construct_redirect_uri",
    "redirect_uri_matches",
]


# ---------------------------------------------------------------------------------------------
# Clients (RFC 7591 metadata) and tokens (RFC 6749 §5.1)
# ---------------------------------------------------------------------------------------------


class OAuthClientMetadata(BaseModel):
    """What a client says about itself when it registers (RFC 7591 §2), or in its CIMD document."""

    model_config = ConfigDict(extra="ignore")

    redirect_uris: list[AnyUrl] | None = Field(default=None)
    token_endpoint_auth_method: str | None = None
    """`none` (a public client, PKCE only), `client_secret_post` or `client_secret_basic`."""
    grant_types: list[str] = Field(default_factory=lambda: ["authorization_code", "refresh_token"])
    response_types: list[str] = Field(default_factory=lambda: ["code"])
    scope: str | None = None
    client_name: str | None = None
    client_uri: AnyHttpUrl | None = None
    logo_uri: AnyHttpUrl | None = None
    contacts: list[str] | None = None
    tos_uri: AnyHttpUrl | None = None
    policy_uri: AnyHttpUrl | None = None
    jwks_uri: AnyHttpUrl | None = None
    jwks: Any | None = None
    software_id: str | None = None
    software_version: str | None = None
    application_type: Literal["web", "native"] | None = None
    """RFC 7591 / OIDC: `native` clients (desktop, CLI) redirect to loopback or a private scheme;
    `web` clients to https. Registration refuses a redirect URI that does not fit the type."""


class OAuthClientInformationFull(OAuthClientMetadata):
    """A registered client: its metadata plus what the authorization server issued (RFC 7591 §3.2.1)."""

    client_id: str
    client_secret: str | None = Field(default=None, repr=False)
    client_id_issued_at: int | None = None
    client_secret_expires_at: int | None = None

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        """The scopes asked for, if this client registered them all (None: nothing was asked).

        As in the official SDK, a client that registered no `scope` may ask for
        none; `AuthorizeError` (`invalid_scope`) names the first scope it did not register.
        """
        if requested_scope is None:
            return None
        requested = requested_scope.split()
        allowed = set((self.scope or "").split())
        for scope in requested:
            if scope not in allowed:
                raise AuthorizeError("invalid_scope", f"client was not registered with scope {scope}")
        return requested

    def validate_redirect_uri(self, redirect_uri: AnyUrl | str | None) -> AnyUrl:
        """The redirect URI to use: the one given, if registered; the only registered one if none was given.

        Matching is exact (RFC 6749 §3.1.2.3, OAuth 2.1), except that a loopback
        `http` URI matches with any port (RFC 8252 §7.3: a native app's port is
        chosen when it starts). `AuthorizeError` (`invalid_request`) otherwise.
        """
        registered = [str(uri) for uri in self.redirect_uris or ()]
        if redirect_uri is not None:
            given = str(redirect_uri)
            if any(redirect_uri_matches(given, uri) for uri in registered):
                return AnyUrl(given)
            raise AuthorizeError("invalid_request", "redirect_uri is not one this client registered")
        if len(registered) == 1:
            return AnyUrl(registered[0])
        raise AuthorizeError("invalid_request", "redirect_uri must be given: the client registered several")


class OAuthToken(BaseModel):
    """A token response (RFC 6749 §5.1)."""

    @field_validator("token_type", mode="before")
    @classmethod
    def _bearer(cls, value: object) -> object:
        return "Bearer" if isinstance(value, str) and value.lower() == "bearer" else value

    access_token: str = Field(repr=False)
    token_type: Literal["Bearer"] = "Bearer"
    """Any case of "bearer" reads as "Bearer" (RFC 6749 §5.1: case-insensitive), as the official SDK has it."""
    expires_in: int | None = None
    scope: str | None = None
    refresh_token: str | None = Field(default=None, repr=False)


# ---------------------------------------------------------------------------------------------
# What the endpoints hand the provider, and what it keeps
# ---------------------------------------------------------------------------------------------


class AuthorizationParams(BaseModel):
    """An `/authorize` request the endpoint checked: the client is known, the redirect URI is its own."""

    state: str | None
    scopes: list[str] | None
    code_challenge: str
    """The PKCE S256 challenge (the endpoint refuses `plain` and a missing one)."""
    redirect_uri: AnyUrl
    redirect_uri_provided_explicitly: bool
    resource: str | None = None
    """The RFC 8707 resource the client asked a token for (this MCP server's URL)."""


class AuthorizationCode(BaseModel):
    """An issued code, as the provider stores it until it is exchanged (once)."""

    code: str = Field(repr=False)
    scopes: list[str]
    expires_at: float
    client_id: str
    code_challenge: str
    redirect_uri: AnyUrl
    redirect_uri_provided_explicitly: bool
    resource: str | None = None
    subject: str | None = None
    """The person who approved it; carried to the tokens it is exchanged for."""


class RefreshToken(BaseModel):
    token: str = Field(repr=False)
    client_id: str
    scopes: list[str]
    expires_at: int | None = None
    resource: str | None = None
    subject: str | None = None


# ---------------------------------------------------------------------------------------------
# Errors a provider raises; the endpoints turn them into OAuth error responses
# ---------------------------------------------------------------------------------------------

RegistrationErrorCode = Literal[
    "invalid_redirect_uri",
    "invalid_client_metadata",
    "invalid_software_statement",
    "unapproved_software_statement",
]

AuthorizationErrorCode = Literal[
    "invalid_request",
    "unauthorized_client",
    "access_denied",
    "unsupported_response_type",
    "invalid_scope",
    "server_error",
    "temporarily_unavailable",
    "invalid_target",
]

TokenErrorCode = Literal[
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "invalid_target",
]


@dataclass
class RegistrationError(Exception):
    """`/register` answers 400 with this `error` (RFC 7591 §3.2.2)."""

    error: RegistrationErrorCode
    error_description: str | None = None

    # Not frozen: raising an exception sets its __traceback__, which a frozen dataclass refuses.


@dataclass
class AuthorizeError(Exception):
    """`/authorize` sends the person back to the client with this `error` (RFC 6749 §4.1.2.1),
    or shows it when there is no redirect URI it may trust."""

    error: AuthorizationErrorCode
    error_description: str | None = None


@dataclass
class TokenError(Exception):
    """`/token` answers 400 (401 for `invalid_client`) with this `error` (RFC 6749 §5.2)."""

    error: TokenErrorCode
    error_description: str | None = None


class TemporarilyUnavailable(Exception):
    """What the provider depends on cannot answer now (an upstream down or slow): the endpoints
    answer 503 `temporarily_unavailable` with `Retry-After`, and the client may try again shortly.

    `description` must be a server-made text: it reaches the client.
    """

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


# ---------------------------------------------------------------------------------------------
# The provider
# ---------------------------------------------------------------------------------------------

AuthorizationCodeT = TypeVar("AuthorizationCodeT", bound=AuthorizationCode)
RefreshTokenT = TypeVar("RefreshTokenT", bound=RefreshToken)
AccessTokenT = TypeVar("AccessTokenT", bound=AccessToken)


@runtime_checkable
class OAuthAuthorizationServerProvider(Protocol, Generic[AuthorizationCodeT, RefreshTokenT, AccessTokenT]):
    """What the authorization endpoints ask of a deployment. Every method is a coroutine.

    The endpoints have already checked what the protocol defines (the client
    exists and authenticated, PKCE, the redirect URI, the code's client and
    expiry) before a method is called; a provider decides the rest and raises
    `AuthorizeError`, `TokenError` or `RegistrationError` to refuse.
    """

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The registered client with this id, or None."""
        ...

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a client that registered at `/register` (the endpoint made its id and secret)."""
        ...

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Where to send the person now: a login or consent page, an upstream provider, or straight
        back to `params.redirect_uri` with a code (`construct_redirect_uri`). Codes need at least
        128 bits of randomness (RFC 6749 §10.10); `secrets.token_urlsafe(32)` has 256."""
        ...

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCodeT | None:
        """The code as issued, or None when it is unknown (or already used)."""
        ...

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCodeT
    ) -> OAuthToken:
        """Tokens for a checked code. The code must not work twice."""
        ...

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshTokenT | None:
        """The refresh token as issued, or None."""
        ...

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshTokenT, scopes: list[str]
    ) -> OAuthToken:
        """New tokens for a refresh token (rotate both). `scopes` is within the token's own."""
        ...

    async def load_access_token(self, token: str) -> AccessTokenT | None:
        """The access token's meaning, or None when it is not valid (the bearer check refuses it)."""
        ...

    async def revoke_token(self, token: AccessTokenT | RefreshTokenT) -> None:
        """End this token and the grant it belongs to; do nothing for one already ended."""
        ...


def code_challenge_s256(verifier: str) -> str:
    """The PKCE S256 code challenge of `verifier` (RFC 7636 §4.2): BASE64URL(SHA256(verifier)), unpadded."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def construct_redirect_uri(redirect_uri_base: str, **params: str | None) -> str:
    """`redirect_uri_base` with `params` (those not None) added to its query, keeping what it had."""
    parts = urlsplit(redirect_uri_base)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query.extend((name, value) for name, value in params.items() if value is not None)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


class ProviderTokenVerifier:
    """A `TokenVerifier` asking the provider what a bearer token means (`load_access_token`).

    What `MCPServer(auth_server_provider=...)` verifies tokens with when it is
    given no `token_verifier` of its own.
    """

    def __init__(self, provider: OAuthAuthorizationServerProvider[Any, Any, Any]) -> None:
        self.provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self.provider.load_access_token(token)


@runtime_checkable
class ConfiguresProtection(Protocol):
    """A provider that knows its own protection: the verifier of the tokens it issues, and the settings.

    `MCPServer(auth_server_provider=p)` with no `auth=` asks `p.protection()`
    (`OAuthProxy` answers it from its `base_url`); a provider without it needs `auth=`.
    """

    def protection(self) -> tuple[TokenVerifier, AuthSettings]: ...
