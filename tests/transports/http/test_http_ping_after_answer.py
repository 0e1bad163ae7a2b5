"""A keep-alive ping never follows the response's last chunk.

The loop's keep-alive ticker starts a short task to write a ping; the work
may finish in the same turns. Whichever order they run in, once the final
chunk is written nothing more may be: an ASGI server refuses a body after
the response completed (uvicorn raises), which would surface as an error.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_resolve.transports.http._exchange.exchange import Exchange

pytestmark = pytest.mark.anyio

_PROGRESS = {
    "jsonrpc": "2.0",
    "method": "notifications/progress",
    "params": {"progressToken": 1, "progress": 1},
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _answer_around_a_ping(turns: int) -> list[dict[str, Any]]:
    """One exchange whose work answers `turns` loop turns after the ticker started its ping task."""
    exchange = Exchange(json_ok=False, sse_ok=True, ping_interval=0.05, cancel_on_disconnect=True)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            assert not any(
                m["type"] == "http.response.body" and not m.get("more_body", False) for m in sent
            ), f"a body after the response completed ({turns} turns)"
        sent.append(message)

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client never hangs up
        return {"type": "http.disconnect"}

    async def work() -> dict[str, Any]:
        await exchange.sink(_PROGRESS)  # the response is a stream now
        while exchange._pinger is None:  # the ticker's ping task has been started
            await asyncio.sleep(0)
        for _ in range(turns):
            await asyncio.sleep(0)
        return {"jsonrpc": "2.0", "id": 1, "result": {}}

    await asyncio.wait_for(exchange.run(work(), receive, send), 5)
    return sent


async def test_no_ping_after_the_last_chunk_whatever_the_order() -> None:
    for turns in range(12):
        sent = await _answer_around_a_ping(turns)
        assert sent[-1] == {"type": "http.response.body", "body": b""}
