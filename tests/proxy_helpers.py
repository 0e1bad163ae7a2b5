"""A person who signs in through an `OAuthProxy`, for clients driven headlessly.

`ConsentingBrowser` is an HTTP client with a cookie jar that visits the
authorization URL the way a browser would: it follows redirects, and when it
lands on the proxy's consent page it reads the form (every hidden field, the
CSRF token among them) and presses Approve (or Deny), then follows on through
the upstream provider's scripted login back to the client's redirect URI,
which it captures instead of visiting. It is both handlers a client's OAuth
flow takes (ours, and the official SDK's through `redirect_handler` /
`callback_handler`). The consent page's look and its behaviour in a real
browser are tested with Chromium elsewhere; this is the person in a hurry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html.parser import HTMLParser
from typing import Annotated, Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from pydantic import BaseModel

from mcp_resolve import Elicit, MCPServer, Resolve
from mcp_resolve.auth.proxy import (
    UpstreamConfig,
    UpstreamIdentity,
    UpstreamToken,
    upstream_identity,
    upstream_token,
)

__all__ = ["CORP", "READ", "WRITE", "ConsentForm", "ConsentingBrowser", "desk", "proxied_desk"]


class ConsentForm(HTMLParser):
    """The consent page's form: its action and its hidden fields."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self.decisions: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form" and self.action is None:
            self.action = values.get("action", "")
        elif tag == "input" and values.get("type") == "hidden" and "name" in values:
            self.fields[values["name"]] = values.get("value", "")
        elif tag == "button" and values.get("name") == "decision":
            self.decisions.append(values.get("value", ""))

    @classmethod
    def read(cls, html: str) -> ConsentForm:
        form = cls()
        form.feed(html)
        return form


def _same_endpoint(url: str, redirect_uri: str) -> bool:
    a, b = urlsplit(url), urlsplit(redirect_uri)
    return (a.scheme, a.hostname, a.port, a.path) == (b.scheme, b.hostname, b.port, b.path)


class ConsentingBrowser:
    """Visits an authorization URL like a person who approves (or denies) on the consent page."""

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:47823/callback",
        *,
        decision: str = "approve",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._redirect_uri = redirect_uri
        self.decision = decision
        self.transport = transport
        """What the browser sends through (a fleet test's: each step to another worker); httpx's by default."""
        self.cookies = httpx.Cookies()
        self.consent_pages = 0
        """How many consent pages this person saw (a remembered approval shows none)."""
        self.callbacks: list[str] = []
        """The redirects back to the client not yet taken by a callback handler."""
        self.sign_ins = 0
        """How many times this person was sent to sign in."""

    async def redirect_uri(self) -> str:
        return self._redirect_uri

    async def __call__(self, url: str) -> None:
        """Our client's redirect handler (and the official SDK's): browse to the redirect back."""
        self.sign_ins += 1
        self.callbacks.append(await self.visit(url))

    async def visit(self, url: str) -> str:
        """Browse from `url` to the redirect back to the client; the URL of that redirect."""
        async with httpx.AsyncClient(
            cookies=self.cookies, timeout=30, follow_redirects=False, transport=self.transport
        ) as http:
            try:
                return await self._browse(http, url)
            finally:
                self.cookies = http.cookies  # the browser keeps its cookies from one sign-in to the next

    async def _browse(self, http: httpx.AsyncClient, url: str) -> str:
        response = await http.get(url)
        for _hop in range(20):
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                if _same_endpoint(url, self._redirect_uri):
                    return url
                response = await http.get(url)
                continue
            if response.status_code == 200 and "text/html" in response.headers.get("content-type", ""):
                form = ConsentForm.read(response.text)
                if form.action is None:
                    break
                self.consent_pages += 1
                url = urljoin(url, form.action)
                response = await http.post(url, data={**form.fields, "decision": self.decision})
                continue
            break
        raise AssertionError(f"the sign-in stopped at HTTP {response.status_code}: {response.text[:300]}")

    async def wait_for_callback(self, state: str, timeout: float) -> object:
        """Our client's callback handler: the redirect back this browser captured."""
        from mcp_resolve.client.auth.browser import AuthorizationResponse

        return AuthorizationResponse.from_url(self.callbacks.pop(0))

    async def official_callback(self) -> Any:
        """The official SDK's callback handler: code, state and `iss` (RFC 9207) of the redirect back."""
        from mcp.shared.auth import AuthorizationCodeResult

        query = parse_qs(urlsplit(self.callbacks.pop(0)).query)
        first = {name: values[0] for name, values in query.items()}
        return AuthorizationCodeResult(code=first["code"], state=first.get("state"), iss=first.get("iss"))


# ---------------------------------------------------------------------------------------------
# A desk behind an OAuthProxy, with the upstream on loopback
# ---------------------------------------------------------------------------------------------

READ, WRITE = "desk:read", "desk:write"

CORP = UpstreamConfig(
    name="corp",
    client_id="mcp",
    client_secret="s" * 40,
    authorization_endpoint="https://sso.corp.example/authorize",
    token_endpoint="https://sso.corp.example/token",
    userinfo_endpoint="https://sso.corp.example/me",
    identity_source="userinfo",
    claim_map={"subject": "id"},
)
"""An upstream no test reaches (its endpoints are never called): for a proxy driven in process."""


class Sure(BaseModel):
    sure: bool


async def confirmed(who: Annotated[UpstreamIdentity, Resolve(upstream_identity)]) -> Sure | Elicit[Sure]:
    return Elicit(f"{who.subject}, are you sure?", Sure)


def desk(proxy: Any, userinfo_url: str) -> Any:
    """An MCP server behind `proxy`: who signed in, a call to the upstream on their behalf, a tool
    that needs WRITE (step-up), one that asks a question first (2026-07-28 rounds), and a task."""
    mcp = MCPServer("Proxied Desk", auth_server_provider=proxy)

    @mcp.tool()
    async def whoami(who: Annotated[UpstreamIdentity, Resolve(upstream_identity)]) -> str:
        return f"{who.provider}:{who.login or who.subject} <{who.email}> groups={','.join(who.groups)}"

    @mcp.tool()
    async def upstream_me(token: Annotated[UpstreamToken, Resolve(upstream_token)]) -> str:
        """Call the upstream's user endpoint with the person's upstream token."""
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.get(userinfo_url, headers=token.headers())
        return f"{answer.status_code} {answer.text}"

    @mcp.tool(scopes=[WRITE])
    async def refund(who: Annotated[UpstreamIdentity, Resolve(upstream_identity)]) -> str:
        return f"refunded for {who.login or who.subject}"

    @mcp.tool()
    async def careful(
        sure: Annotated[Sure, Resolve(confirmed)],
        who: Annotated[UpstreamIdentity, Resolve(upstream_identity)],
    ) -> str:
        return f"{who.subject} sure={sure.sure}"

    @mcp.tool(task_support="optional")
    async def slow_whoami(who: Annotated[UpstreamIdentity, Resolve(upstream_identity)]) -> str:
        return f"task for {who.subject}"

    return mcp


@asynccontextmanager
async def proxied_desk(
    mode: str = "oidc",
    *,
    account: str = "alice",
    upstream_server: dict[str, Any] | None = None,
    app_options: dict[str, Any] | None = None,
    **proxy_options: Any,
) -> AsyncIterator[tuple[Any, Any, str]]:
    """(upstream, proxy, MCP URL) of `desk` behind an OAuthProxy whose upstream is oidc-provider in
    `mode` ("oidc": Google-like through `OIDCProxy`; "oauth": GitHub-like through `GitHubProvider`).
    `upstream_server` are options of the upstream itself (`upstream_provider`: `access_ttl_s` ...);
    `upstream_options` among `proxy_options` are added to the proxy's loopback ones (`timeout_s`);
    `app_options` are the app's (`HttpOptions`: `max_registrations_per_address` ...)."""
    from auth_helpers import serve_at_known_url
    from mcp_resolve.auth.proxy import GitHubProvider, OIDCProxy
    from upstream_helpers import upstream_provider

    async with upstream_provider(mode, account=account, **(upstream_server or {})) as upstream:  # type: ignore[arg-type]
        made: dict[str, Any] = {}

        def make(base: str) -> Any:
            options = {"scopes": [READ, WRITE], "required_scopes": [READ], **proxy_options}
            more = dict(options.pop("upstream_options", None) or {})  # e.g. a short timeout_s
            if mode == "oidc":
                proxy = OIDCProxy(
                    discovery_url=upstream.discovery_url,
                    client_id=upstream.client_id,
                    client_secret=upstream.client_secret,
                    base_url=base,
                    upstream_name="google",
                    upstream_display_name="Google",
                    upstream_options={"allow_http_loopback": True, **more},
                    **options,
                )
            else:
                endpoints = upstream.endpoints
                proxy = GitHubProvider(
                    client_id=upstream.client_id,
                    client_secret=upstream.client_secret,
                    base_url=base,
                    upstream_options={
                        "authorization_endpoint": endpoints["authorization_endpoint"],
                        "token_endpoint": endpoints["token_endpoint"],
                        "userinfo_endpoint": endpoints["userinfo_endpoint"],
                        "allow_http_loopback": True,
                        **more,
                    },
                    **options,
                )
            made["proxy"] = proxy
            served = desk(proxy, upstream.endpoints["userinfo_endpoint"])
            return served.streamable_http_app(**(app_options or {}))

        async with serve_at_known_url(make) as base:
            yield upstream, made["proxy"], f"{base}/mcp"
