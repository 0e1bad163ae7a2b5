"""Resolvers with cleanup (generators) and `dependency_overrides`, on both eras."""

from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, ElicitRequestFormParams
from pydantic import BaseModel

from mcp_resolve import Client, Context, Elicit, MCPServer, Resolve, ToolError
from mcp_resolve.transports.memory import connect_in_memory

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]


def text_of(result: Any) -> str:
    return str(result.content[0].text)


class Ok(BaseModel):
    ok: bool


# -- generator resolvers --------------------------------------------------------------------------


def cleanup_server(log: list[str]) -> MCPServer:
    """session (async generator) -> lock (sync generator); `fail` chooses where the call goes wrong."""
    server = MCPServer("cleanup")

    async def session(fail: str) -> AsyncIterator[str]:
        log.append("open session")
        try:
            yield "db"
        except ToolError as exc:
            log.append(f"rollback ({exc})")
            raise
        finally:
            log.append("close session")

    def lock(db: Annotated[str, Resolve(session)]) -> Iterator[str]:
        log.append("take lock")
        try:
            yield f"{db}-lock"
        finally:
            log.append("release lock")

    async def guard(fail: str, held: Annotated[str, Resolve(lock)]) -> int:
        if fail == "resolver":
            raise ToolError("guard refused")
        return 1

    async def confirm(fail: str) -> Ok | Elicit[Ok]:
        return Elicit("Proceed?", Ok) if fail == "ask" else Ok(ok=True)

    @server.tool()
    async def work(
        fail: str,
        held: Annotated[str, Resolve(lock)],
        guarded: Annotated[int, Resolve(guard)],
        go: Annotated[Ok, Resolve(confirm)],
    ) -> str:
        log.append(f"body with {held}")
        if fail == "body":
            raise ToolError("body failed")
        return "done"

    return server


@pytest.mark.parametrize("mode", MODES)
async def test_cleanup_runs_after_the_body_in_reverse_order_of_setup(mode: str) -> None:
    log: list[str] = []
    async with Client(cleanup_server(log), mode=mode) as client:
        result = await client.call_tool("work", {"fail": "no"})
    assert text_of(result) == "done"
    assert log == ["open session", "take lock", "body with db-lock", "release lock", "close session"]


@pytest.mark.parametrize("mode", MODES)
async def test_cleanup_runs_when_the_body_fails(mode: str) -> None:
    log: list[str] = []
    async with Client(cleanup_server(log), mode=mode) as client:
        result = await client.call_tool("work", {"fail": "body"})
    assert text_of(result) == "Error executing tool work: body failed"
    assert log == [
        "open session",
        "take lock",
        "body with db-lock",
        "release lock",
        "rollback (body failed)",
        "close session",
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_cleanup_runs_when_a_later_resolver_fails(mode: str) -> None:
    log: list[str] = []
    async with Client(cleanup_server(log), mode=mode) as client:
        result = await client.call_tool("work", {"fail": "resolver"})
    assert text_of(result) == "Error executing tool work: guard refused"
    assert log == ["open session", "take lock", "release lock", "rollback (guard refused)", "close session"]


async def test_at_2026_cleanup_runs_after_a_round_that_ends_with_questions() -> None:
    log: list[str] = []
    server = cleanup_server(log)
    meta = {
        PROTOCOL_VERSION_META_KEY: "2026-07-28",
        CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}},
    }
    params: dict[str, Any] = {"name": "work", "arguments": {"fail": "ask"}, "_meta": meta}
    async with connect_in_memory(server) as pipe:
        await pipe.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        first = (await pipe.receive())["result"]
        assert first["resultType"] == "input_required"
        # The round is over: everything set up for it is already cleaned up, and the body never ran.
        assert log == ["open session", "take lock", "release lock", "close session"]
        log.clear()
        ((key, _question),) = first["inputRequests"].items()
        retry = {
            **params,
            "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            "requestState": first["requestState"],
        }
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry})
        second = (await pipe.receive())["result"]
    assert second["content"][0]["text"] == "done"
    assert log == ["open session", "take lock", "body with db-lock", "release lock", "close session"]


# -- dependency_overrides -------------------------------------------------------------------------


class Price(BaseModel):
    cents: int


def shop_server(log: list[str]) -> tuple[MCPServer, Any, Any]:
    server = MCPServer("overrides")

    async def price_of(sku: str) -> Price:
        log.append(f"database lookup {sku}")
        return Price(cents=1000)

    async def discount_for(price: Annotated[Price, Resolve(price_of)]) -> int:
        return price.cents // 10

    async def confirm_purchase(sku: str, price: Annotated[Price, Resolve(price_of)]) -> Elicit[Ok]:
        return Elicit(f"Buy {sku} for {price.cents}?", Ok)

    @server.tool()
    async def quote(sku: str, price: Annotated[Price, Resolve(price_of)]) -> str:
        return f"{sku}: {price.cents}"

    @server.tool()
    async def buy(
        sku: str,
        discount: Annotated[int, Resolve(discount_for)],
        ok: Annotated[Ok, Resolve(confirm_purchase)],
    ) -> str:
        return f"bought {sku} with {discount} off" if ok.ok else "not bought"

    return server, price_of, confirm_purchase


@pytest.mark.parametrize("mode", MODES)
async def test_an_override_set_after_registration_replaces_the_resolver_everywhere(mode: str) -> None:
    log: list[str] = []
    server, price_of, _confirm_purchase = shop_server(log)
    asked: list[str] = []

    async def person(params: ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"ok": True}}

    async def fixed_price(sku: str, ctx: Context) -> Price:  # re-analysed: its own parameters are fine
        log.append(f"fixed {sku} on {ctx.protocol_version}")
        return Price(cents=500)

    server.dependency_overrides[price_of] = fixed_price
    async with Client(server, mode=mode, elicitation_handler=person) as client:
        quoted = await client.call_tool("quote", {"sku": "boots"})
        bought = await client.call_tool("buy", {"sku": "boots"})
        del server.dependency_overrides[price_of]
        restored = await client.call_tool("quote", {"sku": "boots"})
    assert text_of(quoted) == "boots: 500"
    assert text_of(bought) == "bought boots with 50 off"  # the dependency of a dependency is replaced too
    assert asked == ["Buy boots for 500?"]  # and so is the one a question depends on
    assert text_of(restored) == "boots: 1000"
    assert all(entry.startswith("fixed boots") for entry in log[:-1])
    assert log[-1] == "database lookup boots"


@pytest.mark.parametrize("mode", MODES)
async def test_a_question_overridden_with_a_fixed_value_asks_nothing(mode: str) -> None:
    log: list[str] = []
    server, _price_of, confirm_purchase = shop_server(log)

    async def always_yes() -> Ok:
        return Ok(ok=True)

    server.dependency_overrides[confirm_purchase] = always_yes
    # No elicitation handler: the client does not even declare the capability, and need not.
    async with Client(server, mode=mode) as client:
        bought = await client.call_tool("buy", {"sku": "socks"})
    assert text_of(bought) == "bought socks with 100 off"
    assert log == ["database lookup socks"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_override_that_cannot_be_analysed_fails_the_call_readably(mode: str) -> None:
    server, price_of, _confirm = shop_server([])

    async def needs_a_stranger(stranger: str) -> Price:
        return Price(cents=1)

    server.dependency_overrides[price_of] = needs_a_stranger
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("quote", {"sku": "boots"})
    assert result.is_error is True
    assert "cannot classify parameter 'stranger'" in text_of(result)


async def test_every_way_of_changing_the_overrides_takes_effect() -> None:
    server, price_of, _confirm = shop_server([])

    async def cheap(sku: str) -> Price:
        return Price(cents=1)

    async def cheaper(sku: str) -> Price:
        return Price(cents=0)

    overrides = server.dependency_overrides
    seen: list[str] = []
    async with Client(server, mode="legacy") as client:
        for change in (
            lambda: overrides.update({price_of: cheap}),
            lambda: overrides.pop(price_of),
            lambda: overrides.setdefault(price_of, cheaper),
            lambda: overrides.popitem(),
            lambda: overrides.__ior__({price_of: cheap}),
            lambda: overrides.clear(),
        ):
            change()
            seen.append(text_of(await client.call_tool("quote", {"sku": "x"})))
    assert seen == ["x: 1", "x: 1000", "x: 0", "x: 1000", "x: 1", "x: 1000"]
