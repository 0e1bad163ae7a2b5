"""The calls each workload makes, with a check that the answer is the right one.

A benchmark that measures a failing call measures nothing, so every call's
result is checked (cheaply) and a wrong one stops the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


class WrongAnswer(AssertionError):
    """A server answered a workload call incorrectly."""


def _text(result: Any) -> str:
    if result.is_error:
        raise WrongAnswer(f"tool error: {result.content}")
    return str(result.content[0].text)


async def w1_echo(client: Any) -> None:
    if _text(await client.call_tool("echo", {"text": "hello"})) != "hello":
        raise WrongAnswer("echo")


async def w2_order_book(client: Any) -> None:
    if (
        _text(await client.call_tool("order_book", {"title": "Dune"}))
        != "Dune: 3 in stock, delivery in 2 days"
    ):
        raise WrongAnswer("order_book")


async def w3_fan_out(client: Any) -> None:
    text = _text(await client.call_tool("fan_out", {"x": 1}))
    if text not in ("10", '{"result":10}'):
        raise WrongAnswer(f"fan_out: {text}")


async def w3_nap(client: Any) -> None:
    text = _text(await client.call_tool("nap", {"x": 7}))
    if text not in ("7", '{"result":7}'):
        raise WrongAnswer(f"nap: {text}")


async def w4_refund(client: Any) -> None:
    result = await client.call_tool("refund_order", {"order_id": "ORD-7002", "reason": "wrong size"})
    _text(result)
    if result.structured_content != {
        "order_id": "ORD-7002",
        "reason": "wrong size",
        "cents": 4800,
        "restocked": True,
    }:
        raise WrongAnswer(f"refund: {result.structured_content}")


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    call: Callable[[Any], Awaitable[None]]
    asks: bool = False  # asks the person: needs resolver questions on the era in use


WORKLOADS = {
    "W1": Workload("W1", "echo(text)", w1_echo),
    "W2": Workload("W2", "order_book: 2-level resolver DAG", w2_order_book),
    "W3": Workload("W3", "fan_out: 4 resolvers x 20 ms", w3_fan_out),
    "W3n": Workload("W3n", "nap: one 20 ms await in the body, no resolvers (W3's floor)", w3_nap),
    "W4": Workload("W4", "refund ORD-7002, 2 questions", w4_refund, asks=True),
}
