"""A Redis fault during a single-use round never burns it nor runs it twice (issue 35, item 3).

Faults are real and on a real redis-server: `DEBUG SLEEP` (Redis stalls),
`CLIENT PAUSE` (Redis holds every client's commands), stopping and starting
it (AOF on, as docs/deploy.md asks), and a TCP proxy between the server and
Redis that lets commands through but swallows the replies, so a claim lands
and its worker never hears so. For each: the refund runs exactly once, the
first answer is the receipt when Redis comes back within the claim's
deadline and "replay store unavailable" otherwise, and the caller's retry
after the fault gets the receipt. The last test does it through nginx in
front of three workers. Runs are counted by the tool (or the fleet's
ledger), not inferred from answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
import httpx
import pytest
import redis as redis_py
from pydantic import BaseModel
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import SERVERS
from fleet_helpers import PYTHON, Nginx, wait_healthy
from http_helpers import free_port, http_server
from mcp_resolve import Elicit, MCPServer, RequestStateSecurity, Resolve
from mcp_resolve.replay import RoundClaim, RoundStore
from mcp_resolve.stores._redis.connection import StoreUnavailable
from mcp_resolve.stores._redis.replay import RedisReplayStore
from redis_helpers import RedisServer
from servers.state_wire import FROZEN, MODERN_META, accept

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

NO_RETRY = Retry(NoBackoff(), 0)
KEY = "redis-faults-secret-0123456789abcdefghijklmnop"
UNAVAILABLE = {
    "code": -32603,
    "message": "replay store unavailable: the shared store did not answer; try again shortly",
}
HEADERS = {
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Accept": "application/json, text/event-stream",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    server = RedisServer(
        extra=("--enable-debug-command", "yes", "--appendonly", "yes", "--appendfsync", "always")
    )
    server.start_fresh()
    try:
        yield server
    finally:
        server.close()


def command(port: int, *args: str, timeout: float | None = 10.0) -> Any:
    """One Redis command on a connection of its own, tried once (redis-py's plain client, no retries)."""
    client = redis_py.Redis(port=port, socket_timeout=timeout, socket_connect_timeout=2, retry=NO_RETRY)
    with client:
        return client.execute_command(*args)


def responsive(port: int) -> bool:
    try:
        return command(port, "PING", timeout=0.2) is True
    except redis_py.RedisError:
        return False


class Stall:
    """`DEBUG SLEEP seconds` on a thread of its own, started once Redis is seen not answering."""

    def __init__(self, redis: RedisServer, seconds: float) -> None:
        self.ended_at = 0.0
        self.thread = threading.Thread(target=self._sleep, args=(redis.port, seconds), daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 5
        while responsive(redis.port):
            assert time.monotonic() < deadline, "DEBUG SLEEP did not stall Redis"

    def _sleep(self, port: int, seconds: float) -> None:
        command(port, "DEBUG", "SLEEP", str(seconds), timeout=None)
        self.ended_at = time.monotonic()

    def join(self) -> None:
        self.thread.join(15)


class ReplyDropper:
    """A TCP proxy to Redis: commands always go through; while `dropping`, Redis's replies are discarded."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.dropping = threading.Event()
        self.dropped = 0
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, replies: bool) -> None:
        try:
            while data := source.recv(65536):
                if replies and self.dropping.is_set():
                    self.dropped += len(data)
                    continue
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()
        for sock in self._sockets:
            sock.close()


class Confirm(BaseModel):
    ok: bool


async def ask_confirm(order: str) -> Confirm | Elicit[Confirm]:
    return Elicit(f"Refund {order}?", Confirm)


class Desk:
    """A single-use `refund` on Redis (through `redis_url`), served over HTTP with the caller's name as principal."""

    def __init__(self, redis_url: str, *, settle_timeout: float = 5.0) -> None:
        self.runs: list[str] = []
        self.hold: threading.Event | None = None
        self.server = MCPServer(
            "Faults", request_state_security=RequestStateSecurity(keys=[KEY]), redis_url=redis_url
        )
        assert isinstance(self.server.replay_store, RedisReplayStore) and self.server.redis is not None
        # The store the server made, but with this test's deadline.
        self.store = RedisReplayStore(self.server.redis, settle_timeout=settle_timeout)
        self.server.replay_store = self.store

        @self.server.tool(single_use=True)
        async def refund(order: str, confirm: Annotated[Confirm, Resolve(ask_confirm)]) -> dict[str, Any]:
            if self.hold is not None:
                await anyio.to_thread.run_sync(self.hold.wait, 15)
            self.runs.append(order)
            return {"order": order, "receipt": f"R-{len(self.runs)}"}

    @asynccontextmanager
    async def serve(self) -> AsyncIterator[Caller]:
        app = self.server.streamable_http_app(principal=lambda request: request.headers.get("x-caller"))
        async with http_server(app) as base, httpx.AsyncClient(timeout=30) as http:
            yield Caller(http, f"{base}/mcp", "alice")


class Caller:
    def __init__(self, http: httpx.AsyncClient, url: str, name: str | None) -> None:
        self.http, self.url, self.name = http, url, name

    async def send(self, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": MODERN_META}}
        headers = {**HEADERS, "Mcp-Name": params["name"]}
        if self.name is not None:
            headers["X-Caller"] = self.name
        reply = await self.http.post(self.url, json=body, headers=headers)
        assert reply.status_code < 500, reply.text
        if reply.headers["content-type"].startswith(
            "text/event-stream"
        ):  # a long call: pings, then the answer
            events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: {")]
            answers = [event for event in events if "id" in event]
            assert len(answers) == 1, reply.text
            return answers[0]
        message: dict[str, Any] = reply.json()
        return message

    async def final_round(self, order: str) -> dict[str, Any]:
        call = {"name": "refund", "arguments": {"order": order}}
        asked = (await self.send(call))["result"]
        return {
            **call,
            "requestState": asked["requestState"],
            "inputResponses": accept(asked["inputRequests"], {"ok": True}),
        }


RECEIPT = {"order": "ORD-1", "receipt": "R-1"}


def receipt(message: dict[str, Any]) -> Any:
    assert "result" in message, message
    return message["result"]["structuredContent"]


async def test_debug_sleep_during_the_final_round_still_refunds_once_and_answers_the_receipt(
    redis: RedisServer,
) -> None:
    """The issue's case: the claim reaches Redis, Redis sleeps past the client's socket timeout. The
    worker settles its claim (its own ticket is in the key) and refunds; the retry gets the receipt."""
    desk = Desk(redis.url)
    async with desk.serve() as alice:
        final = await alice.final_round("ORD-1")
        stall = Stall(redis, 4)
        sent_at = time.monotonic()
        first = await alice.send(final)
        stall.join()
        assert sent_at < stall.ended_at  # the round met the stall
        assert receipt(first) == RECEIPT
        assert receipt(await alice.send(final)) == RECEIPT
    assert desk.runs == ["ORD-1"]


async def test_a_stall_longer_than_the_deadline_gives_up_releases_the_claim_and_the_retry_refunds(
    redis: RedisServer,
) -> None:
    desk = Desk(redis.url, settle_timeout=1.0)
    async with desk.serve() as alice:
        final = await alice.final_round("ORD-1")
        stall = Stall(redis, 3)
        first = await alice.send(final)
        assert first["error"] == UNAVAILABLE and desk.runs == []
        stall.join()
        retried = await alice.send(final)  # the worker's release reached Redis once it woke
        assert receipt(retried) == RECEIPT
        assert (await alice.send(final))["result"] == retried["result"]
    assert desk.runs == ["ORD-1"]


async def test_client_pause_during_the_final_round(redis: RedisServer) -> None:
    desk = Desk(redis.url)
    async with desk.serve() as alice:
        final = await alice.final_round("ORD-1")
        assert command(redis.port, "CLIENT", "PAUSE", "3000", "ALL")
        first = await alice.send(final)
        assert receipt(first) == RECEIPT
        assert receipt(await alice.send(final)) == RECEIPT
    assert desk.runs == ["ORD-1"]


async def test_replies_dropped_after_the_claim_landed(redis: RedisServer) -> None:
    """The proxy swallows the claim's reply (the claim itself lands); the worker's next attempt finds
    its own ticket in the key, so it refunds once and its retry gets the receipt."""
    proxy = ReplyDropper(redis.port)
    try:
        desk = Desk(proxy.url)
        async with desk.serve() as alice:
            final = await alice.final_round("ORD-1")
            proxy.dropping.set()
            threading.Timer(1.0, proxy.dropping.clear).start()
            first = await alice.send(final)
            assert proxy.dropped > 0
            assert receipt(first) == RECEIPT
            assert receipt(await alice.send(final)) == RECEIPT
    finally:
        proxy.close()
    assert desk.runs == ["ORD-1"]


async def test_replies_dropped_past_the_deadline_and_every_reply_lost(redis: RedisServer) -> None:
    """Every reply is lost for longer than the deadline: claim and release land unheard. Nothing runs
    until the fault ends; then the retry refunds once and the next retry gets that receipt."""
    proxy = ReplyDropper(redis.port)
    try:
        desk = Desk(proxy.url, settle_timeout=1.0)
        async with desk.serve() as alice:
            final = await alice.final_round("ORD-1")
            proxy.dropping.set()
            first = await alice.send(final)
            assert first["error"] == UNAVAILABLE and desk.runs == [] and proxy.dropped > 0
            await anyio.sleep(0.5)  # the release goes on trying, unheard
            proxy.dropping.clear()
            retried = await alice.send(final)
            assert receipt(retried) == RECEIPT
            assert (await alice.send(final))["result"] == retried["result"]
    finally:
        proxy.close()
    assert desk.runs == ["ORD-1"]


async def test_redis_stopped_and_started_during_the_final_round(redis: RedisServer) -> None:
    desk = Desk(redis.url)
    async with desk.serve() as alice:
        final = await alice.final_round("ORD-1")
        redis.stop()
        threading.Timer(1.0, redis.start).start()
        first = await alice.send(final)
        assert receipt(first) == RECEIPT
        assert receipt(await alice.send(final)) == RECEIPT
    assert desk.runs == ["ORD-1"]


async def test_redis_down_past_the_deadline_then_back(redis: RedisServer) -> None:
    desk = Desk(redis.url, settle_timeout=1.0)
    async with desk.serve() as alice:
        final = await alice.final_round("ORD-1")
        redis.stop()
        try:
            assert (await alice.send(final))["error"] == UNAVAILABLE
        finally:
            redis.start()
        assert desk.runs == []
        retried = await alice.send(final)
        assert receipt(retried) == RECEIPT
        assert (await alice.send(final))["result"] == retried["result"]
    assert desk.runs == ["ORD-1"]


async def test_redis_restarted_while_the_refund_runs_keeps_its_receipt(redis: RedisServer) -> None:
    """Claimed, then Redis goes away before the answer can be kept: the caller gets its receipt, the
    answer reaches Redis in the background once it is back (AOF kept the claim), and the retry gets it."""
    desk = Desk(redis.url, settle_timeout=1.0)
    desk.hold = threading.Event()
    async with desk.serve() as alice:
        final = await alice.final_round("ORD-1")
        answers: list[dict[str, Any]] = []

        async def first() -> None:
            answers.append(await alice.send(final))

        async with anyio.create_task_group() as group:
            group.start_soon(first)
            while not await anyio.to_thread.run_sync(_claimed, redis):
                await anyio.sleep(0.02)
            redis.stop()
            desk.hold.set()
        try:
            assert receipt(answers[0]) == RECEIPT
            assert desk.store.pending == 1  # the answer, waiting for Redis
        finally:
            redis.start()
        retried = await alice.send(final)
        assert retried["result"] == answers[0]["result"]
        assert desk.store.pending == 0
        other = Caller(alice.http, alice.url, "mallory")
        assert (await other.send(final))["error"] == FROZEN
    assert desk.runs == ["ORD-1"]


def _claimed(redis: RedisServer) -> bool:
    """Whether a single-use claim is running in Redis (a claim hash whose state `s` is `r`)."""
    with redis_py.Redis(port=redis.port, socket_timeout=2) as client:
        return any(client.hget(key, "s") == b"r" for key in client.scan_iter("mcp-resolve:*:replay:*"))


async def test_the_redis_round_store_keeps_answers_for_their_caller_only_and_within_bounds(
    redis: RedisServer,
) -> None:
    store = RedisReplayStore(redis.url, max_outcome_bytes=100)
    try:
        assert isinstance(store, RoundStore)
        expires = time.time() + 30
        won = await store.claim_round("s1", expires, "alice-digest")
        assert won.status == "won" and won.ticket
        assert (await store.claim_round("s1", expires, "alice-digest")).status == "running"
        await store.keep_outcome("s1", expires, "another-ticket", b"forged")  # only the winner finishes it
        assert (await store.claim_round("s1", expires, "alice-digest")).status == "running"
        await store.keep_outcome("s1", expires, won.ticket, b'{"result":{}}')
        assert await store.claim_round("s1", expires, "alice-digest") == RoundClaim(
            "done", outcome=b'{"result":{}}'
        )
        assert (await store.claim_round("s1", expires, "bob-digest")).status == "replayed"
        assert (await store.claim_round("s1", expires, None)).status == "replayed"
        assert not await store.claim("s1", expires)

        big = await store.claim_round("s2", expires, "alice-digest")
        await store.keep_outcome("s2", expires, big.ticket, b"x" * 101)
        assert await store.claim_round("s2", expires, "alice-digest") == RoundClaim("done", outcome=None)
        anonymous = await store.claim_round("s3", expires, None)
        await store.keep_outcome("s3", expires, anonymous.ticket, b"kept for nobody")
        assert (await store.claim_round("s3", expires, None)).status == "replayed"

        # A claim an older version left (a plain string key) is never taken over.
        legacy = store.redis.key("replay", hashlib.sha256(b"s4").hexdigest())
        await store.redis.client().set(legacy, b"1", px=30_000)
        assert (await store.claim_round("s4", expires, "alice-digest")).status == "replayed"
        ttl = await store.redis.client().pttl(store.redis.key("replay", hashlib.sha256(b"s1").hexdigest()))
        assert 60_000 < ttl <= 91_000  # the state's expiry plus the grace, answer kept or not
    finally:
        await store.redis.aclose()


async def test_background_work_waiting_for_redis_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """Redis unreachable: a claim gives up at its deadline and leaves one release waiting; past
    `max_pending` nothing more waits (the state stays refused until it expires, never run twice)."""
    store = RedisReplayStore(f"redis://127.0.0.1:{free_port()}/0", settle_timeout=0.2, max_pending=2)
    try:
        for index in range(4):
            with pytest.raises(StoreUnavailable, match="replay store unavailable"):
                await store.claim_round(f"s{index}", time.time() + 30, "alice-digest")
        assert store.pending == 2
        assert "too many releases waiting for Redis" in caplog.text
    finally:
        await store.redis.aclose()
    assert store.pending == 0


# -- a fleet: nginx in front of three workers ------------------------------------------------------


class AppWorker:
    """One uvicorn process serving tests/servers/fleet_receipts_app.py (the fleet desk, principal by header)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        command = [PYTHON, "-m", "uvicorn", "--app-dir", str(SERVERS), "fleet_receipts_app:app"]
        command += ["--port", str(self.port), "--log-level", "warning"]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(
                command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
            )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def test_a_fleet_behind_nginx_refunds_once_through_a_stall_and_retries_get_the_receipt(
    redis: RedisServer, tmp_path: Path
) -> None:
    """Three workers and nginx (docs/deploy/nginx.conf); Redis sleeps 4 s during two final rounds, one
    anonymous and one of a principal. Both are refunded once and answered with their receipt; the
    principal's retries through nginx (other workers) get the same receipt, the anonymous copy is
    refused as before."""
    ledger = tmp_path / "ledger.txt"
    env = {
        "MCP_RESOLVE_REDIS_URL": redis.url,
        "MCP_RESOLVE_STATE_KEYS": KEY,
        "FLEET_LEDGER": str(ledger),
    }
    workers = [AppWorker(env, tmp_path / f"worker{i}.log") for i in range(3)]
    nginx = None
    try:
        for worker in workers:
            wait_healthy(worker.url.replace("/mcp", "/health"), worker.process)
        nginx = Nginx([worker.port for worker in workers])
        async with httpx.AsyncClient(timeout=30) as http:
            alice, anonymous = Caller(http, nginx.url, "alice"), Caller(http, nginx.url, None)
            finals = {
                "alice": await _fleet_final(alice, "stalled alice"),
                "anonymous": await _fleet_final(anonymous, "stalled anonymous"),
            }
            answers: dict[str, dict[str, Any]] = {}

            async def send(name: str, caller: Caller) -> None:
                answers[name] = await caller.send(finals[name])

            stall = Stall(redis, 4)
            async with anyio.create_task_group() as group:
                group.start_soon(send, "alice", alice)
                group.start_soon(send, "anonymous", anonymous)
            stall.join()
            for name in ("alice", "anonymous"):
                assert receipt(answers[name])["reason"] == f"stalled {name}", answers[name]
            for _ in range(3):  # round-robin: each retry reaches another worker
                assert (await alice.send(finals["alice"]))["result"] == answers["alice"]["result"]
            assert (await anonymous.send(finals["anonymous"]))["error"] == FROZEN
    finally:
        if nginx is not None:
            nginx.close()
        for worker in workers:
            worker.stop()
    refunds = [line.split("\t")[0] for line in ledger.read_text().splitlines()]
    assert sorted(refunds) == ["stalled alice", "stalled anonymous"]


async def _fleet_final(caller: Caller, reason: str) -> dict[str, Any]:
    """Rounds 1 and 2 of the fleet desk's refund; the params of round 3, unsent."""
    call: dict[str, Any] = {"name": "refund_order", "arguments": {"order_id": "ORD-7002", "reason": reason}}
    for _ in range(2):
        result = (await caller.send(call))["result"]
        assert result["resultType"] == "input_required", result
        answers = {}
        for key, question in result["inputRequests"].items():
            full = "full" in question["params"]["requestedSchema"]["properties"]
            answers[key] = {"action": "accept", "content": {"full": True} if full else {"restock": False}}
        call = {**call, "requestState": result["requestState"], "inputResponses": answers}
    return call
