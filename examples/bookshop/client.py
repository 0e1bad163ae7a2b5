"""The bookshop servers of the Dependencies guide, each behaviour shown and checked.

    python examples/bookshop/client.py            # 2026-07-28
    python examples/bookshop/client.py --legacy   # handshake era: same servers, same answers

The servers run in this process (`Client(mcp)` connects in memory, through the
same JSON-RPC a wire would carry), so the client can also read the
inventory-lookup counter of `delivery.py` and show that a resolver with two
consumers runs once per call. Any failed check makes the exit status non-zero.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
from mcp_types import ElicitRequestFormParams

from mcp_resolve import Client

HERE = Path(__file__).resolve().parent


def load(name: str) -> ModuleType:
    """Import one of the servers next to this file (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bookshop_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Checks:
    """Prints each outcome next to what was expected and remembers the mismatches."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def expect(self, what: str, got: Any, expected: Any) -> None:
        mark = "ok " if got == expected else "BAD"
        print(f"  [{mark}] {what}: {got}")
        if got != expected:
            self.failures.append(f"{what}: got {got!r}, expected {expected!r}")


class Person:
    """Answers the backorder question with whatever the current scene sets, and counts the questions."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] = {"action": "decline"}
        self.asked = 0

    async def __call__(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        self.asked += 1
        print(f"      ? {params.message}")
        print(f"      > {self.answer['action']} {self.answer.get('content', '')}".rstrip())
        return self.answer


async def text_of(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    return " ".join(getattr(block, "text", "") for block in result.content)


async def reserve(mode: str, checks: Checks) -> None:
    print("\n1. reserve.py: one dependency; `stock` is invisible to the model")
    server = load("reserve")
    async with Client(server.mcp, mode=mode) as client:
        schema = (await client.list_tools()).tools[0].input_schema
        checks.expect("input schema properties", sorted(schema["properties"]), ["title"])
        checks.expect(
            "Dune",
            await text_of(client, "reserve_book", {"title": "Dune"}),
            "Reserved 'Dune' (6 copies left).",
        )
        checks.expect(
            "Neuromancer",
            await text_of(client, "reserve_book", {"title": "Neuromancer"}),
            "'Neuromancer' is out of stock.",
        )
        forged = {"title": "Dune", "stock": {"title": "Dune", "copies": 1000}}
        checks.expect(
            "Dune with a forged stock argument (ignored)",
            await text_of(client, "reserve_book", forged),
            "Reserved 'Dune' (6 copies left).",
        )


async def delivery(mode: str, checks: Checks) -> None:
    print("\n2. delivery.py: dependencies of dependencies; check_stock has two consumers")
    server = load("delivery")
    async with Client(server.mcp, mode=mode) as client:
        checks.expect(
            "Dune",
            await text_of(client, "order_book", {"title": "Dune"}),
            "Ordered 'Dune'; it arrives tomorrow.",
        )
        checks.expect("inventory lookups for that call", server.LOOKUPS["Dune"], 1)
        checks.expect(
            "Neuromancer",
            await text_of(client, "order_book", {"title": "Neuromancer"}),
            "'Neuromancer' is on backorder; it would arrive in 2-3 weeks.",
        )
        await text_of(client, "order_book", {"title": "Dune"})
        checks.expect(
            "lookups for Dune after a second call (once per call, never cached)", server.LOOKUPS["Dune"], 2
        )


async def backorder(mode: str, checks: Checks) -> None:
    print("\n3. backorder.py: ask the person only when the answer matters")
    server = load("backorder")
    person = Person()
    async with Client(server.mcp, mode=mode, elicitation_handler=person) as client:
        scenes: list[tuple[str, dict[str, Any], str, int]] = [
            ("Dune, in stock", {"action": "decline"}, "Ordered 'Dune'.", 0),
            (
                "Neuromancer, person says yes",
                _accept(True),
                "Backordered 'Neuromancer'; it ships in 2-3 weeks.",
                1,
            ),
            ("Neuromancer, person says no", _accept(False), "No order placed.", 1),
            (
                "Neuromancer, person declines to answer",
                {"action": "decline"},
                "Error executing tool order_book: Resolver for parameter 'backorder' could not resolve: "
                "elicitation was decline",
                1,
            ),
        ]
        for label, answer, expected, questions in scenes:
            person.answer, person.asked = answer, 0
            title = label.split(",")[0]
            checks.expect(label, await text_of(client, "order_book", {"title": title}), expected)
            checks.expect("    questions asked", person.asked, questions)


def _accept(confirm: bool) -> dict[str, Any]:
    return {"action": "accept", "content": {"confirm": confirm}}


SCENES: tuple[Callable[[str, Checks], Any], ...] = (reserve, delivery, backorder)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The Dependencies guide's bookshop, played and checked.")
    parser.add_argument("--legacy", action="store_true", help="speak the handshake era (initialize)")
    args = parser.parse_args(argv)
    mode = "legacy" if args.legacy else "2026-07-28"
    print(f"Bookshop, protocol {'2025-11-25 (handshake era)' if args.legacy else '2026-07-28'}")
    checks = Checks()
    for scene in SCENES:
        await scene(mode, checks)
    if checks.failures:
        print("\nFAILED checks:")
        for failure in checks.failures:
            print(f"  - {failure}")
        return 1
    print("\nAll checks passed.")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
