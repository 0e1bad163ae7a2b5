"""`MCPServer.as_proxy`: resource subscriptions reach the target, and its updates reach the subscriber.

The target is an `MCPServer` of ours served in memory (one session per
upstream lane); the front is served on HTTP, so each handshake-era caller is
a session of its own (its `mcp-session-id`).
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from http_helpers import http_server
from mcp_resolve import Client, MCPError, MCPServer
from mcp_resolve.bridges import ProxyLimits

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

URI = "memo://board"


def target() -> MCPServer:
    server = MCPServer("board")

    @server.resource(URI)
    def board() -> str:
        return "the board"

    return server


class Heard:
    """The `notifications/resources/updated` URIs one client heard."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.changed = anyio.Event()

    async def __call__(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            self.uris.append(params["uri"])
            self.changed.set()
            self.changed = anyio.Event()


@asynccontextmanager
async def proxied(board: MCPServer, **options: Any) -> AsyncIterator[str]:
    front = MCPServer.as_proxy(board, **options)
    async with http_server(front.streamable_http_app()) as base:
        yield f"{base}/mcp"


async def _hears(heard: Heard, uri: str) -> None:
    with anyio.fail_after(10):
        while uri not in heard.uris:
            await heard.changed.wait()


async def test_a_subscriber_hears_the_targets_updates_and_a_bystander_does_not() -> None:
    board = target()
    alice_heard, bob_heard = Heard(), Heard()
    async with (
        proxied(board) as url,
        Client(url, mode="legacy", notification_handler=alice_heard) as alice,
        Client(url, mode="legacy", notification_handler=bob_heard) as bob,
    ):
        assert alice.server_capabilities["resources"].get("subscribe") is True
        await bob.list_resources()  # bob is served too, but subscribes to nothing
        await alice.request("resources/subscribe", {"uri": URI})
        assert await board.notify_resource_updated(URI) == 1  # the target: alice's upstream session
        await _hears(alice_heard, URI)

        await alice.request("resources/unsubscribe", {"uri": URI})
        assert await board.notify_resource_updated(URI) == 0  # gone upstream too
        await alice.request("resources/subscribe", {"uri": "memo://other"})
        await board.notify_resource_updated("memo://other")
        await _hears(alice_heard, "memo://other")  # heard after the update it must not have heard
    assert alice_heard.uris == [URI, "memo://other"]
    assert bob_heard.uris == []


async def test_a_caller_may_hold_only_so_many_subscriptions() -> None:
    board = target()
    async with (
        proxied(board, limits=ProxyLimits(max_subscriptions=2)) as url,
        Client(url, mode="legacy") as alice,
    ):
        await alice.request("resources/subscribe", {"uri": "memo://1"})
        await alice.request("resources/subscribe", {"uri": "memo://2"})
        await alice.request("resources/subscribe", {"uri": "memo://2"})  # held already: not another
        with pytest.raises(MCPError, match="at most 2 resource subscriptions"):
            await alice.request("resources/subscribe", {"uri": "memo://3"})
        assert await board.notify_resource_updated("memo://3") == 0
        await alice.request("resources/unsubscribe", {"uri": "memo://1"})
        await alice.request("resources/subscribe", {"uri": "memo://3"})
        assert await board.notify_resource_updated("memo://3") == 1


async def test_subscribe_is_not_offered_when_the_target_does_not_offer_it() -> None:
    board = target()
    board.offers_resource_subscriptions = False
    async with proxied(board) as url, Client(url, mode="legacy") as alice:
        await alice.list_resources()  # the front has learnt what the target offers
        with pytest.raises(MCPError, match="does not offer resource subscriptions"):
            await alice.request("resources/subscribe", {"uri": URI})
        async with Client(url, mode="legacy") as later:
            assert "subscribe" not in later.server_capabilities["resources"]


async def test_the_subscription_session_of_a_caller_gone_is_closed_when_another_subscribes() -> None:
    """A caller that left without unsubscribing no longer holds an upstream session once another subscribes."""
    board = target()
    async with proxied(board, limits=ProxyLimits(max_lanes=2)) as url:
        async with Client(url, mode="legacy") as alice:
            await alice.request("resources/subscribe", {"uri": "memo://alice"})
            assert await board.notify_resource_updated("memo://alice") == 1
        gc.collect()  # alice's front session is gone
        async with Client(url, mode="legacy") as bob, Client(url, mode="legacy") as carol:
            await bob.request("resources/subscribe", {"uri": URI})
            # One subscription session of the two sessions at most: bob's.
            with pytest.raises(MCPError, match="too many callers hold resource subscriptions"):
                await carol.request("resources/subscribe", {"uri": URI})
            with anyio.fail_after(10):
                while await board.notify_resource_updated("memo://alice"):
                    await anyio.sleep(0.05)  # alice's upstream session closing
            assert await board.notify_resource_updated(URI) == 1


async def test_a_2026_07_28_listen_stream_on_the_front_hears_the_targets_updates() -> None:
    board = target()
    dana_heard = Heard()
    acknowledged = anyio.Event()

    async def dana_hears(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/subscriptions/acknowledged":
            acknowledged.set()
        await dana_heard(method, params)

    async with (
        proxied(board) as url,
        Client(url, mode="legacy") as alice,
        Client(url, mode="2026-07-28", notification_handler=dana_hears) as dana,
        anyio.create_task_group() as tg,
    ):
        listen = {"notifications": {"resourceSubscriptions": [URI]}}
        tg.start_soon(dana.request, "subscriptions/listen", listen)
        with anyio.fail_after(10):
            await acknowledged.wait()
        await alice.request("resources/subscribe", {"uri": URI})
        await board.notify_resource_updated(URI)
        await _hears(dana_heard, URI)
        tg.cancel_scope.cancel()


async def test_two_callers_on_one_uri_each_hear_each_update_once_on_both_eras() -> None:
    """Alice and bob (handshake era) both subscribe to the board, dana listens on 2026-07-28: each hears
    each change once, and alice unsubscribing leaves bob and dana hearing it.

    `memo://alice` and `memo://bob` are held by one caller's upstream session each: once a subscriber has
    heard the later of them, whatever that session relayed before has reached it too (one session's
    reports are relayed in order), so the counts below are final, not a race with a late duplicate.
    """
    board = target()
    heard = {name: Heard() for name in ("alice", "bob", "dana")}
    acknowledged = anyio.Event()

    async def dana_hears(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/subscriptions/acknowledged":
            acknowledged.set()
        await heard["dana"](method, params)

    async def heard_times(name: str, uri: str, times: int) -> None:
        with anyio.fail_after(10):
            while heard[name].uris.count(uri) < times:
                await heard[name].changed.wait()

    async def settled(round_: int) -> None:
        """Each caller's own URI changes once more; every subscriber hears the marker of each session."""
        assert await board.notify_resource_updated("memo://alice") == 1
        assert await board.notify_resource_updated("memo://bob") == 1
        for name, uri in (("alice", "memo://alice"), ("bob", "memo://bob")):
            await heard_times(name, uri, round_)
            await heard_times("dana", uri, round_)

    async with (
        proxied(board) as url,
        Client(url, mode="legacy", notification_handler=heard["alice"]) as alice,
        Client(url, mode="legacy", notification_handler=heard["bob"]) as bob,
        Client(url, mode="2026-07-28", notification_handler=dana_hears) as dana,
        anyio.create_task_group() as tg,
    ):
        listen = {"notifications": {"resourceSubscriptions": [URI, "memo://alice", "memo://bob"]}}
        tg.start_soon(dana.request, "subscriptions/listen", listen)
        with anyio.fail_after(10):
            await acknowledged.wait()
        for client, own in ((alice, "memo://alice"), (bob, "memo://bob")):
            await client.request("resources/subscribe", {"uri": URI})
            await client.request("resources/subscribe", {"uri": own})

        assert await board.notify_resource_updated(URI) == 2  # both callers' upstream sessions hold it
        await settled(1)
        await settled(2)  # and whatever the first round enqueued for a subscriber has reached it
        assert [heard[name].uris.count(URI) for name in ("alice", "bob", "dana")] == [1, 1, 1]

        await alice.request("resources/unsubscribe", {"uri": URI})  # alice's session relayed the board
        assert await board.notify_resource_updated(URI) == 1  # bob's alone now
        await settled(3)
        await settled(4)
        assert [heard[name].uris.count(URI) for name in ("alice", "bob", "dana")] == [1, 2, 2]
        tg.cancel_scope.cancel()


async def test_a_caller_whose_upstream_subscription_was_lost_does_not_silence_the_others() -> None:
    """The target forgets alice's subscription to the board (it restarted its state, say) while her
    upstream session stays open: bob's upstream session still holds it, and his reports reach him.
    Nothing may hinge on one caller's session staying subscribed (it would silence every other)."""
    board = target()
    heard = {name: Heard() for name in ("alice", "bob")}
    async with (
        proxied(board) as url,
        Client(url, mode="legacy", notification_handler=heard["alice"]) as alice,
        Client(url, mode="legacy", notification_handler=heard["bob"]) as bob,
    ):
        await alice.request("resources/subscribe", {"uri": URI})
        await alice.request("resources/subscribe", {"uri": "memo://alice"})
        await bob.request("resources/subscribe", {"uri": URI})
        assert await board.notify_resource_updated(URI) == 2
        await _hears(heard["bob"], URI)

        (alices,) = [
            c for c in board.connections if c.handshake and "memo://alice" in c.handshake.subscriptions
        ]
        # The target no longer reports the board to alice's session.
        alices.handshake.subscriptions.discard(URI)
        await anyio.sleep(0.6)  # past the window in which a report is taken for a copy of the last change
        assert await board.notify_resource_updated(URI) == 1  # bob's session alone reports it
        with anyio.fail_after(10):  # both still subscribe at the front: each hears it once more
            for name in ("bob", "alice"):
                while heard[name].uris.count(URI) < 2:
                    await heard[name].changed.wait()
