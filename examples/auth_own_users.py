"""A protected MCP server that is its own authorization server: people sign in against the team's own user table.

`OwnUsers` is an `OAuthAuthorizationServerProvider` written the official
SDK's way (the method names and models are the same; only the imports come
from `mcp_resolve.auth.provider`). mcp-resolve serves the OAuth endpoints
MCP clients use (metadata, `/authorize`, `/token`, `/register`, `/revoke`),
checks PKCE, redirect URIs, client secrets and `resource`, and calls the
provider for the rest: `authorize()` sends the person to the login form
below, which checks the password and sends them back to the client with a
code; the code is exchanged for an access token and a rotating refresh token.

Run it: `python examples/auth_own_users.py` serves http://127.0.0.1:8000/mcp;
any MCP client (the Inspector, `mcp_resolve.Client(url, auth=OAuth())`) signs
in as alice / wonderland. `whoami` needs `desk`; `refund` needs
`desk:refund` too, which alice may have and bob may not.

Everything is in memory and bounded: fine for one process; a fleet keeps
these records in a shared store. A real login page also wants a CSRF token
and rate limiting.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import math
import secrets
import time
from collections import OrderedDict
from typing import Annotated, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp_resolve import MCPServer, Resolve
from mcp_resolve.auth import AuthSettings, ClientRegistrationOptions, RevocationOptions, access_token
from mcp_resolve.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    OAuthClientInformationFull,
    OAuthToken,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)

SCOPES = ["desk", "desk:refund", "offline_access"]


def hash_password(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1)


def user(password: str, *scopes: str) -> tuple[bytes, bytes, frozenset[str]]:
    salt = secrets.token_bytes(16)
    return salt, hash_password(password, salt), frozenset(scopes)


class Bounded(OrderedDict[str, Any]):
    """A dict that forgets its oldest entries past `limit` (pending logins, codes, tokens)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        while len(self) > self.limit:
            self.popitem(last=False)


class OwnUsers(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """Clients, logins and tokens of a server whose people are in `users`."""

    authorization_response_iss_parameter_supported = True
    """The login form adds `iss` to its redirect back (RFC 9207), so the metadata may say so."""

    def __init__(self, issuer: str, users: dict[str, Any], *, token_ttl: int = 3600) -> None:
        self.issuer, self.users, self.token_ttl = issuer, users, token_ttl
        self.clients: Bounded = Bounded(1000)
        self.pending: Bounded = Bounded(1000)  # login form id -> (client_id, AuthorizationParams)
        self.codes: Bounded = Bounded(1000)
        self.access: Bounded = Bounded(10000)
        self.refresh: Bounded = Bounded(10000)
        self.logins = 0
        self.refreshes = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        form_id = secrets.token_urlsafe(32)
        self.pending[form_id] = (client.client_id, params)
        return f"{self.issuer}/login?form={form_id}"

    async def login(self, request: Request) -> Response:
        """GET: the sign-in form. POST: check the password, then back to the client with a code."""
        if request.method == "GET":
            form_id = request.query_params.get("form", "")
            if form_id not in self.pending:
                return HTMLResponse("<p>This sign-in link has expired.</p>", 400)
            return HTMLResponse(LOGIN_PAGE.format(form=html.escape(form_id, quote=True), error=""))
        if int(request.headers.get("content-length") or 0) > 4096:
            return HTMLResponse("<p>Too large.</p>", 413)
        form = await request.form(max_fields=5)
        form_id, name, password = (str(form.get(k, "")) for k in ("form", "username", "password"))
        if form_id not in self.pending:
            return HTMLResponse("<p>This sign-in link has expired.</p>", 400)
        salt, expected, allowed = self.users.get(name, (b"0" * 16, b"", frozenset()))
        if not hmac.compare_digest(hash_password(password, salt), expected):
            page = LOGIN_PAGE.format(
                form=html.escape(form_id, quote=True), error="Wrong user name or password."
            )
            return HTMLResponse(page, 401)
        client_id, params = self.pending.pop(form_id)
        code = AuthorizationCode(
            code=secrets.token_urlsafe(32),
            scopes=[s for s in params.scopes or ["desk"] if s in allowed],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=name,
        )
        self.codes[code.code] = code
        self.logins += 1
        back = construct_redirect_uri(
            str(params.redirect_uri), code=code.code, state=params.state, iss=self.issuer
        )
        return RedirectResponse(back, 302)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the code was already used")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:  # rotation: each refresh token works once
            raise TokenError("invalid_grant", "the refresh token was already used")
        self.refreshes += 1
        return self._issue(client.client_id, scopes, refresh_token)

    def _issue(
        self, client_id: str, scopes: list[str], grant: AuthorizationCode | RefreshToken
    ) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        # Rounded up: the token lives at least the `expires_in` the client is told (rounded down, a
        # client that used it in its last fraction of a second was refused).
        expires = math.ceil(time.time()) + self.token_ttl
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=tuple(scopes), expires_at=expires,
            resource=grant.resource, subject=grant.subject, claims={"iss": self.issuer},
        )  # fmt: skip
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=grant.resource, subject=grant.subject
        )
        return OAuthToken(
            access_token=access, expires_in=self.token_ttl, scope=" ".join(scopes), refresh_token=refresh
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found  # type: ignore[no-any-return]

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """End every token of this person and client (the grant), as RFC 7009 allows."""
        for store in (self.access, self.refresh):
            for key, value in list(store.items()):
                if (value.client_id, value.subject) == (token.client_id, token.subject):
                    del store[key]


LOGIN_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head><body>
<h1>Sign in to the refund desk</h1><p>{error}</p>
<form method="post" action="login"><input type="hidden" name="form" value="{form}">
<label>User name <input name="username" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button></form></body></html>"""


def build(base_url: str, *, token_ttl: int = 3600) -> tuple[MCPServer, OwnUsers]:
    """The server at `base_url` (its MCP endpoint is `base_url/mcp`), and its provider."""
    users = {"alice": user("wonderland", *SCOPES), "bob": user("builder", "desk", "offline_access")}
    provider = OwnUsers(base_url, users, token_ttl=token_ttl)
    mcp = MCPServer(
        "Refund desk",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base_url,
            resource_server_url=f"{base_url}/mcp",
            required_scopes=["desk"],
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @mcp.tool()
    async def whoami(who: Annotated[AccessToken, Resolve(access_token)]) -> str:
        """Who signed in."""
        return f"{who.subject} ({' '.join(who.scopes)})"

    @mcp.tool(scopes=["desk:refund"])
    async def refund(order_id: str, who: Annotated[AccessToken, Resolve(access_token)]) -> str:
        """Needs desk:refund: a client that lacks it steps up (the person signs in again for it)."""
        return f"{who.subject} refunded {order_id}"

    return mcp, provider


def app(base_url: str, **options: Any) -> Starlette:
    """The ASGI app: the MCP endpoint, the OAuth endpoints, and the login form."""
    mcp, provider = build(base_url, **options)
    served: Starlette = mcp.streamable_http_app()
    served.router.routes.append(Route("/login", provider.login, methods=["GET", "POST"]))
    return served


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app("http://127.0.0.1:8000"), host="127.0.0.1", port=8000)
