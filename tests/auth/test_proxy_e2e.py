"""Sign in with the provider you already have: our Client through an OAuthProxy, nothing mocked.

The upstream is oidc-provider on loopback, set up as Google (OpenID, ID token,
opaque tokens, no DCR, no resource indicators) or as GitHub (plain OAuth, the
identity from GET /user). The person is `ConsentingBrowser`: it approves on the
proxy's consent page and signs in upstream. The client registers at the proxy,
logs in, calls tools that read the upstream identity and use the upstream token,
refreshes, and steps up; identity reaches every round of a 2026-07-28 call and a task.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mcp_resolve import Client
from mcp_resolve.client.auth import OAuth
from proxy_helpers import ConsentingBrowser, proxied_desk

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


@pytest.mark.parametrize("mode", ["oidc", "oauth"])
async def test_login_call_refresh_and_step_up_through_the_proxy(mode: str) -> None:
    async with proxied_desk(mode) as (_upstream, proxy, url):
        person = ConsentingBrowser()
        auth = OAuth(redirect_handler=person, callback_handler=person)
        async with Client(url, auth=auth) as client:
            who = _text(await client.call_tool("whoami", {}))
            provider = "google" if mode == "oidc" else "github"
            assert who.startswith(f"{provider}:alice"), who
            assert person.consent_pages == 1
            me = _text(await client.call_tool("upstream_me", {}))
            assert me.startswith("200 ") and "alice" in me, me

            # Step-up: refund needs WRITE; the client authorizes again, and the person sees the page
            # again: a remembered approval covers the scopes it approved, not wider ones.
            refunded = await client.call_tool("refund", {})
            assert _text(refunded) == "refunded for alice", _text(refunded)
            assert person.consent_pages == 2

            # Refresh: the stored access token is spoiled; the 401 makes the client refresh, no login.
            auth._tokens[url]["access_token"] = "spoiled"  # type: ignore[index]
            logins = person.sign_ins
            assert _text(await client.call_tool("whoami", {})).startswith(f"{provider}:alice")
            assert person.sign_ins == logins

            # Tokens lost: the same client signs in again (the base scopes, then the step-up), both
            # sets approved before, so the remembered approvals send the person straight upstream.
            auth._tokens[url] = None
            assert _text(await client.call_tool("refund", {})) == "refunded for alice"
            assert person.sign_ins == logins + 2
            assert person.consent_pages == 2
        await proxy.aclose()


async def test_identity_reaches_every_round_and_a_task() -> None:
    async with proxied_desk("oidc") as (_upstream, proxy, url):
        person = ConsentingBrowser()

        async def answer(_params: Any) -> dict[str, Any]:
            return {"action": "accept", "content": {"sure": True}}

        auth = OAuth(redirect_handler=person, callback_handler=person)
        async with Client(url, auth=auth, elicitation_handler=answer) as client:
            assert client.protocol_version == "2026-07-28"
            assert _text(await client.call_tool("careful", {})) == "alice sure=True"
            handle = await client.call_tool_task("slow_whoami", {})
            assert handle.task_id is not None
            assert _text(await handle.result()) == "task for alice"
        await proxy.aclose()


@pytest.mark.parametrize("mode", ["oidc", "oauth"])
async def test_an_expiring_upstream_token_is_refreshed_upstream_for_the_tool(mode: str) -> None:
    """The upstream's access tokens live 30 s here, inside the proxy's one-minute margin: each tool
    call that needs one gets a fresh one, refreshed at the upstream with its refresh token."""
    async with proxied_desk(mode, upstream_server={"access_ttl_s": 30}) as (_upstream, proxy, url):
        person = ConsentingBrowser()
        auth = OAuth(redirect_handler=person, callback_handler=person)
        async with Client(url, auth=auth) as client:
            assert (await client.call_tool("whoami", {})).is_error is not True
            name = f"upstream:{_grant_of(auth._tokens[url]['access_token'])}"  # type: ignore[index]
            seen = [(await proxy.state.get(name))["access_token"]]
            for _call in range(2):
                answer = _text(await client.call_tool("upstream_me", {}))
                assert answer.startswith("200 ") and "alice" in answer, answer
                seen.append((await proxy.state.get(name))["access_token"])
        assert len(set(seen)) == 3  # refreshed upstream for each call, and each fresh token worked there
        assert person.sign_ins == 1
        await proxy.aclose()


def _grant_of(access_token: str) -> str:
    """The grant id in one of the proxy's access tokens (its payload, read without verifying)."""
    payload = access_token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["gid"])
