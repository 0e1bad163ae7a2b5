"""A small, real authorization server for tests, and a way to serve an app whose URL it must know first.

`TestIssuer` holds RSA and EC signing keys made with joserfc, mints JWT access
tokens, and serves (as a Starlette app, run by uvicorn on loopback) what an
authorization server publishes: its JWKS (which keys, and how often fetched,
tests control), RFC 8414 metadata, dynamic registration, an authorization
endpoint that approves at once (the "person" consents), a token endpoint with
PKCE, and RFC 7662 introspection of opaque tokens. Nothing is mocked: the
server under test fetches keys and introspects over real HTTP.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

import anyio
import uvicorn
from joserfc import jwt
from joserfc.jwk import ECKey, Key, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

__all__ = ["INTROSPECTION_CLIENT", "TestIssuer", "serve_at_known_url"]

INTROSPECTION_CLIENT = ("resource-server", "resource-secret")


class TestIssuer:
    """Keys, tokens and the endpoints of an authorization server; `base` is set once it is served."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    def __init__(self) -> None:
        self.base = "http://127.0.0.1:0"
        self.keys: dict[str, Key] = {
            "rsa-1": RSAKey.generate_key(2048, parameters={"kid": "rsa-1"}),
            "ec-1": ECKey.generate_key("P-256", parameters={"kid": "ec-1"}),
        }
        self.published = ["rsa-1", "ec-1"]
        """Key ids the JWKS lists now; tests change it to rotate."""
        self.jwks_fetches = 0
        self.jwks_status = 200
        self.opaque: dict[str, dict[str, Any]] = {}
        """Opaque token -> its introspection answer (minus `active`, which is whether it is here)."""
        self.introspections = 0
        self.introspection_ports: list[int] = []
        """The client port of each introspection request: one port, one connection (reused or not)."""
        self.user = "alice"
        """Who approves at the authorization endpoint."""
        self._codes: dict[str, dict[str, Any]] = {}

    # -- keys and tokens ---------------------------------------------------------------------
    def add_key(self, kid: str, kind: str = "RSA") -> None:
        self.keys[kid] = (
            RSAKey.generate_key(2048, parameters={"kid": kid})
            if kind == "RSA"
            else ECKey.generate_key("P-256", parameters={"kid": kid})
        )

    def public_pem(self, kid: str = "rsa-1") -> bytes:
        return self.keys[kid].as_pem(private=False)  # type: ignore[attr-defined, no-any-return]

    def claims(self, audience: str | list[str], **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.base,
            "sub": "alice",
            "aud": audience,
            "client_id": "client-1",
            "scope": "read",
            "iat": now,
            "exp": now + 300,
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def mint(
        self, audience: str | list[str], *, kid: str = "rsa-1", alg: str | None = None, **claims: Any
    ) -> str:
        """A signed access token for `audience`; `claims` override the defaults (None removes one)."""
        key = self.keys[kid]
        algorithm = alg or ("RS256" if isinstance(key, RSAKey) else "ES256")
        return jwt.encode({"alg": algorithm, "kid": kid}, self.claims(audience, **claims), key)

    def opaque_token(self, audience: str, **answer: Any) -> str:
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        self.opaque[token] = {
            "scope": "read",
            "client_id": "client-1",
            "sub": "alice",
            "aud": audience,
            "iss": self.base,
            "exp": now + 300,
            **answer,
        }
        return token

    # -- the endpoints --------------------------------------------------------------------------
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/jwks", self._jwks),
                Route("/.well-known/oauth-authorization-server", self._metadata),
                Route("/register", self._register, methods=["POST"]),
                Route("/authorize", self._authorize),
                Route("/token", self._token, methods=["POST"]),
                Route("/introspect", self._introspect, methods=["POST"]),
            ]
        )

    async def _jwks(self, request: Request) -> Response:
        self.jwks_fetches += 1
        if self.jwks_status != 200:
            return Response("unavailable", status_code=self.jwks_status)
        keys = [self.keys[kid].as_dict(private=False) for kid in self.published]
        return JSONResponse({"keys": keys})

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "registration_endpoint": f"{self.base}/register",
                "introspection_endpoint": f"{self.base}/introspect",
                "jwks_uri": f"{self.base}/jwks",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": True,
            }
        )

    async def _register(self, request: Request) -> Response:
        metadata = await request.json()
        return JSONResponse(
            {**metadata, "client_id": f"dyn-{secrets.token_hex(4)}", "token_endpoint_auth_method": "none"},
            status_code=201,
        )

    async def _authorize(self, request: Request) -> Response:
        query = request.query_params
        code = secrets.token_urlsafe(16)
        self._codes[code] = {
            "client_id": query["client_id"],
            "challenge": query["code_challenge"],
            "redirect_uri": query["redirect_uri"],
            "resource": query.get("resource"),
            "scope": query.get("scope", ""),
        }
        back = {"code": code, "state": query.get("state", ""), "iss": self.base}
        return RedirectResponse(f"{query['redirect_uri']}?{urlencode(back)}", status_code=302)

    async def _token(self, request: Request) -> Response:
        form = await request.form()
        grant = self._codes.pop(str(form.get("code")), None)
        verifier = str(form.get("code_verifier", ""))
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if grant is None or digest != grant["challenge"] or form.get("client_id") != grant["client_id"]:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        token = self.mint(
            grant["resource"], sub=self.user, client_id=grant["client_id"], scope=grant["scope"] or None
        )
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": 300}
        if grant["scope"]:
            answer["scope"] = grant["scope"]
        return JSONResponse(answer)

    async def _introspect(self, request: Request) -> Response:
        self.introspections += 1
        self.introspection_ports.append(request.client.port if request.client else 0)
        expected = base64.b64encode(":".join(INTROSPECTION_CLIENT).encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = await request.form()
        answer = self.opaque.get(str(form.get("token")))
        return JSONResponse({"active": False} if answer is None else {"active": True, **answer})


def _bound_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@asynccontextmanager
async def serve_at_known_url(make_app: Callable[[str], Any]) -> AsyncIterator[str]:
    """Serve `make_app(base_url)` with uvicorn on loopback; the app learns its own URL before it starts
    (a protected server's resource URL, an issuer's `iss`)."""
    sock = _bound_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(make_app(base), lifespan="on", log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        with anyio.fail_after(15):
            while not server.started:
                if not thread.is_alive():
                    raise RuntimeError("uvicorn did not start")
                await anyio.sleep(0.01)
        yield base
    finally:
        server.should_exit = True
        await anyio.to_thread.run_sync(thread.join, 15)
        sock.close()


@asynccontextmanager
async def issuer_served(issuer: TestIssuer) -> AsyncIterator[TestIssuer]:
    """Run `issuer`'s endpoints on loopback for the block; `issuer.base` is their URL."""

    def make(base: str) -> Starlette:
        issuer.base = base
        return issuer.app()

    async with serve_at_known_url(make):
        yield issuer


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    import json

    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"


def forged_tokens(issuer: TestIssuer, audience: str) -> dict[str, str]:
    """Every way a token for `audience` can be wrong, by name; each must be refused."""
    import hmac

    now = int(time.time())
    good = issuer.mint(audience)
    head, payload, signature = good.split(".")
    claims = issuer.claims(audience)
    hs256_input = _unsigned({"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}, claims)
    hs256 = hmac.new(issuer.public_pem(), hs256_input.encode(), hashlib.sha256).digest()
    flipped = signature[:40] + ("A" if signature[40] != "A" else "B") + signature[41:]
    richer = _b64(b'{"sub":"alice","scope":"read admin"}')
    numeric_kid = _b64(b'{"alg":"RS256","kid":7}')
    unknown_kid = _b64(b'{"alg":"RS256","kid":"nope"}')
    huge = _b64(b'{"x":"' + b"a" * (10 * 1024 * 1024) + b'"}')
    return {
        "expired": issuer.mint(audience, exp=now - 120, iat=now - 600),
        "not yet valid": issuer.mint(audience, nbf=now + 600),
        "issued in the future": issuer.mint(audience, iat=now + 600),
        "wrong issuer": issuer.mint(audience, iss="https://evil.example"),
        "wrong audience": issuer.mint("https://other.example/mcp"),
        "no audience": issuer.mint(audience, aud=None),
        "no expiry": issuer.mint(audience, exp=None),
        "alg none": _unsigned({"alg": "none", "typ": "JWT"}, claims) + ".",
        "alg none with a signature": _unsigned({"alg": "none", "typ": "JWT"}, claims) + "." + signature,
        "HS256 signed with the public key": f"{hs256_input}.{_b64(hs256)}",
        "tampered signature": f"{head}.{payload}.{flipped}",
        "tampered payload": f"{head}.{richer}.{signature}",
        "unknown key id": f"{unknown_kid}.{payload}.{signature}",
        "garbage": "not-a-token",
        "many dots": "a." * 2000 + "b",
        "not base64": "e30.%%%%.$$$$",
        "JWE-shaped": "a.b.c.d.e",
        "header is a list": f"{_b64(b'[1,2]')}.{payload}.{signature}",
        "kid is a number": f"{numeric_kid}.{payload}.{signature}",
        "ten megabyte claim": f"{head}.{huge}.{signature}",
    }
