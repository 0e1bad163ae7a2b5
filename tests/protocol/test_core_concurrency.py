"""Concurrency on one connection, by counting: requests overlap, and a cancelled request gets no response.

`rendezvous(2)` answers only once two calls are inside it at the same time,
so a server that handled requests one after another would never answer the
first. `block` waits forever and records its own cancellation, which
`wait_cancelled` reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp_types import LOG_LEVEL_META_KEY

from conftest import load_module
from mcp_resolve import Client
from servers.raw_stdio import EVERYTHING_CORE, WAIT, RawStdio, modern_meta

ERAS = ["handshake", "modern"]


@pytest.fixture
def peer() -> Iterator[RawStdio]:
    raw = RawStdio()
    yield raw
    raw.kill()


def _era_params(peer: RawStdio, era: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Open the era on `peer`; the returned function stamps a request's params for it."""
    if era == "handshake":
        peer.initialize()
        return lambda params: params
    meta = modern_meta(**{LOG_LEVEL_META_KEY: "info"})
    return lambda params: {**params, "_meta": meta}


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_two_requests_are_in_flight_at_once_over_stdio(peer: RawStdio, era: str) -> None:
    stamp = _era_params(peer, era)
    first = peer.start_request("tools/call", stamp({"name": "rendezvous", "arguments": {"n": 2}}))
    second = peer.start_request("tools/call", stamp({"name": "rendezvous", "arguments": {"n": 2}}))
    replies = {reply["id"]: reply["result"] for reply in (peer.reply(), peer.reply())}
    assert set(replies) == {first, second}
    # each call saw how many had arrived when it entered: 1 and 2, so both were inside together
    assert sorted(r["structuredContent"]["result"] for r in replies.values()) == [1, 2]
    assert peer.close() == (0, [])


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_two_calls_overlap_on_one_client_in_memory(mode: Any) -> None:
    results: list[int] = []
    async with Client(load_module(EVERYTHING_CORE).mcp, mode=mode) as client:

        async def call() -> None:
            result = await client.call_tool("rendezvous", {"n": 3})
            results.append(result.structured_content["result"])  # type: ignore[index]

        with anyio.fail_after(WAIT):  # a hang guard, not a timing assertion
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(call)
    assert sorted(results) == [1, 2, 3]


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_cancelled_request_stops_and_gets_no_response(peer: RawStdio, era: str) -> None:
    stamp = _era_params(peer, era)
    blocked = peer.start_request("tools/call", stamp({"name": "block"}))
    started = peer.receive()  # the tool logs once it is running: only then is there something to cancel
    assert started["method"] == "notifications/message" and started["params"]["data"] == "blocking"

    waiting = peer.start_request("tools/call", stamp({"name": "wait_cancelled"}))  # a neighbour in flight
    peer.notify("notifications/cancelled", {"requestId": blocked, "reason": "the user gave up"})
    counted = peer.reply()
    assert counted["id"] == waiting  # the neighbour was not cancelled with it...
    assert counted["result"]["structuredContent"] == {
        "result": 1
    }  # ...and the tool body saw its cancellation

    after = peer.request("tools/call", stamp({"name": "add", "arguments": {"a": 1, "b": 1}}))
    assert after["result"]["structuredContent"] == {"result": 2}
    code, rest = peer.close()
    assert code == 0
    assert rest == []  # nothing more arrived, in particular no response to the cancelled request
    assert all(message.get("id") != blocked for message in peer.notifications)
