"""The official `MCPServer(...)` constructor as a port writes it: positional order, prebuilt lists, cache hints.

Also `authenticated_principal` and a bare `Context` under `mypy --strict`.
Where the official SDK can run the same server, the official client reads
both (ours over real HTTP) and the answers are compared.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.caching import CacheHint as OfficialCacheHint
from mcp.server.mcpserver.resources import FunctionResource as OfficialFunctionResource
from mcp.server.mcpserver.tools import Tool as OfficialTool

import mcp_resolve
from auth_helpers import serve_at_known_url
from conftest import ROOT
from http_helpers import http_server
from mcp_resolve import (
    CacheHint,
    Context,
    Icon,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    authenticated_principal,
)
from mcp_resolve.auth import AccessToken, AuthSettings
from mcp_resolve.resources import FunctionResource, Resource
from mcp_resolve.tools import Tool
from servers.raw_stdio import modern_meta

pytestmark = pytest.mark.anyio

SRC = ROOT / "src"
POSITIONAL = (
    "ported",
    "Ported Server",
    "Built positionally",
    "Call add.",
    "https://example.com/ported",
    [Icon(src="https://example.com/p.png", mime_type="image/png")],
    "3.1.4",
)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def readme() -> str:
    return "read me"


def _dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


@pytest.mark.slow
async def test_the_official_positional_order_gives_the_same_server_info_and_instructions() -> None:
    theirs = OfficialServer(*POSITIONAL)
    ours = MCPServer(*POSITIONAL)
    assert (ours.title, ours.description, ours.instructions, ours.website_url, ours.version) == (
        "Ported Server",
        "Built positionally",
        "Call add.",
        "https://example.com/ported",
        "3.1.4",
    )
    async with OfficialClient(theirs, mode="legacy") as client:
        expected = (_dump(client.server_info), client.instructions)
    async with (
        http_server(ours.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode="legacy") as client,
    ):
        got = (_dump(client.server_info), client.instructions)
    assert got == expected
    assert got[0]["version"] == "3.1.4" and got[1] == "Call add."


def test_auth_server_provider_needs_settings_and_no_second_verifier() -> None:
    """The official SDK's rules: a provider needs auth settings, and checks its own tokens."""
    from mcp_resolve.auth.provider import ProviderTokenVerifier

    with pytest.raises(ValueError) as refused:
        MCPServer("n", None, None, None, None, None, None, Fixed())  # type: ignore[arg-type]
    assert "auth_server_provider" in str(refused.value) and "AuthSettings" in str(refused.value)
    settings = AuthSettings(issuer_url="http://127.0.0.1:9", resource_server_url="http://127.0.0.1:9/mcp")
    with pytest.raises(ValueError) as both:
        MCPServer("n", auth_server_provider=Fixed(), token_verifier=Fixed(), auth=settings)  # type: ignore[arg-type]
    assert "one of them" in str(both.value)
    provider = Fixed()
    server = MCPServer("n", None, None, None, None, None, None, provider, auth=settings)  # type: ignore[arg-type]
    assert server.auth_server_provider is provider and server.auth is settings
    assert isinstance(server.token_verifier, ProviderTokenVerifier) and server.token_verifier.provider is provider


class Fixed:
    """A token verifier with one known token per user: user code, as a real deployment's would be."""

    TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}

    async def verify_token(self, token: str) -> AccessToken | None:
        user = self.TOKENS.get(token)
        if user is None:
            return None
        return AccessToken(
            token=token, client_id="desk-app", subject=user, claims={"iss": "https://issuer.example"}
        )


def test_token_verifier_is_the_ninth_positional_argument() -> None:
    verifier = Fixed()
    mcp = MCPServer(
        "n", None, None, None, None, None, None, None, verifier,
        auth=AuthSettings(issuer_url="https://issuer.example", resource_server_url="https://mcp.example/mcp"),
    )  # fmt: skip
    assert mcp.token_verifier is verifier


@pytest.mark.slow
async def test_prebuilt_tools_and_resources_serve_as_the_officials_do() -> None:
    theirs = OfficialServer(
        "prebuilt",
        tools=[OfficialTool.from_function(add, title="Adder")],
        resources=[OfficialFunctionResource.from_function(readme, "note://readme", mime_type="text/plain")],
    )
    ours = MCPServer(
        "prebuilt",
        tools=[Tool.from_function(add, title="Adder")],
        resources=[FunctionResource.from_function(readme, "note://readme", mime_type="text/plain")],
    )

    async def observe(client: Any) -> dict[str, Any]:
        tools = (await client.list_tools()).tools
        return {
            "tools": [(t.name, t.title, t.description, t.input_schema["properties"]) for t in tools],
            "call": _dump(await client.call_tool("add", {"a": 2, "b": 3}))["structuredContent"],
            "resources": [
                (str(r.uri), r.name, r.mime_type) for r in (await client.list_resources()).resources
            ],
            "read": (await client.read_resource("note://readme")).contents[0].text,
        }

    async with OfficialClient(theirs) as client:
        expected = await observe(client)
    async with http_server(ours.streamable_http_app()) as base, OfficialClient(f"{base}/mcp") as client:
        got = await observe(client)
    assert got == expected
    assert got["call"] == {"result": 5} and got["read"] == "read me"


def real_rate() -> float:
    raise RuntimeError("would call the exchange")


def convert(amount: float, rate: Annotated[float, Resolve(real_rate)]) -> float:
    return amount * rate


async def test_a_prebuilt_tool_resolves_through_the_servers_dependency_overrides() -> None:
    mcp = MCPServer(
        "fx", tools=[Tool.from_function(convert)], resources=[Resource.from_function(readme, "n://r")]
    )
    mcp.dependency_overrides[real_rate] = lambda: 2.0
    async with mcp_resolve.Client(mcp) as client:
        result = await client.call_tool("convert", {"amount": 3})
    assert result.structured_content == {"result": 6.0}
    with pytest.raises(TypeError):
        MCPServer("bad", tools=[convert])  # type: ignore[list-item]


CACHE_HINTS = {
    "tools/list": (60_000, "public"),
    "resources/read": (5_000, "private"),
    "prompts/list": (0, "public"),
}


@pytest.mark.slow
async def test_cache_hints_put_the_same_ttl_and_scope_on_results_as_the_official() -> None:
    def build(server_type: Any, hint_type: Any) -> Any:
        hints = {method: hint_type(ttl_ms=ttl, scope=scope) for method, (ttl, scope) in CACHE_HINTS.items()}
        mcp = server_type("cached", cache_hints=hints)
        mcp.tool()(add)
        mcp.resource("note://readme")(readme)
        mcp.prompt()(readme)
        return mcp

    async def observe(client: Any) -> dict[str, Any]:
        answers = {
            "tools/list": await client.list_tools(),
            "prompts/list": await client.list_prompts(),
            "resources/read": await client.read_resource("note://readme"),
        }
        return {method: (result.ttl_ms, result.cache_scope) for method, result in answers.items()}

    async with OfficialClient(build(OfficialServer, OfficialCacheHint)) as client:
        expected = await observe(client)
    ours = build(MCPServer, CacheHint)
    async with http_server(ours.streamable_http_app()) as base, OfficialClient(f"{base}/mcp") as client:
        assert client.protocol_version == "2026-07-28"
        got = await observe(client)
        unhinted = await client.list_resources()
    assert got == expected == CACHE_HINTS
    assert (unhinted.ttl_ms, unhinted.cache_scope) == (0, "public")  # cache_ttl_ms, as before


@pytest.mark.slow
async def test_cache_hints_win_over_cache_ttl_ms_method_by_method() -> None:
    mcp = MCPServer(
        "mixed", cache_ttl_ms=30_000, cache_hints={"server/discover": CacheHint(1_000, "private")}
    )
    mcp.tool()(add)
    async with http_server(mcp.streamable_http_app()) as base:
        async with OfficialClient(f"{base}/mcp") as client:
            listed = await client.list_tools()
        async with httpx.AsyncClient() as http:
            discover = await http.post(
                f"{base}/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "server/discover",
                    "params": {"_meta": modern_meta()},
                },
                headers={
                    "accept": "application/json, text/event-stream",
                    "mcp-protocol-version": "2026-07-28",
                    "mcp-method": "server/discover",
                },
            )
    assert (listed.ttl_ms, listed.cache_scope) == (30_000, "public")
    found = discover.json()["result"]
    assert (found["ttlMs"], found["cacheScope"]) == (1_000, "private")
    assert mcp.cache_hint("resources/read") == (0, "private")


def test_cache_hints_are_checked_at_construction() -> None:
    with pytest.raises(ValueError, match="cacheable methods"):
        MCPServer("x", cache_hints={"tools/call": CacheHint()})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="must be a CacheHint"):
        MCPServer("x", cache_hints={"tools/list": 5000})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        CacheHint(ttl_ms=-1)
    with pytest.raises(ValueError):
        CacheHint(scope="shared")  # type: ignore[arg-type]


def _protected(base: str) -> Any:
    mcp = MCPServer(
        "who",
        token_verifier=Fixed(),
        auth=AuthSettings(issuer_url="https://issuer.example", resource_server_url=f"{base}/mcp"),
    )

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        return str(authenticated_principal(ctx))

    @mcp.tool()
    def whoami_resolved(who: Annotated[str | None, Resolve(authenticated_principal)]) -> str:
        return str(who)

    @mcp.tool()
    def whoami_view(ctx: Context) -> str:
        return str(authenticated_principal(ctx.request_context))  # the official SDK's spelling

    return mcp.streamable_http_app()


@pytest.mark.slow
async def test_authenticated_principal_names_the_verified_caller_and_nobody_else() -> None:
    async with serve_at_known_url(_protected) as base:
        seen: dict[str, list[str]] = {}
        for token in ("tok-alice", "tok-bob"):
            async with mcp_resolve.Client(f"{base}/mcp", auth=token) as client:
                seen[token] = [
                    (await client.call_tool(name, {"who": "mallory"})).content[0].text  # type: ignore[union-attr]
                    for name in ("whoami", "whoami_resolved", "whoami_view")
                ]
    alice = '["https://issuer.example","alice","desk-app"]'
    assert seen["tok-alice"] == [alice] * 3
    assert seen["tok-bob"][0] == alice.replace("alice", "bob") and len(set(seen["tok-bob"])) == 1

    mcp = MCPServer("open")

    @mcp.tool()
    def anonymous(ctx: Context) -> str:
        return repr(authenticated_principal(ctx))

    async with mcp_resolve.Client(mcp) as client:
        assert (await client.call_tool("anonymous", {})).content[0].text == "None"  # type: ignore[union-attr]


def test_bind_principal_takes_the_official_spellings_and_refuses_what_it_cannot_honour() -> None:
    assert RequestStateSecurity.ephemeral(bind_principal=authenticated_principal) is not None
    assert RequestStateSecurity.ephemeral(bind_principal=None) is not None
    with pytest.raises(TypeError, match="principal"):
        RequestStateSecurity.ephemeral(bind_principal=lambda ctx: "me")


BARE_CONTEXT = """
from typing import Annotated

from mcp_resolve import Context, MCPServer, Resolve, authenticated_principal

mcp = MCPServer("bare")


@mcp.tool()
async def tool(ctx: Context) -> str:
    await ctx.info("hello")
    return ctx.protocol_version


@mcp.tool()
def who(ctx: Context, caller: Annotated[str | None, Resolve(authenticated_principal)]) -> str:
    return str(authenticated_principal(ctx)) + str(caller) + str(ctx.lifespan_context)
"""


@pytest.mark.slow
def test_a_bare_context_passes_mypy_strict_as_the_docs_show_it(tmp_path: Path) -> None:
    snippet = tmp_path / "bare_context.py"
    snippet.write_text(textwrap.dedent(BARE_CONTEXT))
    env = {**os.environ, "PYTHONPATH": str(SRC), "MYPYPATH": str(SRC)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            str(snippet),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=170,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_the_cacheable_methods_are_the_protocols() -> None:
    """mcp_resolve._caching spells them out (importing mcp_types.methods is slow); they must not drift."""
    from typing import get_args

    from mcp_types import methods

    from mcp_resolve import _caching as caching

    assert caching.CACHEABLE_METHODS == methods.CACHEABLE_METHODS
    assert set(get_args(caching.CacheableMethod)) == set(get_args(methods.CacheableMethod))
