"""The refund desk's story as a client lives it: the person at the desk and the six calls in order.

Shared by the tests that drive the desk through different clients and layers
(tests/docs/test_refund_desk.py, tests/protocol/test_middleware_rounds.py). The
person is an elicitation handler that counts the questions it is asked (scope,
restock) and answers from a per-call script; the story's final counters prove
each question fired exactly once per call that needed it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_types import CallToolResult, ElicitRequestFormParams, ElicitResult

SCOPE_FULL = {"action": "accept", "content": {"full": True}}
RESTOCK_YES = {"action": "accept", "content": {"restock": True}}
ERROR_PREFIX = "Error executing tool refund_order: "


class Person:
    """The human at the desk: answers from a per-call script and counts every question."""

    def __init__(self) -> None:
        self.counts = {"scope": 0, "restock": 0}
        self.script: dict[str, dict[str, Any]] = {}

    def answer(self, message: str) -> dict[str, Any]:
        kind = "scope" if "several items" in message else "restock"
        self.counts[kind] += 1
        return self.script[kind]

    async def ours(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        return self.answer(params.message)

    async def official(self, _context: Any, params: Any) -> ElicitResult:
        return ElicitResult.model_validate(self.answer(params.message))


CallTool = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]


def error_text(result: CallToolResult) -> str:
    assert result.is_error is True
    (block,) = result.content
    text = block.text  # type: ignore[union-attr]
    assert text.startswith(ERROR_PREFIX)
    return str(text[len(ERROR_PREFIX) :])


async def run_story(call_tool: CallTool, person: Person) -> None:
    """The story's six calls, in order, with what each must produce."""

    async def refund(order_id: str, **script: dict[str, Any]) -> CallToolResult:
        person.script = script
        return await call_tool("refund_order", {"order_id": order_id, "reason": "damaged"})

    single_line = await refund("ORD-7001")
    assert single_line.is_error is False
    assert single_line.structured_content == {
        "order_id": "ORD-7001",
        "reason": "damaged",
        "cents": 999,
        "restocked": False,
    }
    assert person.counts == {"scope": 0, "restock": 0}  # the fast path asks nothing

    full = await refund("ORD-7002", scope=SCOPE_FULL, restock=RESTOCK_YES)
    assert full.structured_content == {
        "order_id": "ORD-7002",
        "reason": "damaged",
        "cents": 4800,
        "restocked": True,
    }
    assert person.counts == {"scope": 1, "restock": 1}

    one_item = await refund(
        "ORD-7002",
        scope={"action": "accept", "content": {"full": False, "sku": "wool-socks"}},
        restock={"action": "decline"},
    )
    assert one_item.structured_content == {
        "order_id": "ORD-7002",
        "reason": "damaged",
        "cents": 2400,
        "restocked": False,
    }

    unknown_sku = await refund(
        "ORD-7002", scope={"action": "accept", "content": {"full": False, "sku": "mystery-hat"}}
    )
    assert error_text(unknown_sku) == "order has no item 'mystery-hat'"

    declined = await refund("ORD-7002", scope={"action": "decline"})
    assert error_text(declined) == "Resolver for parameter 'scope' could not resolve: elicitation was decline"

    unknown_order = await refund("ORD-9999")
    assert error_text(unknown_order) == "unknown order 'ORD-9999'"

    assert person.counts == {"scope": 4, "restock": 2}
