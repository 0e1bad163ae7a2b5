"""Handshake-era sessions shared through Redis by two workers (two servers, two event loops, one Redis).

A session opened on one worker is served by the other, a question asked on
one is answered through the other, DELETE on one ends it on both, and the
hostile cases: session ids shaped like keys or globs, huge ones, another
principal's session, all "not found" without a key being made. The records
are bounded (issue 35): a session a worker closes to make room for its
client's new one leaves Redis too (unless another worker served it since),
and the fleet holds at most `max_sessions` of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from http_helpers import http_server
from mcp_resolve import Context, MCPServer, RequestStateSecurity
from redis_helpers import RedisServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ACCEPT = "application/json, text/event-stream"


class Ok(BaseModel):
    ok: bool


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


def worker(redis: RedisServer, **options: Any) -> Any:
    mcp = MCPServer(
        "shared-sessions",
        redis_url=redis.url,
        request_state_security=RequestStateSecurity(keys=["fleet-sessions-" + "s" * 40]),
    )

    @mcp.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Go?", Ok)
        return f"{answer.action} {getattr(answer, 'data', None)}"

    @mcp.tool()
    async def level(ctx: Context) -> str:
        return str(ctx.request_context.meta) + str(ctx._scope.log_level)

    return mcp.streamable_http_app(principal=lambda request: request.headers.get("x-user"), **options)


def initialize(user: str) -> tuple[dict[str, Any], dict[str, str]]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return body, {"Accept": ACCEPT, "x-user": user}


async def open_session(http: httpx.AsyncClient, url: str, user: str = "alice") -> dict[str, str]:
    body, headers = initialize(user)
    reply = await http.post(url, json=body, headers=headers)
    assert reply.status_code == 200, reply.text
    return {
        **headers,
        "Mcp-Session-Id": reply.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }


async def test_a_session_opened_on_one_worker_is_served_by_the_other_questions_included(
    redis: RedisServer,
) -> None:
    redis.flush()
    async with (
        http_server(worker(redis)) as one,
        http_server(worker(redis)) as two,
        httpx.AsyncClient(timeout=10) as http,
    ):
        session = await open_session(http, f"{one}/mcp")
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(f"{two}/mcp", json=note, headers=session)).status_code == 202
        setlevel = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}}
        assert "result" in (await http.post(f"{two}/mcp", json=setlevel, headers=session)).json()
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "level", "arguments": {}},
        }
        seen = (await http.post(f"{one}/mcp", json=call, headers=session)).json()
        assert seen["result"]["content"][0]["text"].endswith("error")  # set on two, read on one

        ask = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "confirm", "arguments": {}},
        }
        async with http.stream("POST", f"{two}/mcp", json=ask, headers=session) as stream:
            lines = stream.aiter_lines()
            question = await _next(lines)
            assert question["method"] == "elicitation/create" and question["id"] > 1 << 20
            answer = {
                "jsonrpc": "2.0",
                "id": question["id"],
                "result": {"action": "accept", "content": {"ok": True}},
            }
            # The answer reaches worker one, which does not hold the call: it goes over Redis to two.
            assert (await http.post(f"{one}/mcp", json=answer, headers=session)).status_code == 202
            final = await _next(lines)
        assert final["result"]["content"][0]["text"] == "accept ok=True"

        assert (await http.delete(f"{one}/mcp", headers=session)).status_code == 204
        gone = await http.post(f"{two}/mcp", json=call, headers=session)
        assert gone.status_code == 404  # deleted on one: gone on two at once


async def test_hostile_session_ids_and_other_principals_are_not_found_and_make_no_keys(
    redis: RedisServer,
) -> None:
    redis.flush()
    async with http_server(worker(redis)) as one, httpx.AsyncClient(timeout=10) as http:
        session = await open_session(http, f"{one}/mcp", "alice")
        before = set(await _keys(redis))
        call = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "level", "arguments": {}},
        }
        for hostile in ["*", "a:b:c", "mcp-resolve:shared-sessions:session:*", "x" * 5000, "ab", "é"]:
            headers = {**session, "Mcp-Session-Id": hostile}
            try:
                reply = await http.post(f"{one}/mcp", json=call, headers=headers)
            except (httpx.LocalProtocolError, UnicodeEncodeError):
                continue
            assert reply.status_code in (404, 431), (hostile[:20], reply.status_code)
        mallory = {**session, "x-user": "mallory"}
        assert (await http.post(f"{one}/mcp", json=call, headers=mallory)).status_code == 404
        assert (await http.get(f"{one}/mcp", headers=mallory)).status_code == 404
        assert (await http.delete(f"{one}/mcp", headers=mallory)).status_code == 404
        assert (
            await http.post(f"{one}/mcp", json=call, headers=session)
        ).status_code == 200  # alice's still works
        assert set(await _keys(redis)) == before


CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "level", "arguments": {}}}


async def _records(redis: RedisServer) -> int:
    return sum(1 for key in await _keys(redis) if key.startswith(b"mcp-resolve:shared-sessions:session:"))


async def test_a_session_closed_for_its_clients_new_one_leaves_redis_unless_used_elsewhere(
    redis: RedisServer,
) -> None:
    redis.flush()
    async with (
        http_server(worker(redis, max_sessions_per_client=2)) as one,
        http_server(worker(redis, max_sessions_per_client=2)) as two,
        httpx.AsyncClient(timeout=10) as http,
    ):
        first = await open_session(http, f"{one}/mcp")
        second = await open_session(http, f"{one}/mcp")
        third = await open_session(http, f"{one}/mcp")  # alice at her cap on one: the first is closed
        with anyio.fail_after(5):
            while await _records(redis) != 2:  # ...and deleted from Redis, for every worker
                await anyio.sleep(0.02)
        assert (await http.post(f"{two}/mcp", json=CALL, headers=first)).status_code == 404
        await anyio.sleep(0.3)
        assert (await http.post(f"{two}/mcp", json=CALL, headers=second)).status_code == 200
        await open_session(http, f"{one}/mcp")  # one closes the second, which two served since
        await anyio.sleep(0.3)
        assert await _records(redis) == 3  # so its record stays, and it keeps working
        assert (await http.post(f"{two}/mcp", json=CALL, headers=second)).status_code == 200
        assert (await http.post(f"{one}/mcp", json=CALL, headers=second)).status_code == 200
        assert (await http.post(f"{two}/mcp", json=CALL, headers=third)).status_code == 200


async def test_the_fleet_keeps_at_most_max_sessions_records(
    redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    redis.flush()
    async with (
        http_server(worker(redis, max_sessions=3)) as one,
        http_server(worker(redis, max_sessions=3)) as two,
        httpx.AsyncClient(timeout=10) as http,
    ):
        alice = await open_session(http, f"{one}/mcp", "alice")
        await open_session(http, f"{one}/mcp", "bob")
        await open_session(http, f"{two}/mcp", "carol")
        body, headers = initialize("dave")
        refused = await http.post(f"{two}/mcp", json=body, headers=headers)  # two holds one: the fleet, three
        assert "mcp-session-id" not in refused.headers
        error = refused.json()["error"]
        assert error["code"] == -32603 and error["message"].startswith("session store full"), error
        assert await _records(redis) == 3
        assert any("a new one refused" in r.getMessage() for r in caplog.records)
        assert (await http.post(f"{two}/mcp", json=CALL, headers=alice)).status_code == 200  # the open go on
        assert (await http.delete(f"{two}/mcp", headers=alice)).status_code == 204
        dave = await open_session(http, f"{two}/mcp", "dave")  # room again
        assert (await http.post(f"{one}/mcp", json=CALL, headers=dave)).status_code == 200
        assert await _records(redis) == 3


async def _keys(redis: RedisServer) -> list[bytes]:
    import redis.asyncio as client

    connection = client.Redis.from_url(redis.url)
    try:
        return list(await connection.keys("*"))
    finally:
        await connection.aclose()


async def _next(lines: Any) -> dict[str, Any]:
    import json

    with anyio.fail_after(10):
        async for line in lines:
            if line.startswith("data: {"):
                return json.loads(line[6:])
    raise AssertionError("the stream ended")
