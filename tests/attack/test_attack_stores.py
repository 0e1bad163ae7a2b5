"""Attack suite (issue 35): every store a client can fill stays bounded, by count and by bytes.

Issue 35 found finished tasks kept with no bound (fifty 0.9 MB calls held
150 MB for an hour). Here hostile clients push each store as hard as they can
over real HTTP (uvicorn on loopback; client addresses 127.0.0.1 to .4):

* the task stores (memory; SQLite and Redis each shared by two servers, a
  real redis-server for Redis): twelve concurrent large task calls from each
  of four addresses. What is held never passes the bounds, per address and in
  all; the bounds are reached, not refused early; every refusal is a tool
  error naming its bound; and what was accepted ends completed (or, at the
  very edge, failed saying its outcome could not be kept);
* handshake-era sessions: oversized `capabilities` at `initialize`, and a
  flood of `resources/subscribe`;
* the event stores of resumable streams (memory, and Redis on a real
  redis-server): large answers on many sessions stay within their
  `max_bytes` (and, on Redis, `max_streams`);
* replay claims: see tests/test_replay_bounds.py (a full store refuses a
  new single-use round and never evicts a claim).

Nothing answers 5xx and nothing logs a traceback. Carried values ride in
the sealed state (at most 8 KiB), which the client holds.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from http_helpers import serving
from mcp_resolve import MCPServer
from mcp_resolve.protocol.handshake import MAX_CLIENT_BYTES, MAX_SUBSCRIPTION_BYTES, MAX_SUBSCRIPTIONS
from mcp_resolve.stores import MemoryTaskStore, SqliteTaskStore, TaskStore
from mcp_resolve.stores._redis.connection import RedisConnection
from mcp_resolve.stores._redis.events import RedisEventStore
from mcp_resolve.stores._redis.tasks import RedisTaskStore
from mcp_resolve.stores.events import MemoryEventStore
from mcp_resolve.tasks import TaskOptions
from redis_helpers import redis_server
from servers.attack_http import BOTH, AttackHttp, Tracebacks, serving_with_tracebacks
from servers.attack_messages import initialize_params
from tasks_helpers import ALL_CAPS, MODERN

pytestmark = pytest.mark.slow

ADDRESSES = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
BLOB = "b" * 200_000
PER_CALLER = 1_000_000
"""Four tasks of the blob per address..."""
IN_ALL = 3_000_000
"""...and fourteen in all, when the four addresses want sixteen."""
BOUNDED = ("this caller's tasks hold too much data", "the server's tasks hold as much data as they may")
STREAM = "text/event-stream"
"""Only an SSE answer is a stream the event store records."""
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": ALL_CAPS,
}


def task_server(store: TaskStore) -> MCPServer:
    options = TaskOptions(poll_interval_ms=20, max_bytes_per_principal=PER_CALLER, max_bytes=IN_ALL)
    mcp = MCPServer("flooded", task_store=store, task_options=options)

    @mcp.tool(task_support="optional")
    async def keep(blob: str) -> int:
        return len(blob)

    return mcp


@contextmanager
def served(*servers: MCPServer) -> Iterator[tuple[list[str], Tracebacks]]:
    """Each server's app under its own uvicorn; their MCP URLs, and the tracebacks any of them logged."""
    with ExitStack() as stack:
        url, tracebacks = stack.enter_context(serving_with_tracebacks(servers[0].streamable_http_app()))
        urls = [url] + [f"{stack.enter_context(serving(s.streamable_http_app()))}/mcp" for s in servers[1:]]
        yield urls, tracebacks
        assert tracebacks.take() == []


def headers(method: str, name: str) -> dict[str, str]:
    return {**BOTH, "MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": name}


async def _flood(urls: list[str]) -> dict[str, list[dict[str, Any]]]:
    answers: dict[str, list[dict[str, Any]]] = {address: [] for address in ADDRESSES}

    async def call(http: httpx.AsyncClient, address: str, index: int) -> None:
        params = {"name": "keep", "arguments": {"blob": BLOB}, "_meta": META}
        body = {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": params}
        response = await http.post(urls[index % len(urls)], json=body, headers=headers("tools/call", "keep"))
        assert response.status_code == 200, (response.status_code, response.text[:300])
        answers[address].append(response.json()["result"])

    async def client(address: str) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=address)
        async with (
            httpx.AsyncClient(transport=transport, timeout=30) as http,
            anyio.create_task_group() as group,
        ):
            for index in range(12):
                group.start_soon(call, http, address, index)

    async with anyio.create_task_group() as group:
        for address in ADDRESSES:
            group.start_soon(client, address)
    return answers


def flood(urls: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Twelve concurrent task calls from each address, spread over `urls`; the answers, by address."""
    return anyio.run(_flood, urls)


def until_ended(url: str, address: str, task_id: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id, "_meta": META}}
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, timeout=10) as http:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            task: dict[str, Any] = http.post(url, json=body, headers=headers("tasks/get", task_id)).json()[
                "result"
            ]
            if task["status"] in ("completed", "failed"):
                return task
            time.sleep(0.02)
    raise AssertionError(f"task {task_id} never ended")


def judge(answers: dict[str, list[dict[str, Any]]], held: Callable[[], dict[str, int]], url: str) -> None:
    """The bounds held and were reached; every refusal and every outcome says what happened."""
    accepted = {address: [a["taskId"] for a in found if "taskId" in a] for address, found in answers.items()}
    for found in answers.values():
        for answer in found:
            if "taskId" not in answer:
                text = answer["content"][0]["text"]
                assert answer["isError"] is True and any(bound in text for bound in BOUNDED), answer
    assert all(len(ids) <= PER_CALLER // len(BLOB) for ids in accepted.values()), accepted
    for address, ids in accepted.items():
        for task_id in ids:
            task = until_ended(url, address, task_id)
            if task["status"] == "failed":  # at the very edge, its result did not fit
                assert "could not be kept" in task["error"]["message"], task
            else:
                assert task["result"]["structuredContent"] == {"result": len(BLOB)}, task
    by_address = held()
    assert set(by_address) == {f"address {address}" for address in ADDRESSES}, by_address
    assert all(size <= PER_CALLER for size in by_address.values()), by_address
    assert sum(by_address.values()) <= IN_ALL, by_address
    assert sum(by_address.values()) + len(BLOB) > IN_ALL, by_address  # reached: no room for one more


def test_a_flood_of_large_tasks_stays_within_the_memory_stores_bounds() -> None:
    store = MemoryTaskStore()
    with served(task_server(store)) as (urls, _):
        answers = flood(urls)

        def held() -> dict[str, int]:
            return {str(holder): holding.bytes for holder, holding in store._holders.items()}

        judge(answers, held, urls[0])
        assert store.held_bytes == sum(held().values())


def test_two_servers_on_one_sqlite_file_share_the_bounds(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    stores = [SqliteTaskStore(path), SqliteTaskStore(path)]
    try:
        with served(*(task_server(store) for store in stores)) as (urls, _):
            answers = flood(urls)

            def held() -> dict[str, int]:
                with sqlite3.connect(path) as conn:
                    rows = conn.execute("SELECT holder, SUM(size) FROM mcp_resolve_tasks GROUP BY holder")
                    return {str(holder): int(size) for holder, size in rows}

            judge(answers, held, urls[1])
    finally:
        for store in stores:
            store.close()


def test_two_servers_on_one_redis_share_the_bounds() -> None:
    import redis

    with redis_server() as backing, redis.Redis.from_url(backing.url) as peek:
        stores = [RedisTaskStore(RedisConnection(backing.url, prefix="flood")) for _ in range(2)]
        with served(*(task_server(store) for store in stores)) as (urls, _):
            answers = flood(urls)

            def held() -> dict[str, int]:
                counted = {
                    f"address {address}": int(peek.get(stores[0]._keys("", f"address {address}")[4]) or 0)
                    for address in ADDRESSES
                }
                assert int(peek.get("flood:tasks:bytes") or 0) == sum(counted.values())
                return counted

            judge(answers, held, urls[0])


# -- handshake-era sessions -------------------------------------------------------------------
def resource_server() -> MCPServer:
    mcp = MCPServer("subscribable")

    @mcp.resource("note://{name}")
    def note(name: str) -> str:
        return name

    return mcp


def test_a_session_keeps_bounded_capabilities_and_subscriptions() -> None:
    with served(resource_server()) as (urls, _):
        attacker = AttackHttp(urls[0])
        try:
            padded = {"experimental": {"pad": {"x": "p" * MAX_CLIENT_BYTES}}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(padded)}
            refused = attacker.http.post(urls[0], json=body, headers=BOTH)
            assert refused.status_code == 200 and "mcp-session-id" not in refused.headers
            assert refused.json()["error"]["code"] == -32602
            assert "over the limit" in refused.json()["error"]["message"]
            session = attacker.open_session()
            for index in range(MAX_SUBSCRIPTIONS):
                attacker.session_result(session, "resources/subscribe", {"uri": f"note://{index}"})
            flooded = attacker.session_request(session, "resources/subscribe", {"uri": "note://one-more"})
            assert flooded is not None and flooded["error"]["code"] == -32602, flooded
            assert "subscriptions are full" in flooded["error"]["message"]
            attacker.session_result(session, "resources/subscribe", {"uri": "note://7"})  # already held: fine
            attacker.session_result(session, "resources/unsubscribe", {"uri": "note://7"})
            attacker.session_result(session, "resources/subscribe", {"uri": "note://one-more"})
            other = attacker.open_session()
            long_uri = "note://" + "l" * (MAX_SUBSCRIPTION_BYTES - 100)
            attacker.session_result(other, "resources/subscribe", {"uri": long_uri})
            too_long = attacker.session_request(other, "resources/subscribe", {"uri": "note://" + "m" * 200})
            assert too_long is not None and "subscriptions are full" in too_long["error"]["message"]
        finally:
            attacker.close()


# -- the memory event store ---------------------------------------------------------------------
def streamed_call(attacker: AttackHttp, session: str, text: str) -> dict[str, Any]:
    """`echo(text)` on `session`, answered on a resumable SSE stream (priming event first); its result."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}},
    }
    sent = {**attacker.session_headers(session), "accept": STREAM}
    answer = attacker.http.post(attacker.url, json=body, headers=sent)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith(STREAM), answer.status_code
    data = [line[len("data:") :].strip() for line in answer.text.split("\n") if line.startswith("data:")]
    assert data[0] == ""  # the priming event: this stream is recorded
    result: dict[str, Any] = json.loads(data[-1])["result"]
    return result


def flood_streams(
    mcp: MCPServer, held: Callable[[], tuple[int, int]], size: int = 150_000
) -> tuple[int, int]:
    """Four sessions of eight streamed answers each (32 streams, each two copies of `size` characters);
    the most (streams, bytes) `held` saw."""

    @mcp.tool()
    async def echo(text: str) -> str:
        return text

    most_streams = most_bytes = 0
    with served(mcp) as (urls, _):
        attacker = AttackHttp(urls[0])
        try:
            for _ in range(4):
                session = attacker.open_session()
                for index in range(8):
                    text = f"{index}" * size
                    assert streamed_call(attacker, session, text)["content"][0]["text"] == text
                    streams, held_bytes = held()
                    most_streams, most_bytes = max(most_streams, streams), max(most_bytes, held_bytes)
        finally:
            attacker.close()
    return most_streams, most_bytes


def test_resumable_streams_keep_at_most_the_event_stores_bytes() -> None:
    events = MemoryEventStore(max_bytes=2_000_000)
    most = flood_streams(MCPServer("resumable", event_store=events), lambda: (len(events), events.held_bytes))
    assert 1_500_000 < most[1] <= 2_000_000, most  # filled, never past it
    assert events.held_bytes == sum(stream.bytes for stream in events._streams.values())


def test_resumable_streams_on_redis_keep_at_most_the_event_stores_streams_and_bytes() -> None:
    import redis as redis_py

    with redis_server() as redis:
        peek = redis_py.Redis.from_url(redis.url)

        def bounded(prefix: str, **bounds: int) -> tuple[RedisEventStore, Callable[[], tuple[int, int]]]:
            events = RedisEventStore(RedisConnection(redis.url, prefix=prefix), **bounds)
            written, sizes = events._index
            return events, lambda: (int(peek.zcard(written)), int(peek.hget(sizes, "*") or 0))

        def counted(prefix: str) -> tuple[int, int]:
            """(streams, bytes of events) actually in Redis under `prefix`."""
            streams = len(list(peek.scan_iter(match=f"{prefix}:stream:*")))
            events = [
                fields for key in peek.scan_iter(match=f"{prefix}:events:*") for _, fields in peek.xrange(key)
            ]
            return streams, sum(len(fields.get(b"m", b"")) for fields in events)

        try:
            events, held = bounded("many", max_streams=20)
            most = flood_streams(MCPServer("resumable", event_store=events), held, size=1000)
            assert most[0] == 20 and held() == counted("many"), (most, held())  # filled, never past it
            events, held = bounded("large", max_bytes=2_000_000)
            most = flood_streams(MCPServer("resumable", event_store=events), held)
            assert 1_500_000 < most[1] <= 2_000_000, most
            assert held() == counted("large")
        finally:
            peek.close()
