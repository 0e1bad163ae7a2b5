"""A protected Streamable HTTP endpoint on real uvicorn: 401/403 challenges, metadata, fail closed.

The authorization server is `auth_helpers.TestIssuer` on its own loopback
port (JWKS fetched over HTTP); the MCP server runs at a URL it knows before
it starts, so its resource URL is the one clients really use.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.auth.provider import AccessToken as OfficialAccessToken
from starlette.applications import Starlette

from auth_helpers import TestIssuer, forged_tokens, issuer_served, serve_at_known_url
from http_helpers import free_port, initialize_request
from mcp_resolve import MCPServer
from mcp_resolve.auth import AccessToken, AuthSettings, JWTVerifier
from mcp_resolve.auth.tokens import DPOP_ALGORITHMS
from mcp_resolve.transports.http._auth.bearer import BearerCheck

pytestmark = pytest.mark.anyio

JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    """A 2026-07-28 request and the headers that must mirror it."""
    params = {**(params or {}), "_meta": META}
    headers = {**JSON_AND_SSE, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    return {
        "json": {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
        "headers": headers,
    }


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def open_desk(resource: str, verifier: Any, issuer: str, **settings: Any) -> MCPServer:
    mcp = MCPServer(
        "protected-desk",
        token_verifier=verifier,
        auth=AuthSettings(issuer_url=issuer, resource_server_url=resource, **settings),
    )

    @mcp.tool()
    async def ping() -> str:
        return "pong"

    @mcp.tool(scopes=["refunds:write"])
    async def refund(order_id: str) -> str:
        return f"refunded {order_id}"

    return mcp


@asynccontextmanager
async def protected(
    issuer: TestIssuer, make: Callable[[str], MCPServer] | None = None, **settings: Any
) -> AsyncIterator[str]:
    """Serve a protected desk; yields its MCP URL (its resource URL too)."""

    def app(base: str) -> Starlette:
        resource = f"{base}/mcp"
        if make is not None:
            return make(resource).streamable_http_app()  # type: ignore[no-any-return]
        verifier = JWTVerifier(jwks_uri=f"{issuer.base}/jwks")
        return open_desk(resource, verifier, issuer.base, **settings).streamable_http_app()  # type: ignore[no-any-return]

    async with serve_at_known_url(app) as base:
        yield f"{base}/mcp"


@pytest.fixture
async def issuer() -> AsyncIterator[TestIssuer]:
    async with issuer_served(TestIssuer()) as served:
        yield served


def challenge(response: httpx.Response) -> str:
    return response.headers["www-authenticate"]


@pytest.mark.slow
async def test_no_token_is_a_401_that_points_at_the_metadata(issuer: TestIssuer) -> None:
    async with protected(issuer) as url, httpx.AsyncClient() as http:
        metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        for response in (
            await http.post(url, **modern("tools/list")),
            await http.get(url, headers={"accept": "text/event-stream", "mcp-session-id": "x"}),
            await http.delete(url, headers={"mcp-session-id": "x"}),
        ):
            assert response.status_code == 401
            assert (
                challenge(response) == f'Bearer resource_metadata="{metadata}"'
            )  # no error code: none was sent
            assert response.json()["error"]["message"].startswith("Unauthorized")


@pytest.mark.slow
async def test_every_refused_token_is_a_401_invalid_token_that_never_echoes_it(issuer: TestIssuer) -> None:
    async with protected(issuer) as url, httpx.AsyncClient() as http:
        good = await http.post(url, **_with(modern("tools/list"), bearer(issuer.mint(url))))
        assert good.status_code == 200, good.text
        forged = forged_tokens(issuer, url)
        forged.pop("ten megabyte claim")  # over any HTTP server's header limit; see the hostile-header test
        for name, token in forged.items():
            response = await http.post(url, **_with(modern("tools/list"), bearer(token)))
            assert response.status_code == 401, name
            assert 'error="invalid_token"' in challenge(response), name
            assert token not in response.text and token not in challenge(response), name


def _with(request: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    return {**request, "headers": {**request["headers"], **headers}}


@pytest.mark.slow
async def test_hostile_authorization_headers_are_refused_cleanly(issuer: TestIssuer) -> None:
    async with protected(issuer) as url, httpx.AsyncClient() as http:
        for value in (
            "Bearer",
            "Bearer a b",
            "Bearer a,b",
            "Bearer =abc",
            "bEaReR x.y.z",
            "Bearer " + "a" * 20_000,
        ):
            response = await http.post(url, **_with(modern("tools/list"), {"authorization": value}))
            assert response.status_code == 401, value
            assert 'error="invalid_token"' in challenge(response), value
        for other_scheme in (
            "Basic YWxpY2U6c2VjcmV0",
            "Token abc",
        ):  # not a bearer token: as if none was sent
            response = await http.post(url, **_with(modern("tools/list"), {"authorization": other_scheme}))
            assert response.status_code == 401 and "error=" not in challenge(response)
        raw = modern("tools/list")
        raw_headers = [(k.encode(), v.encode()) for k, v in raw["headers"].items()]
        response = await http.post(
            url, json=raw["json"], headers=[*raw_headers, (b"authorization", b"Bearer \xff\xfe\x80")]
        )
        assert response.status_code == 401


@pytest.mark.slow
async def test_a_ten_megabyte_token_is_refused_without_being_read(issuer: TestIssuer) -> None:
    """Past uvicorn (which bounds headers itself), straight into the ASGI app: still a plain 401."""
    verifier = JWTVerifier(jwks_uri=f"{issuer.base}/jwks")
    app = open_desk("http://127.0.0.1/mcp", verifier, issuer.base).streamable_http_app()
    huge = forged_tokens(issuer, "http://127.0.0.1/mcp")["ten megabyte claim"]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.post("/mcp", **_with(modern("tools/list"), bearer(huge)))
    assert response.status_code == 401 and 'error="invalid_token"' in challenge(response)
    assert issuer.jwks_fetches == 0  # refused on its length, before any key was looked up


@pytest.mark.slow
async def test_protected_resource_metadata_is_public_and_cors_open(issuer: TestIssuer) -> None:
    async with protected(issuer, required_scopes=["mcp:use"]) as url, httpx.AsyncClient() as http:
        base = url.removesuffix("/mcp")
        expected = {
            "resource": url,
            "authorization_servers": [issuer.base],
            "bearer_methods_supported": ["header"],
            "resource_name": "protected-desk",
            "scopes_supported": ["mcp:use"],
            "dpop_signing_alg_values_supported": list(DPOP_ALGORITHMS),
        }
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            response = await http.get(base + path, headers={"origin": "https://app.example"})
            assert response.status_code == 200 and response.json() == expected
            assert response.headers["access-control-allow-origin"] == "*"
        preflight = await http.options(
            base + "/.well-known/oauth-protected-resource/mcp",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "GET",
                "access-control-request-headers": "mcp-protocol-version",
            },
        )
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == "*"
        refused = await http.post(url, **modern("tools/list"))
        assert refused.status_code == 401 and 'scope="mcp:use"' in challenge(refused)


@pytest.mark.slow
async def test_a_tool_scope_is_a_403_step_up_challenge_on_both_eras(issuer: TestIssuer) -> None:
    async with protected(issuer) as url, httpx.AsyncClient() as http:
        reader = bearer(issuer.mint(url, scope="read"))
        call = modern("tools/call", {"name": "refund", "arguments": {"order_id": "A-1"}}, request_id=7)
        refused = await http.post(url, **_with(call, reader))
        assert refused.status_code == 403
        assert challenge(refused).startswith('Bearer error="insufficient_scope"')
        assert 'scope="refunds:write"' in challenge(refused)
        assert (
            f'resource_metadata="{url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")}"'
            in challenge(refused)
        )
        assert refused.json()["id"] == 7
        listed = await http.post(url, **_with(modern("tools/list"), reader))
        assert {tool["name"] for tool in listed.json()["result"]["tools"]} == {
            "ping",
            "refund",
        }  # listed to all
        writer = bearer(issuer.mint(url, scope="read refunds:write"))
        allowed = await http.post(url, **_with(call, writer))
        assert allowed.json()["result"]["content"][0]["text"] == "refunded A-1"

        # The handshake era: the same challenge on the session's POST.
        init = initialize_request()
        opened = await http.post(url, json=init, headers={**JSON_AND_SSE, **reader})
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        legacy_call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call["json"]["params"]}
        refused = await http.post(url, json=legacy_call, headers={**JSON_AND_SSE, **session, **reader})
        assert refused.status_code == 403 and 'scope="refunds:write"' in challenge(refused)


@pytest.mark.slow
async def test_server_wide_required_scopes_are_named_in_one_challenge_with_the_tools(
    issuer: TestIssuer,
) -> None:
    async with protected(issuer, required_scopes=["mcp:use"]) as url, httpx.AsyncClient() as http:
        without = await http.post(url, **_with(modern("tools/list"), bearer(issuer.mint(url, scope="read"))))
        assert without.status_code == 403 and 'scope="mcp:use"' in challenge(without)
        token = bearer(issuer.mint(url, scope="mcp:use"))
        call = modern("tools/call", {"name": "refund", "arguments": {"order_id": "A-1"}})
        refused = await http.post(url, **_with(call, token))
        assert 'scope="mcp:use refunds:write"' in challenge(refused)  # everything the call needs, at once


@pytest.mark.slow
async def test_verifier_failures_fail_closed_with_a_log_line_and_no_500(
    issuer: TestIssuer, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        async def verify_token(self, token: str) -> AccessToken | None:
            raise RuntimeError(f"database down while checking {token}")

    def broken(resource: str) -> MCPServer:
        return open_desk(resource, Broken(), issuer.base)

    def jwks_down(resource: str) -> MCPServer:
        return open_desk(resource, JWTVerifier(jwks_uri=f"http://127.0.0.1:{free_port()}/jwks"), issuer.base)

    with caplog.at_level(logging.INFO, logger="mcp_resolve"):
        for make, logged in (
            (broken, "token verification failed (RuntimeError)"),
            (jwks_down, "JWKS unavailable"),
        ):
            async with protected(issuer, make) as url, httpx.AsyncClient() as http:
                token = issuer.mint(url)
                response = await http.post(url, **_with(modern("tools/list"), bearer(token)))
                assert response.status_code == 401 and 'error="invalid_token"' in challenge(response)
                assert logged in caplog.text
                assert token not in caplog.text and "Traceback" not in caplog.text


@pytest.mark.slow
async def test_a_verifier_ported_from_the_official_sdk_keeps_working(issuer: TestIssuer) -> None:
    class Ported:  # returns the official SDK's AccessToken, as a server written for it does
        async def verify_token(self, token: str) -> OfficialAccessToken | None:
            if token != "opaque-token-1":
                return None
            return OfficialAccessToken(
                token=token, client_id="legacy", scopes=["refunds:write"], subject="bob"
            )

    def ported(resource: str) -> MCPServer:
        return open_desk(resource, Ported(), issuer.base)

    async with protected(issuer, ported) as url, httpx.AsyncClient() as http:
        call = modern("tools/call", {"name": "refund", "arguments": {"order_id": "B-2"}})
        response = await http.post(url, **_with(call, bearer("opaque-token-1")))
        assert response.json()["result"]["content"][0]["text"] == "refunded B-2"
        assert (await http.post(url, **_with(call, bearer("opaque-token-2")))).status_code == 401


@pytest.mark.slow
async def test_a_token_for_another_resource_is_refused_by_the_resource_check(issuer: TestIssuer) -> None:
    class Elsewhere:
        async def verify_token(self, token: str) -> AccessToken | None:
            resource = None if token == "unnamed" else "https://other.example/mcp"
            return AccessToken(token=token, client_id="c", scopes=("refunds:write",), resource=resource)

    for validate, unnamed_status in ((None, 200), (True, 401)):

        def make(resource: str, validate: bool | None = validate) -> MCPServer:
            return open_desk(resource, Elsewhere(), issuer.base, validate_token_resource=validate)

        async with protected(issuer, make) as url, httpx.AsyncClient() as http:
            assert (await http.post(url, **_with(modern("tools/list"), bearer("named")))).status_code == 401
            unnamed = await http.post(url, **_with(modern("tools/list"), bearer("unnamed")))
            assert unnamed.status_code == unnamed_status


def test_half_protected_servers_and_unenforceable_scopes_are_refused() -> None:
    settings = AuthSettings(
        issuer_url="https://auth.example.com", resource_server_url="https://mcp.example.com/mcp"
    )
    with pytest.raises(ValueError, match="needs token_verifier"):
        MCPServer("half", auth=settings)
    with pytest.raises(ValueError, match="needs auth=AuthSettings"):
        MCPServer("half", token_verifier=JWTVerifier(jwks_uri="https://auth.example.com/jwks"))
    with pytest.raises(ValueError, match="https"):
        AuthSettings(issuer_url="http://auth.example.com", resource_server_url="https://mcp.example.com/mcp")
    with pytest.raises(ValueError, match="not a valid OAuth scope"):
        AuthSettings(
            issuer_url="https://a.example", resource_server_url="https://b.example", required_scopes=['a"b']
        )

    open_server = MCPServer("open")

    @open_server.tool(scopes=["refunds:write"])
    async def refund() -> str:
        return "refunded"

    with pytest.raises(ValueError, match="declare scopes=, but this server has no token_verifier"):
        open_server.streamable_http_app()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raw=st.one_of(
        st.binary(max_size=400),
        st.text(alphabet="Bearer .=-_~+/AZaz09\t,\"'", max_size=400).map(str.encode),
        st.lists(st.text(alphabet="AZaz09-_", max_size=60), max_size=6).map(
            lambda p: b"Bearer " + ".".join(p).encode()
        ),
    )
)
def test_any_authorization_header_gets_a_token_or_a_challenge_never_an_exception(raw: bytes) -> None:
    """Whatever bytes arrive in Authorization: a 401 (or an AccessToken for a real one), never a raise."""
    outcome = anyio.run(_BEARER_CHECK.authenticate, raw)
    assert not isinstance(outcome, AccessToken)
    assert outcome.status_code == 401
    assert outcome.headers["www-authenticate"].startswith("Bearer ")


def _bearer_check() -> BearerCheck:
    issuer = TestIssuer()
    issuer.base = "https://auth.example.com"
    mcp = open_desk("https://mcp.example.com/mcp", JWTVerifier(public_key=issuer.public_pem()), issuer.base)
    return BearerCheck(mcp)


_BEARER_CHECK = _bearer_check()


@pytest.mark.slow
def test_an_open_server_loads_nothing_of_auth() -> None:
    """No verifier, no cost: building and serving an open app imports neither joserfc nor the auth code."""
    script = (
        "import sys\n"
        "from mcp_resolve import MCPServer\n"
        "mcp = MCPServer('open')\n"
        "@mcp.tool()\n"
        "def ping() -> str:\n"
        "    return 'pong'\n"
        "mcp.streamable_http_app()\n"
        "loaded = [m for m in sys.modules if m.startswith(('joserfc', 'mcp_resolve.auth', 'mcp_resolve.transports.http._auth.bearer', 'mcp_resolve.transports.http._auth.prm'))]\n"
        "print(loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
