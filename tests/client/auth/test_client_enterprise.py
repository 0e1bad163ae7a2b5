"""Enterprise sign-in (SEP-990) and workload identity (RFC 7523), end to end on loopback, nothing mocked.

The MCP server is ours (`JWTVerifier` on the authorization server's JWKS);
the authorization server is Authlib's (tests/authlib_server.py) with
Authlib's own JWT bearer grant registered on it; for enterprise sign-in an
enterprise identity provider runs beside them: a small RFC 8693 token
exchange endpoint that checks the person's ID token, applies a policy (which
MCP servers this company's clients may reach) and issues an ID-JAG signed
with its key, which the authorization server verifies. The client is our
`Client` with `OAuth(enterprise=EnterpriseIdP(...))` or `WorkloadIdentity`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from authlib.oauth2.rfc6749.errors import InvalidGrantError
from authlib.oauth2.rfc7523 import JWTBearerGrant
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from auth_helpers import serve_at_known_url
from authlib_server import AuthlibServer
from mcp_resolve import Client
from mcp_resolve.client.auth import (
    AuthorizationError,
    EnterpriseIdP,
    MemoryTokenStorage,
    OAuth,
    WorkloadIdentity,
)
from oauth_helpers import READ, WRITE, protected_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
APP_ID, APP_SECRET = "expense-app", "app-SECRET-41d2"
"""The application's registration at the MCP server's authorization server."""
IDP_APP_ID, IDP_APP_SECRET = "expense-app-at-idp", "idp-SECRET-77aa"
"""The same application's registration at the enterprise IdP."""


class User:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_user_id(self) -> str:
        return self.name


def sign(key: ECKey, claims: dict[str, Any], typ: str = "JWT") -> str:
    now = int(time.time())
    return jwt.encode({"alg": "ES256", "typ": typ}, {"iat": now, "exp": now + 300, **claims}, key)


class EnterpriseIdPServer:
    """The company's IdP: token exchange of an ID token for an ID-JAG, under a policy of allowed resources."""

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256")
        self.issuer = "http://127.0.0.1:0"
        self.allowed_resources: set[str] = set()
        self.exchanges: list[dict[str, str]] = []

    def id_token(self, person: str) -> str:
        return sign(self.key, {"iss": self.issuer, "sub": person, "aud": IDP_APP_ID})

    def app(self, issuer: str) -> Starlette:
        self.issuer = issuer
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self._metadata),
                Route("/token", self._token, methods=["POST"]),
            ]
        )

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "token_endpoint": f"{self.issuer}/token",
                "response_types_supported": ["code"],
                "authorization_endpoint": f"{self.issuer}/authorize",
                "grant_types_supported": ["urn:ietf:params:oauth:grant-type:token-exchange"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            }
        )

    async def _token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.exchanges.append(form)
        if (form.get("client_id"), form.get("client_secret")) != (IDP_APP_ID, IDP_APP_SECRET):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if (
            form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
            or form.get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag"
            or form.get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token"
        ):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        try:
            token = jwt.decode(form.get("subject_token", ""), self.key)
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer}, aud={"essential": True, "value": IDP_APP_ID}
            ).validate(token.claims)
        except Exception:
            return JSONResponse(
                {"error": "invalid_grant", "error_description": "bad ID token"}, status_code=400
            )
        if form.get("resource") not in self.allowed_resources:
            return JSONResponse(
                {"error": "access_denied", "error_description": "policy: this server is not allowed"},
                status_code=400,
            )
        id_jag = sign(
            self.key,
            {
                "iss": self.issuer,
                "sub": token.claims["sub"],
                "aud": form["audience"],
                "resource": form["resource"],
                "client_id": APP_ID,
                "jti": uuid.uuid4().hex,
                "scope": form.get("scope", ""),
            },
            typ="oauth-id-jag+jwt",
        )
        return JSONResponse(
            {
                "access_token": id_jag,
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "token_type": "N_A",
                "expires_in": 300,
            }
        )


def id_jag_grant(authz: AuthlibServer, idp: EnterpriseIdPServer) -> type[JWTBearerGrant]:
    """Authlib's JWT bearer grant taking ID-JAGs from `idp`, for the client that authenticates (SEP-990 §5)."""

    class IdJagGrant(JWTBearerGrant):  # type: ignore[misc]
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

        def validate_token_request(self) -> None:
            headers = self.request.headers  # the helper's headers are lower-cased; Authlib reads "Authorization"
            if "authorization" in headers:
                headers["Authorization"] = headers["authorization"]
            self.authenticated = self.authenticate_token_endpoint_client()
            super().validate_token_request()

        def extract_assertion(self, assertion: str) -> Any:
            headers, claims = super().extract_assertion(assertion)
            if headers.get("typ") != "oauth-id-jag+jwt":
                raise InvalidGrantError(description="not an ID-JAG")
            return headers, claims

        def verify_claims(self, claims: Any) -> None:
            super().verify_claims(claims)
            if (
                claims.get("client_id") != self.authenticated.client_id
                or claims.get("resource") != authz.resource
            ):
                raise InvalidGrantError(description="the ID-JAG is for another client or resource")

        def resolve_issuer_client(self, issuer: str) -> Any:
            return self.authenticated if issuer == idp.issuer else None

        def resolve_client_public_key(self, client: Any) -> ECKey:
            return idp.key

        def get_audiences(self) -> list[str]:
            return [authz.issuer]

        def authenticate_user(self, subject: str) -> User:
            return User(subject)

        def has_granted_permission(self, client: Any, user: Any) -> bool:
            return True

    return IdJagGrant


def workload_grant(authz: AuthlibServer, platform: ECKey, platform_issuer: str) -> type[JWTBearerGrant]:
    """Authlib's JWT bearer grant trusting one workload platform's key (workload identity federation)."""

    class WorkloadGrant(JWTBearerGrant):  # type: ignore[misc]
        def resolve_issuer_client(self, issuer: str) -> Any:
            return authz.clients.get("workload") if issuer == platform_issuer else None

        def resolve_client_public_key(self, client: Any) -> ECKey:
            return platform

        def get_audiences(self) -> list[str]:
            return [authz.issuer]

        def authenticate_user(self, subject: str) -> User:
            return User(subject)

        def has_granted_permission(self, client: Any, user: Any) -> bool:
            return True

    return WorkloadGrant


def register_client(authz: AuthlibServer, client_id: str, secret: str | None, method: str) -> None:
    from authlib_server import _Client

    authz.clients[client_id] = _Client(client_id, secret, [], method, [JWT_BEARER])


@asynccontextmanager
async def enterprise() -> AsyncIterator[tuple[AuthlibServer, EnterpriseIdPServer, str]]:
    idp = EnterpriseIdPServer()
    authz = AuthlibServer(scopes=[READ, WRITE])
    authz.register_grant(id_jag_grant(authz, idp))
    register_client(authz, APP_ID, APP_SECRET, "client_secret_basic")
    async with (
        serve_at_known_url(idp.app),
        serve_at_known_url(lambda base: authz.serve(base, f"{base}/unused")) as issuer,
    ):

        def make(base: str) -> Any:
            authz.resource = f"{base}/mcp"
            return protected_server(authz.resource, issuer).streamable_http_app()

        async with serve_at_known_url(make) as base:
            idp.allowed_resources.add(f"{base}/mcp")
            yield authz, idp, f"{base}/mcp"


def signed_in(idp: EnterpriseIdPServer, subject: Any, **options: Any) -> OAuth:
    return OAuth(
        client_id=APP_ID,
        client_secret=APP_SECRET,
        enterprise=EnterpriseIdP(
            subject, issuer=idp.issuer, client_id=IDP_APP_ID, client_secret=IDP_APP_SECRET
        ),
        **options,
    )


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_enterprise_sign_in_reaches_our_server_without_a_browser(mode: str, era: str) -> None:
    async with enterprise() as (authz, idp, url):
        storage = MemoryTokenStorage()
        async with Client(
            url, mode=mode, auth=signed_in(idp, idp.id_token("alice"), storage=storage)
        ) as client:  # type: ignore[arg-type]
            assert client.protocol_version == era
            who = await client.call_tool("whoami", {})
            assert who.content[0].text == f"alice with {READ}"  # type: ignore[union-attr]
            refunded = await client.call_tool("refund", {"order_id": "A-7"})  # step-up: a second exchange
            assert refunded.content[0].text == "refunded A-7"  # type: ignore[union-attr]
        assert [e["audience"] for e in idp.exchanges] == [authz.issuer, authz.issuer]
        assert {e["resource"] for e in idp.exchanges} == {url}
        assert idp.exchanges[1]["scope"].split() == [READ, WRITE]
        assert authz.token_requests == [JWT_BEARER, JWT_BEARER]
        assert authz.authorization_requests == []  # no browser, no consent screen

        # The tokens are kept like any other grant's: the next client signs in without the IdP.
        async with Client(
            url, mode=mode, auth=signed_in(idp, idp.id_token("alice"), storage=storage)
        ) as again:  # type: ignore[arg-type]
            await again.call_tool("whoami", {})
        assert len(idp.exchanges) == 2


async def test_the_id_token_is_read_from_its_file_on_every_sign_in(tmp_path: Path) -> None:
    async with enterprise() as (_authz, idp, url):
        path = tmp_path / "id_token"
        path.write_text(idp.id_token("alice") + "\n")
        async with Client(url, auth=signed_in(idp, path)) as client:
            assert (await client.call_tool("whoami", {})).content[0].text.startswith("alice ")  # type: ignore[union-attr]
        path.write_text(idp.id_token("bob"))
        async with Client(url, auth=signed_in(idp, path)) as client:
            assert (await client.call_tool("whoami", {})).content[0].text.startswith("bob ")  # type: ignore[union-attr]

        calls: list[int] = []

        async def current_token() -> str:
            calls.append(1)
            return idp.id_token("carol")

        async with Client(url, auth=signed_in(idp, current_token)) as client:
            assert (await client.call_tool("whoami", {})).content[0].text.startswith("carol ")  # type: ignore[union-attr]
        assert calls == [1]


async def test_an_idp_policy_refusal_is_a_clear_authorization_error(caplog: pytest.LogCaptureFixture) -> None:
    async with enterprise() as (authz, idp, url):
        idp.allowed_resources.clear()
        token = idp.id_token("alice")
        with pytest.raises(AuthorizationError) as refused:
            async with Client(url, auth=signed_in(idp, token)) as client:
                await client.call_tool("whoami", {})
        assert refused.value.error == "access_denied"
        assert "enterprise IdP" in str(refused.value) and "policy: this server is not allowed" in str(
            refused.value
        )
        assert authz.token_requests == []  # nothing reached the MCP server's authorization server
        assert token not in caplog.text and token not in str(refused.value)


@pytest.mark.parametrize(("mode", "era"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_workload_identity_with_a_rotating_token_file(mode: str, era: str, tmp_path: Path) -> None:
    platform = ECKey.generate_key("P-256")
    platform_issuer = "https://kubernetes.default.svc"
    authz = AuthlibServer(scopes=[READ, WRITE])
    authz.register_grant(workload_grant(authz, platform, platform_issuer))
    register_client(authz, "workload", None, "none")
    async with serve_at_known_url(lambda base: authz.serve(base, f"{base}/unused")) as issuer:

        def make(base: str) -> Any:
            authz.resource = f"{base}/mcp"
            return protected_server(authz.resource, issuer).streamable_http_app()

        async with serve_at_known_url(make) as base:
            path = tmp_path / "token"

            def service_account(name: str) -> str:
                return sign(
                    platform,
                    {"iss": platform_issuer, "sub": f"system:serviceaccount:ci:{name}", "aud": issuer},
                )

            path.write_text(service_account("builder"))
            auth = WorkloadIdentity(path)
            async with Client(f"{base}/mcp", mode=mode, auth=auth) as client:  # type: ignore[arg-type]
                assert client.protocol_version == era
                who = await client.call_tool("whoami", {})
                assert who.content[0].text == f"system:serviceaccount:ci:builder with {READ}"  # type: ignore[union-attr]
                # Kubernetes rotates the file; the token expires: the next grant reads the new one.
                path.write_text(service_account("deployer"))
                auth._tokens[f"{base}/mcp"]["expires_at"] = 0  # type: ignore[index]
                auth._tokens[f"{base}/mcp"]["access_token"] = "expired"  # type: ignore[index]
                who = await client.call_tool("whoami", {})
                assert who.content[0].text == f"system:serviceaccount:ci:deployer with {READ}"  # type: ignore[union-attr]
            assert authz.token_requests == [JWT_BEARER, JWT_BEARER]

            # An assertion for another audience is refused once, with the server's error, and not retried.
            path.write_text(sign(platform, {"iss": platform_issuer, "sub": "x", "aud": "https://elsewhere"}))
            with pytest.raises(AuthorizationError) as refused:
                async with Client(f"{base}/mcp", mode=mode, auth=WorkloadIdentity(path)) as client:  # type: ignore[arg-type]
                    await client.call_tool("whoami", {})
            assert refused.value.error == "invalid_grant"
            assert authz.token_requests == [JWT_BEARER] * 3
