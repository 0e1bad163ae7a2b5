"""A real OAuth 2.1 authorization server for end-to-end client tests, built on Authlib's server components.

Authlib's framework-agnostic `AuthorizationServer`, grants and endpoints do
the protocol work (the authorization code grant with PKCE required, refresh
tokens rotated on use, dynamic client registration per RFC 7591, RFC 9207's
`iss` on every authorization response, RFC 9068 JWT access tokens signed with
a joserfc key); this file only adapts Starlette requests to them and keeps
clients, codes and tokens in dictionaries. The authorization endpoint
approves at once as `user` (the "person" consents), so a headless browser can
complete the flow. The `resource` parameter (RFC 8707) must name the one
protected resource this server issues tokens for, which is also the tokens'
audience. Counters let tests see what the client did.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from authlib.oauth2 import AuthorizationServer, OAuth2Error
from authlib.oauth2.rfc6749 import (
    AuthorizationCodeMixin,
    ClientMixin,
    JsonRequest,
    OAuth2Request,
    TokenMixin,
    grants,
)
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload, JsonPayload
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from authlib.oauth2.rfc9207 import IssuerParameter
from joserfc.jwk import ECKey, KeySet
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["AuthlibServer"]

AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]


@dataclass
class _Client(ClientMixin):
    client_id: str
    client_secret: str | None
    redirect_uris: list[str]
    auth_method: str
    grant_types: list[str]
    metadata: dict[str, Any] = field(default_factory=dict)

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope: str) -> str:
        return scope

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@dataclass
class _Code(AuthorizationCodeMixin):
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: str
    resource: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: int = field(default_factory=lambda: int(time.time()))

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_auth_time(self) -> int:
        return self.auth_time

    def get_nonce(self) -> None:
        return None


@dataclass
class _Refresh(TokenMixin):
    client_id: str
    scope: str
    user: str
    resource: str | None
    revoked: bool = False

    def check_client(self, client: _Client) -> bool:
        return client.client_id == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return 3600

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return self.revoked


class _User:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_user_id(self) -> str:
        return self.name


class _Request(OAuth2Request):  # type: ignore[misc]
    """Authlib's request over a Starlette request read in advance (Starlette reads bodies asynchronously)."""

    query: dict[str, str]
    body_form: dict[str, str]

    @property
    def args(self) -> dict[str, str]:
        return self.query

    @property
    def form(self) -> dict[str, str]:
        return self.body_form


class _Response(Response):
    """A Starlette response with the `location` attribute Authlib's extensions (RFC 9207's iss) edit."""

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value


class AuthlibServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's AuthorizationServer over Starlette; `issuer` and `resource` are set before it serves."""

    def __init__(self, *, scopes: list[str], token_ttl: int = 3600) -> None:
        super().__init__(scopes_supported=[*scopes, "offline_access"])
        self.issuer = "http://127.0.0.1:0"
        self.resource = "http://127.0.0.1:0/mcp"
        self.user = "alice"
        self.token_ttl = token_ttl
        self.key = ECKey.generate_key("P-256", parameters={"kid": "authlib-1", "alg": "ES256", "use": "sig"})
        self.clients: dict[str, _Client] = {}
        self.codes: dict[str, _Code] = {}
        self.refresh_tokens: dict[str, _Refresh] = {}
        self.authorization_requests: list[dict[str, str]] = []
        self.token_requests: list[str] = []
        self.registrations = 0
        server = self

        class Tokens(JWTBearerTokenGenerator):  # type: ignore[misc]
            def get_jwks(self) -> KeySet:
                return KeySet([server.key])

            def get_audiences(self, client: Any, user: Any, scope: str) -> str:
                return server.resource

        self.register_token_generator(
            "default",
            Tokens(
                issuer="placeholder",
                alg="ES256",
                refresh_token_generator=lambda *a, **k: secrets.token_urlsafe(32),
                expires_generator=lambda client, grant_type: server.token_ttl,
            ),
        )
        self._generator = self._token_generators["default"]

        class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

            def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
                data = request.payload.data
                server.codes[code] = _Code(
                    code,
                    request.client.client_id,
                    data.get("redirect_uri"),
                    request.payload.scope or "",
                    request.user.name,
                    data.get("resource"),
                    data.get("code_challenge"),
                    data.get("code_challenge_method"),
                )

            def query_authorization_code(self, code: str, client: _Client) -> _Code | None:
                found = server.codes.get(code)
                return found if found is not None and found.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code: _Code) -> None:
                server.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code: _Code) -> _User:
                return _User(authorization_code.user)

        class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
            INCLUDE_NEW_REFRESH_TOKEN = True  # public clients' refresh tokens rotate (OAuth 2.1 §4.3.1)

            def authenticate_refresh_token(self, refresh_token: str) -> _Refresh | None:
                found = server.refresh_tokens.get(refresh_token)
                return found if found is not None and not found.revoked else None

            def authenticate_user(self, refresh_token: _Refresh) -> _User:
                return _User(refresh_token.user)

            def revoke_old_credential(self, refresh_token: _Refresh) -> None:
                refresh_token.revoked = True

        class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
            def authenticate_token(self, request: JsonRequest) -> bool:
                return True  # open registration, as MCP clients expect

            def resolve_public_key(self, request: JsonRequest) -> None:
                return None

            def get_server_metadata(self) -> dict[str, Any]:
                return server.metadata()

            def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> _Client:
                server.registrations += 1
                method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
                client = _Client(
                    client_info["client_id"],
                    client_info.get("client_secret") if method != "none" else None,
                    list(client_metadata.get("redirect_uris") or []),
                    method,
                    list(client_metadata.get("grant_types") or ["authorization_code"]),
                    client_metadata,
                )
                server.clients[client.client_id] = client
                return client

        class Issuer(IssuerParameter):  # type: ignore[misc]
            def get_issuer(self) -> str:
                return server.issuer

        self.register_grant(CodeGrant, [CodeChallenge(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Registration)
        self.register_extension(Issuer())

    # -- Authlib's hooks ---------------------------------------------------------------------------
    def query_client(self, client_id: str) -> _Client | None:
        return self.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        refresh = token.get("refresh_token")
        if refresh:
            resource = request.payload.data.get("resource") or self.resource
            self.refresh_tokens[refresh] = _Refresh(
                request.client.client_id, token.get("scope", ""), request.user.name, resource
            )

    def create_oauth2_request(self, request: OAuth2Request) -> OAuth2Request:
        return request  # built from the Starlette request in `_oauth2_request` (the body is read async)

    def create_json_request(self, request: JsonRequest) -> JsonRequest:
        return request

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Response:
        headers = dict(headers)
        if isinstance(body, dict):
            return JSONResponse(body, status_code=status, headers=headers)
        return _Response(body or b"", status_code=status, headers=headers)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None

    # -- the Starlette app -------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "jwks_uri": f"{self.issuer}/jwks",
            "scopes_supported": list(self.scopes_supported),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }

    def serve(self, issuer: str, resource: str) -> Starlette:
        self.issuer, self.resource = issuer, resource
        self._generator.issuer = issuer
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self._metadata),
                Route("/jwks", self._jwks),
                Route("/authorize", self._authorize),
                Route("/token", self._token, methods=["POST"]),
                Route("/register", self._register, methods=["POST"]),
            ]
        )

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(self.metadata())

    async def _jwks(self, request: Request) -> Response:
        return JSONResponse(KeySet([self.key]).as_dict(private=False))

    @staticmethod
    async def _oauth2_request(request: Request) -> OAuth2Request:
        query = dict(request.query_params)
        form = {k: str(v) for k, v in (await request.form()).items()} if request.method == "POST" else {}
        built = _Request(request.method, str(request.url), headers=dict(request.headers))
        built.query, built.body_form = query, form
        built.payload = BasicOAuth2Payload(form if request.method == "POST" else query)
        return built

    async def _authorize(self, request: Request) -> Response:
        built = await self._oauth2_request(request)
        self.authorization_requests.append(dict(built.payload.data))
        if built.payload.data.get("resource") != self.resource:
            return JSONResponse({"error": "invalid_target"}, status_code=400)
        try:
            grant = self.get_consent_grant(request=built, end_user=_User(self.user))
        except OAuth2Error as error:
            return self.handle_error_response(built, error)  # type: ignore[no-any-return]
        return self.create_authorization_response(request=built, grant_user=_User(self.user), grant=grant)  # type: ignore[no-any-return]

    async def _token(self, request: Request) -> Response:
        built = await self._oauth2_request(request)
        self.token_requests.append(str(built.payload.data.get("grant_type")))
        resource = built.payload.data.get("resource")
        if resource is not None and resource != self.resource:
            return JSONResponse({"error": "invalid_target"}, status_code=400)
        code = self.codes.get(str(built.payload.data.get("code")))
        if code is not None and code.resource != resource:
            return JSONResponse({"error": "invalid_target", "error_description": "resource changed"}, status_code=400)
        return self.create_token_response(request=built)  # type: ignore[no-any-return]

    async def _register(self, request: Request) -> Response:
        built = JsonRequest(request.method, str(request.url), dict(request.headers))
        body = await request.json()

        class Payload(JsonPayload):  # type: ignore[misc]
            @property
            def data(self) -> Any:
                return body

        built.payload = Payload()
        return self.create_endpoint_response("client_registration", built)  # type: ignore[no-any-return]
