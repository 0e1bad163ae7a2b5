"""Clients we did not write, signing in through an `OAuthProxy` (`proxied_desk`).

The upstream is oidc-provider on loopback, set up as Google ("oidc") or as
GitHub ("oauth"); the person is `ConsentingBrowser` (approves on the consent
page, signs in upstream). Each client registers at the proxy (DCR), logs in,
calls a tool that reads the upstream identity, refreshes, and steps up to a
tool that needs WRITE:

1. the official SDK (`mcp` 2.3.0) `OAuthClientProvider`, on both eras. It
   refreshes when its token has expired by its own clock (a 401 makes it sign
   in again instead), so the refresh here is an expired, spoiled token;
2. the TypeScript SDK 1.x (@modelcontextprotocol/sdk), tests/node/proxy_client.mjs.
   It refreshes on a 401. On a 403 insufficient_scope it refreshes first, which
   cannot widen a grant, then gives up; the script then authorizes again with
   the challenged scope, as an app on SDK 1.x must.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientMetadata

from node_helpers import NODE_BIN, NODE_DIR
from proxy_helpers import READ, WRITE, ConsentingBrowser, proxied_desk

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MODES = ["oidc", "oauth"]
UPSTREAM = {"oidc": "google", "oauth": "github"}
ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]


class _Memory:
    """The official client's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


def _text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), result
    return block.text


@pytest.mark.parametrize(("era", "version"), ERAS)
@pytest.mark.parametrize("mode", MODES)
async def test_the_official_client_signs_in_refreshes_and_steps_up(mode: str, era: str, version: str) -> None:
    async with proxied_desk(mode) as (_upstream, proxy, url):
        person = ConsentingBrowser()
        logins: list[str] = []

        async def browser(authorization_url: str) -> None:
            logins.append(authorization_url)
            await person(authorization_url)

        storage = _Memory()
        oauth = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                redirect_uris=[await person.redirect_uri()],  # type: ignore[list-item]
                client_name="official-sdk",
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=browser,
            callback_handler=person.official_callback,
        )
        http: httpx2.AsyncClient = create_mcp_http_client(auth=oauth)
        async with http, OfficialClient(streamable_http_client(url, http_client=http), mode=era) as client:  # type: ignore[arg-type]
            assert client.protocol_version == version
            who = _text(await client.call_tool("whoami", {}))
            assert who.startswith(f"{UPSTREAM[mode]}:alice <alice@example.com>"), who
            assert len(logins) == 1 and person.consent_pages == 1
            registered = storage.client.client_id
            assert storage.tokens.scope.split() == [READ]

            # Refresh: the token has expired by the client's clock (and is spoiled, so had the SDK
            # sent it, the 401 would have made it sign in again, which `logins` would show).
            first = storage.tokens
            oauth.context.current_tokens = first.model_copy(update={"access_token": "spoiled"})
            oauth.context.token_expiry_time = time.time() - 1
            assert _text(await client.call_tool("whoami", {})) == who
            assert len(logins) == 1
            assert storage.tokens.refresh_token not in (None, first.refresh_token)
            assert storage.tokens.access_token != first.access_token

            # Step-up: refund needs WRITE; the 403 insufficient_scope makes the SDK authorize again.
            assert _text(await client.call_tool("refund", {})) == "refunded for alice"
            assert len(logins) == 2
            assert set(storage.tokens.scope.split()) == {READ, WRITE}
            assert storage.client.client_id == registered  # no second registration
            assert _text(await client.call_tool("whoami", {})) == who
        await proxy.aclose()


async def _typescript_client(env: dict[str, str], url: str) -> dict[str, dict[str, Any]]:
    with anyio.fail_after(90):
        done = await anyio.run_process(
            [str(NODE_BIN / "node"), "proxy_client.mjs", url, "whoami", "refund"],
            cwd=NODE_DIR,
            env=env,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    steps = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    return {step.pop("step"): step for step in steps}


@pytest.mark.parametrize("mode", MODES)
async def test_the_typescript_sdk_1x_signs_in_refreshes_and_steps_up(
    node_env: dict[str, str], mode: str
) -> None:
    async with proxied_desk(mode) as (_upstream, proxy, url):
        steps = await _typescript_client(node_env, url)
        await proxy.aclose()
    assert list(steps) == ["login", "call", "refresh", "step-up"], steps
    who = f"{UPSTREAM[mode]}:alice <alice@example.com>"

    login = steps["login"]
    assert login["iss"] == proxy.issuer and login["registered"] is True
    assert (login["logins"], login["scope"], login["grants"]) == (1, READ, ["authorization_code"])

    assert steps["call"]["text"].startswith(who), steps["call"]

    # The spoiled token's 401 made the SDK refresh (a rotated refresh token), nobody signed in again.
    refresh = steps["refresh"]
    assert refresh["text"].startswith(who) and refresh["rotated"] is True
    assert (refresh["logins"], refresh["grants"]) == (1, ["refresh_token"])

    # SDK 1.x refreshed first on the 403 (no wider grant from that), gave up, and the script
    # authorized again with the challenged scope.
    step_up = steps["step-up"]
    assert "403" in step_up["first"] and step_up["refreshedFirst"] == ["refresh_token"], step_up
    assert step_up["challenged"] == step_up["asked"] == f"{READ} {WRITE}"
    assert step_up["text"] == "refunded for alice"
    assert set(step_up["scope"].split()) == {READ, WRITE}
    assert (step_up["logins"], step_up["grants"]) == (2, ["authorization_code"])
