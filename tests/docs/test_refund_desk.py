"""The refund-desk story's client trajectory, driven by real clients on real transports.

The person at the desk is an elicitation handler that counts the questions it
is asked (scope, restock) and answers from a per-call script; the story's
final counters prove each question fired exactly once per call that needed it.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

import pytest
from mcp.client import Client as OfficialClient
from mcp.client.stdio import StdioServerParameters
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from conftest import PYTHON, REFUND_DESK
from mcp_resolve import Client
from mcp_resolve.client.pipes import MessagePipe, open_stdio
from mcp_resolve.transports.memory import connect_in_memory
from refund_story_helpers import RESTOCK_YES, SCOPE_FULL, Person, error_text, run_story

pytestmark = pytest.mark.anyio


def assert_model_facing(input_schema: dict[str, Any]) -> None:
    assert set(input_schema["properties"]) == {"order_id", "reason"}
    assert set(input_schema["required"]) == {"order_id", "reason"}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_client_over_stdio(mode: str) -> None:
    person = Person()
    server = StdioServerParameters(command=PYTHON, args=[str(REFUND_DESK)])
    async with OfficialClient(server, mode=mode, elicitation_callback=person.official) as client:
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        tools = await client.list_tools()
        assert_model_facing(tools.tools[0].input_schema)
        await run_story(client.call_tool, person)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_our_client_in_memory(refund_desk: ModuleType, mode: str) -> None:
    person = Person()
    async with Client(refund_desk.mcp, mode=mode, elicitation_handler=person.ours) as client:
        assert client.is_modern is (mode == "auto")
        tools = await client.list_tools()
        assert_model_facing(tools.tools[0].input_schema)
        await run_story(client.call_tool, person)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_our_client_over_stdio(mode: str) -> None:
    person = Person()
    async with Client(str(REFUND_DESK), mode=mode, elicitation_handler=person.ours) as client:
        assert client.is_modern is (mode == "auto")
        await run_story(client.call_tool, person)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_declined_scope_never_runs_ask_restock(refund_desk: ModuleType, mode: str) -> None:
    runs: list[str] = []
    original = refund_desk.ask_restock

    @functools.wraps(original)
    async def counted(order: Any, scope: Any) -> Any:
        runs.append(order.order_id)
        return await original(order, scope)

    refund_desk.mcp.dependency_overrides[original] = counted
    person = Person()
    async with Client(refund_desk.mcp, mode=mode, elicitation_handler=person.ours) as client:
        person.script = {"scope": {"action": "decline"}}
        declined = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "damaged"})
        assert (
            error_text(declined)
            == "Resolver for parameter 'scope' could not resolve: elicitation was decline"
        )
        assert runs == []
        # The instrument works: an accepted scope does run it.
        person.script = {"scope": SCOPE_FULL, "restock": RESTOCK_YES}
        accepted = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "damaged"})
    assert accepted.is_error is False
    assert runs  # at least once (bodies may re-run on each 2026-07-28 round)
    assert person.counts == {"scope": 2, "restock": 1}


# -- ORD-7002 at 2026-07-28, observed on the wire -------------------------------------------------


@asynccontextmanager
async def memory_wire(refund_desk: ModuleType) -> AsyncIterator[MessagePipe]:
    async with connect_in_memory(refund_desk.mcp) as pipe:
        yield pipe


@asynccontextmanager
async def stdio_wire(_refund_desk: ModuleType) -> AsyncIterator[MessagePipe]:
    async with open_stdio([PYTHON, str(REFUND_DESK)]) as pipe:
        yield pipe


def question_kind(question: dict[str, Any]) -> str:
    assert question["method"] == "elicitation/create"
    return "Scope" if "full" in question["params"]["requestedSchema"]["properties"] else "Restock"


@pytest.mark.parametrize(
    "wire", [memory_wire, pytest.param(stdio_wire, marks=pytest.mark.slow)], ids=["memory", "stdio"]
)
async def test_full_refund_takes_three_rounds_at_2026(refund_desk: ModuleType, wire: Any) -> None:
    """Scope first; restock depends on the scope, so it is asked in a round of its own; then the receipt."""
    meta = {
        PROTOCOL_VERSION_META_KEY: "2026-07-28",
        CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}},
    }
    answers = {"Scope": SCOPE_FULL, "Restock": RESTOCK_YES}
    rounds: list[list[str]] = []
    async with wire(refund_desk) as pipe:
        params: dict[str, Any] = {
            "name": "refund_order",
            "arguments": {"order_id": "ORD-7002", "reason": "damaged"},
            "_meta": meta,
        }
        for request_id in range(1, 6):
            await pipe.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
            response = await pipe.receive()
            assert response["id"] == request_id
            result = response["result"]
            if result["resultType"] != "input_required":
                break
            requests = result["inputRequests"]
            rounds.append([question_kind(q) for q in requests.values()])
            params = {
                **params,
                "inputResponses": {
                    key: answers[kind] for key, kind in zip(requests, rounds[-1], strict=True)
                },
                "requestState": result["requestState"],
            }
    assert rounds == [["Scope"], ["Restock"]]
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {
        "order_id": "ORD-7002",
        "reason": "damaged",
        "cents": 4800,
        "restocked": True,
    }
    assert len(rounds) + 1 == 3


@pytest.mark.slow
async def test_behind_the_proxy_the_customer_is_whoever_signed_in_upstream(refund_desk: ModuleType) -> None:
    """`sign_in_with("github", ...)` in front of a GitHub-like provider (the identity from its GET /user)
    where bob signs in: bob's order refunds, alice's is unknown to him. The customer is the upstream
    login, not the desk's local customer (alice) nor the subject of the desk's own token."""
    from auth_helpers import serve_at_known_url
    from mcp_resolve.client.auth import OAuth
    from proxy_helpers import ConsentingBrowser
    from upstream_helpers import upstream_provider

    async with upstream_provider("oauth", account="bob") as upstream:

        def make(base: str) -> Any:
            endpoints = upstream.endpoints
            refund_desk.sign_in_with(
                "github",
                base_url=base,
                client_id=upstream.client_id,
                client_secret=upstream.client_secret,
                upstream_options={
                    "authorization_endpoint": endpoints["authorization_endpoint"],
                    "token_endpoint": endpoints["token_endpoint"],
                    "userinfo_endpoint": endpoints["userinfo_endpoint"],
                    "allow_http_loopback": True,
                },
            )
            return refund_desk.mcp.streamable_http_app()

        async with serve_at_known_url(make) as base:
            person, browser = Person(), ConsentingBrowser()
            auth = OAuth(redirect_handler=browser, callback_handler=browser)
            async with Client(f"{base}/mcp", auth=auth, elicitation_handler=person.ours) as client:
                person.script = {"restock": RESTOCK_YES}
                bobs = await client.call_tool("refund_order", {"order_id": "ORD-8001", "reason": "too small"})
                assert bobs.structured_content == {
                    "order_id": "ORD-8001",
                    "reason": "too small",
                    "cents": 8900,
                    "restocked": True,
                }
                alices = await client.call_tool(
                    "refund_order", {"order_id": "ORD-7001", "reason": "mine now"}
                )
                assert error_text(alices) == "unknown order 'ORD-7001'"
            assert browser.consent_pages == 1  # one sign-in for both calls
        await refund_desk.mcp.auth_server_provider.aclose()
