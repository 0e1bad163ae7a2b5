"""Issue 22's defects, each driven from outside through a real stdio process or real uvicorn.

One notification that killed a stdio server, a handshake-era HTTP call whose
early error answered 500, pre-filled answers that skipped a refund's questions,
a `--workers 2` fleet started without shared keys, and a client that closes
the server's stdout: each test here failed before its fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Annotated, Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.shared.exceptions import MCPError as OfficialMCPError
from pydantic import BaseModel

from conftest import PYTHON, REFUND_DESK, TESTS, initialize_request
from http_helpers import free_port, http_server
from mcp_resolve import Elicit, MCPServer, Resolve, Sample
from redis_helpers import redis_server
from servers.raw_stdio import RawStdio, modern_meta

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

HERE = TESTS
JSON_AND_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
BAD_CANCELS = [[1], {"id": 1}, 1.5, None, True]
"""`requestId`s a client may send that name no request; a list or an object is unhashable."""
SHARED_KEY = "hostile-regressions-shared-secret-0123456789abcdef"


def _cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


# -- 1. a notification with an id that names nothing ------------------------------------------
def test_stdio_server_survives_cancellations_naming_no_request() -> None:
    peer = RawStdio(REFUND_DESK)
    try:
        peer.initialize()
        for request_id in BAD_CANCELS:
            peer.send(_cancel(request_id))
        assert peer.request("ping")["result"] == {}
        tools = peer.request("tools/list")["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["refund_order", "receipt_lines", "restock"]
        code, _ = peer.close()
    finally:
        peer.kill()
    assert code == 0
    assert b"Traceback" not in peer.stderr


async def test_http_session_survives_cancellations_naming_no_request(refund_desk: Any) -> None:
    async with http_server(refund_desk.mcp.streamable_http_app()) as base, httpx.AsyncClient() as http:
        opened = await http.post(f"{base}/mcp", headers=JSON_AND_SSE, json=initialize_request({}))
        headers = {
            **JSON_AND_SSE,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        for request_id in BAD_CANCELS:
            sent = await http.post(f"{base}/mcp", headers=headers, json=_cancel(request_id))
            assert sent.status_code == 202, sent.text
        listed = await http.post(
            f"{base}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        )
        assert listed.status_code == 200
        assert listed.json()["result"]["tools"][0]["name"] == "refund_order"


# -- 2. an early error on a handshake-era HTTP call ---------------------------------------------
class Confirm(BaseModel):
    ok: bool


def _ask_llm() -> Sample:
    return Sample("Summarise the order", max_tokens=20)


def _ask_person() -> Elicit[Confirm]:
    return Elicit("Go ahead?", Confirm)


def _early_failure_server() -> MCPServer:
    """A tool whose first resolver fails at once (no sampling) while its sibling is opening a question."""
    server = MCPServer("early-failure")

    @server.tool()
    def summarise(
        summary: Annotated[types.CreateMessageResult, Resolve(_ask_llm)],
        confirmed: Annotated[Confirm, Resolve(_ask_person)],
    ) -> str:
        return "unreachable without sampling"

    return server


async def test_missing_capability_is_minus_32021_over_http_however_the_race_falls() -> None:
    """The sibling's question committed the response to SSE, then was cancelled before the stream
    started; the error that followed went out as a body with no start (a 500 at the client)."""

    async def accept(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"ok": True})

    async with (
        http_server(_early_failure_server().streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode="legacy", elicitation_callback=accept) as client,
    ):
        for _ in range(25):
            with pytest.raises(OfficialMCPError) as raised:
                await client.call_tool("summarise", {})
            assert raised.value.error.code == -32021, raised.value.error
            assert raised.value.error.data == {"requiredCapabilities": {"sampling": {}}}


# -- 3. answers sent before any question -------------------------------------------------------
def _modern_call(arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    params = {"name": "refund_order", "arguments": arguments, "_meta": modern_meta(), **extra}
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {"form": {}}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


MODERN_HEADERS = {**JSON_AND_SSE, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}


async def test_prefilled_answers_never_skip_a_single_use_refund(refund_desk: Any) -> None:
    """50 concurrent first rounds carrying answers under the real question keys: no refund at all.

    The tool body (the refund) runs only in a round that completes; every one of these is asked.
    """
    arguments = {"order_id": "ORD-7002", "reason": "wrong size"}
    async with http_server(refund_desk.mcp.streamable_http_app()) as base, httpx.AsyncClient() as http:
        first = await _post(http, base, _modern_call(arguments))
        (scope_key,) = first["result"]["inputRequests"]
        answers = {scope_key: {"action": "accept", "content": {"full": True}}}
        answers[scope_key.replace("refund_scope", "ask_restock")] = {
            "action": "accept",
            "content": {"restock": True},
        }

        async def prefilled() -> dict[str, Any]:
            return await _post(http, base, _modern_call(arguments, inputResponses=answers))

        results: list[dict[str, Any]] = []
        async with anyio.create_task_group() as group:
            for _ in range(50):
                group.start_soon(lambda: _collect(results, prefilled()))
    assert len(results) == 50
    assert {result["result"]["resultType"] for result in results} == {"input_required"}
    assert {tuple(result["result"]["inputRequests"]) for result in results} == {(scope_key,)}


async def _collect(into: list[Any], awaitable: Any) -> None:
    into.append(await awaitable)


async def _post(http: httpx.AsyncClient, base: str, message: dict[str, Any]) -> dict[str, Any]:
    headers = {**MODERN_HEADERS, "mcp-name": message["params"]["name"]}
    response = await http.post(f"{base}/mcp", headers=headers, json=message)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _confirm_server(*, first_round_answers: bool, single_use: bool) -> MCPServer:
    server = MCPServer("prefill", first_round_answers=first_round_answers)

    @server.tool(single_use=single_use)
    def go(confirmed: Annotated[Confirm, Resolve(_ask_person)]) -> str:
        return f"went: {confirmed.ok}"

    return server


@pytest.mark.parametrize(
    ("first_round_answers", "single_use", "completes"),
    [(False, False, False), (True, False, True), (True, True, False), (False, True, False)],
)
async def test_first_round_answers_count_only_when_opted_in_and_never_for_single_use(
    first_round_answers: bool, single_use: bool, completes: bool
) -> None:
    server = _confirm_server(first_round_answers=first_round_answers, single_use=single_use)
    async with http_server(server.streamable_http_app()) as base, httpx.AsyncClient() as http:
        call = _modern_call({})
        call["params"]["name"] = "go"
        (key,) = (await _post(http, base, call))["result"]["inputRequests"]
        call["params"]["inputResponses"] = {
            key: {"action": "accept", "content": {"ok": True}},
            "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        }
        result = (await _post(http, base, call))["result"]
    if completes:
        assert result["content"][0]["text"] == "went: True"
    else:
        assert result["resultType"] == "input_required"
        assert list(result["inputRequests"]) == [key]


# -- 4. a uvicorn fleet without shared keys -----------------------------------------------------
def _uvicorn_fleet(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [PYTHON, "-m", "uvicorn", "servers.fleet_app:app", "--workers", "2", "--port", str(port)]
    return subprocess.Popen(
        command,
        cwd=HERE,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_uvicorn_workers_without_shared_keys_refuse_to_start() -> None:
    env = {key: value for key, value in os.environ.items() if key != "MCP_RESOLVE_STATE_KEYS"}
    fleet = subprocess.Popen(
        [PYTHON, "-m", "uvicorn", "servers.fleet_app:app", "--workers", "2", "--port", str(free_port())],
        cwd=HERE,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _, stderr = fleet.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fleet.kill()
        _, stderr = fleet.communicate()
        raise AssertionError(stderr.decode(errors="replace")) from None
    assert b"refusing to start 2 workers with a per-process requestState key" in stderr


def test_uvicorn_workers_without_a_shared_replay_store_refuse_to_start() -> None:
    """The refund desk's single_use tool on per-process claims: each worker would accept a final state once."""
    fleet = _uvicorn_fleet(free_port(), {"MCP_RESOLVE_STATE_KEYS": SHARED_KEY})
    try:
        _, stderr = fleet.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fleet.kill()
        _, stderr = fleet.communicate()
        raise AssertionError(stderr.decode(errors="replace")) from None
    assert b"refusing to start 2 workers with the replay store of its single_use tools" in stderr


async def test_uvicorn_workers_with_shared_keys_serve_refunds_across_workers() -> None:
    port = free_port()
    with redis_server() as redis:
        fleet = _uvicorn_fleet(port, {"MCP_RESOLVE_STATE_KEYS": SHARED_KEY, "MCP_RESOLVE_REDIS_URL": redis.url})
        base = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient() as http:
                await _wait_until_serving(http, base, fleet)
                for _ in range(12):  # every round on a fresh connection: the kernel spreads them over workers
                    assert await _full_refund_on_fresh_connections(base) == 4800
        finally:
            fleet.terminate()
            _, stderr = fleet.communicate(timeout=30)
    assert b"refusing" not in stderr
    assert b"Traceback" not in stderr


async def _full_refund_on_fresh_connections(base: str) -> int:
    """ORD-7002's three rounds (scope, restock, done), each sent on a connection of its own."""
    arguments = {"order_id": "ORD-7002", "reason": "wrong size"}
    answers = iter([{"full": True}, {"restock": True}])
    extra: dict[str, Any] = {}
    for _ in range(3):
        async with httpx.AsyncClient() as fresh:
            result = (await _post(fresh, base, _modern_call(arguments, **extra)))["result"]
        if result.get("resultType") != "input_required":
            cents: int = result["structuredContent"]["cents"]
            return cents
        (key,) = result["inputRequests"]
        extra = {
            "requestState": result["requestState"],
            "inputResponses": {key: {"action": "accept", "content": next(answers)}},
        }
    raise AssertionError("the refund took more than three rounds")


async def _wait_until_serving(http: httpx.AsyncClient, base: str, fleet: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert fleet.poll() is None, fleet.stderr.read() if fleet.stderr else b""
        try:
            await http.get(f"{base}/mcp")
            return
        except httpx.TransportError:
            await anyio.sleep(0.1)
    raise AssertionError("the fleet did not start")


# -- and: a client that closes the server's stdout -----------------------------------------------
def test_stdio_server_exits_quietly_when_the_client_closes_its_stdout() -> None:
    server = subprocess.Popen(
        [sys.executable, str(REFUND_DESK)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdout.close()
    server.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    server.stdin.flush()
    try:
        _, stderr = server.communicate(timeout=20)
    except (BrokenPipeError, subprocess.TimeoutExpired):
        server.kill()
        raise
    assert server.returncode == 0, stderr
    assert b"Traceback" not in stderr
