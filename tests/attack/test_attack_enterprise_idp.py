"""Enterprise sign-in and workload identity against answers that lie: nothing unusable is sent on or kept.

One Starlette app plays a protected MCP server, its authorization server and
an enterprise IdP at once (driven in process through httpx's ASGI
transport). Each test bends one answer of the IdP's token exchange (too big,
the wrong token type, no token, a token that is not a JWT, an answer that
never finishes) or the workload's assertion source (a huge file, not a JWT,
a function that fails). The client must stop with an `AuthorizationError`
before anything reaches the MCP server's authorization server, within its
deadline, and never put the ID token, the ID-JAG or the assertion in an
error message or a log line.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcp_resolve.client.auth import AuthorizationError, EnterpriseIdP, OAuth, WorkloadIdentity
from mcp_resolve.client.auth.assertion import MAX_ASSERTION_CHARS

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1:9"
IDP = "http://127.0.0.1:9/idp"
MCP = f"{BASE}/mcp"


def fake_jwt(secret_marker: str) -> str:
    part = base64.urlsafe_b64encode(json.dumps({"sub": secret_marker}).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJFUzI1NiJ9.{part}.c2lnbmF0dXJl"


ID_TOKEN = fake_jwt("ID-TOKEN-SECRET-3f9a")
ID_JAG = fake_jwt("ID-JAG-SECRET-8c2e")
ASSERTION = fake_jwt("ASSERTION-SECRET-51d7")


class Hostile:
    """The MCP server, its authorization server and the IdP; `idp_answer` is what the exchange returns."""

    def __init__(self) -> None:
        self.idp_answer: Any = {
            "access_token": ID_JAG,
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
        }
        self.idp_status = 200
        self.idp_delay = 0.0
        self.as_answer: Any = {"access_token": "at-ok", "token_type": "Bearer", "expires_in": 60}
        self.as_requests: list[dict[str, str]] = []
        self.idp_requests: list[dict[str, str]] = []

    def app(self) -> Starlette:
        async def mcp(request: Request) -> Response:
            if request.headers.get("authorization") == "Bearer at-ok":
                return JSONResponse({"jsonrpc": "2.0", "id": 1, "result": {}})
            challenge = f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
            return Response(status_code=401, headers={"www-authenticate": challenge})

        async def prm(request: Request) -> Response:
            return JSONResponse({"resource": MCP, "authorization_servers": [BASE]})

        async def as_metadata(request: Request) -> Response:
            return JSONResponse(
                {
                    "issuer": BASE,
                    "token_endpoint": f"{BASE}/token",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                }
            )

        async def as_token(request: Request) -> Response:
            self.as_requests.append({k: str(v) for k, v in (await request.form()).items()})
            return JSONResponse(self.as_answer)

        async def idp_token(request: Request) -> Response:
            self.idp_requests.append({k: str(v) for k, v in (await request.form()).items()})
            await anyio.sleep(self.idp_delay)
            if isinstance(self.idp_answer, bytes):
                return Response(self.idp_answer, status_code=self.idp_status, media_type="application/json")
            return JSONResponse(self.idp_answer, status_code=self.idp_status)

        return Starlette(
            routes=[
                Route("/mcp", mcp, methods=["POST"]),
                Route("/.well-known/oauth-protected-resource/mcp", prm),
                Route("/.well-known/oauth-authorization-server", as_metadata),
                Route("/token", as_token, methods=["POST"]),
                Route("/idp/token", idp_token, methods=["POST"]),
            ]
        )

    def client(self, timeout: float = 5.0) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app()), timeout=timeout)

    async def call(self, auth: httpx.Auth) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app()), auth=auth) as http:
            return await http.post(MCP, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def enterprise_auth(hostile: Hostile, timeout: float = 5.0, subject: Any = ID_TOKEN) -> OAuth:
    return OAuth(
        client_id="app",
        client_secret="app-secret",
        enterprise=EnterpriseIdP(subject, token_endpoint=f"{IDP}/token", client_id="app-at-idp"),
        http_client=lambda: hostile.client(timeout),
    )


def assert_nothing_leaked(text: str) -> None:
    for secret in (ID_TOKEN, ID_JAG, ASSERTION, "SECRET"):
        assert secret not in text


async def test_a_well_behaved_idp_gets_the_client_through() -> None:
    """The baseline the hostile cases bend: exchange, then the JWT bearer grant with the ID-JAG."""
    hostile = Hostile()
    response = await hostile.call(enterprise_auth(hostile))
    assert response.status_code == 200
    assert hostile.idp_requests[0]["subject_token"] == ID_TOKEN
    assert hostile.as_requests[0]["assertion"] == ID_JAG


@pytest.mark.parametrize(
    ("answer", "status", "error"),
    [
        (b"{" + b" " * (128 * 1024) + b"}", 200, "response_too_large"),
        (
            {"access_token": ID_JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"},
            200,
            "invalid_token_response",
        ),
        ({"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"}, 200, "invalid_token_response"),
        (
            {"access_token": 42, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"},
            200,
            "invalid_token_response",
        ),
        (
            {"access_token": "not a jwt\n", "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"},
            200,
            "invalid_token_response",
        ),
        (b"<html>sign in</html>", 200, "invalid_response"),
        (["a", "list"], 200, "token_exchange_failed"),
        ({"error": "access_denied\x1b[31m", "error_description": "x" * 5000}, 400, "access_denied?[31m"),
    ],
    ids=[
        "oversized",
        "wrong-type",
        "no-token",
        "token-not-string",
        "token-not-jwt",
        "html",
        "not-object",
        "hostile-error",
    ],
)
async def test_a_lying_idp_stops_the_sign_in_before_the_authorization_server(
    answer: Any, status: int, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    hostile = Hostile()
    hostile.idp_answer, hostile.idp_status = answer, status
    with pytest.raises(AuthorizationError) as refused:
        await hostile.call(enterprise_auth(hostile))
    assert refused.value.error == error
    assert hostile.as_requests == []  # nothing the IdP said was shown to the MCP authorization server
    assert len(str(refused.value)) < 700
    assert_nothing_leaked(str(refused.value) + caplog.text)


async def test_an_idp_that_never_finishes_is_given_up_within_the_deadline() -> None:
    hostile = Hostile()
    hostile.idp_delay = 30.0
    with anyio.fail_after(10):
        with pytest.raises(AuthorizationError) as refused:
            await hostile.call(enterprise_auth(hostile, timeout=0.5))
    assert refused.value.error == "network_error"
    assert hostile.as_requests == []


@pytest.mark.parametrize(
    "source",
    ["not-a-jwt", "a.b", "x" * (MAX_ASSERTION_CHARS + 10), "eyJ.eyJ.sig\x00"],
    ids=["plain", "two-parts", "oversized", "control-char"],
)
async def test_a_subject_token_that_is_not_a_jwt_is_never_sent(source: str) -> None:
    hostile = Hostile()
    with pytest.raises(AuthorizationError) as refused:
        await hostile.call(enterprise_auth(hostile, subject=source))
    assert refused.value.error == "assertion_unavailable"
    assert hostile.idp_requests == []


async def test_hostile_workload_assertion_sources(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    hostile = Hostile()
    huge = tmp_path / "huge"
    huge.write_text(ASSERTION + "A" * (MAX_ASSERTION_CHARS + 100))
    missing = tmp_path / "missing"

    def failing() -> str:
        raise RuntimeError(f"metadata server said {ASSERTION}")

    for source in (huge, missing, failing, lambda: 42):
        auth = WorkloadIdentity(source, http_client=hostile.client)  # type: ignore[arg-type]
        with pytest.raises(AuthorizationError) as refused:
            await hostile.call(auth)
        assert refused.value.error == "assertion_unavailable"
        assert_nothing_leaked(str(refused.value))
    assert hostile.as_requests == []
    assert_nothing_leaked(caplog.text)


async def test_an_assertion_function_that_never_answers_is_given_up_within_the_deadline() -> None:
    hostile = Hostile()

    async def metadata_server_hangs() -> str:
        await anyio.sleep(60)
        return ASSERTION

    auth = WorkloadIdentity(metadata_server_hangs, http_client=lambda: hostile.client(0.5))
    with anyio.fail_after(10), pytest.raises(AuthorizationError) as refused:
        await hostile.call(auth)
    assert refused.value.error == "assertion_unavailable" and "did not answer within 0.5 s" in str(
        refused.value
    )
    assert hostile.as_requests == []


async def test_a_workload_token_answer_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    hostile = Hostile()
    hostile.as_answer = {"access_token": "at-ok", "token_type": "mac"}
    path = tmp_path / "token"
    path.write_text(ASSERTION)
    with pytest.raises(AuthorizationError) as refused:
        await hostile.call(WorkloadIdentity(path, http_client=hostile.client))
    assert refused.value.error == "invalid_token_response"
    assert hostile.as_requests[0]["assertion"] == ASSERTION
    assert hostile.as_requests[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
