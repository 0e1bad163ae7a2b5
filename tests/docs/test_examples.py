"""The examples as a new user runs them: the refund-desk client on every path, the bookshop client on both eras."""

import json
import subprocess
from dataclasses import replace
from typing import Annotated

import pytest

from conftest import EXAMPLES, PYTHON, load_module
from mcp_resolve import Elicit, Resolve

pytestmark = pytest.mark.slow

REFUND_CLIENT = EXAMPLES / "refund_desk" / "client.py"
BOOKSHOP_CLIENT = EXAMPLES / "bookshop" / "client.py"

RECEIPTS = (
    "receipt: refunded 999 cents for ORD-7001, not restocked",
    "receipt: refunded 4800 cents for ORD-7002, restocked",
    "receipt: refunded 2400 cents for ORD-7002, not restocked",
)
ERRORS = (
    "error: Error executing tool refund_order: order has no item 'mystery-hat'",
    "error: Error executing tool refund_order: Resolver for parameter 'scope' could not resolve: "
    "elicitation was decline",
    "error: Error executing tool refund_order: unknown order 'ORD-9999'",
)


def run_example(path: object, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, str(path), *args], capture_output=True, text=True, timeout=120)


def assert_story(done: subprocess.CompletedProcess[str], *, rounds: list[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "The model sees refund_order(order_id, reason); required: order_id, reason." in out
    for line in (*RECEIPTS, *ERRORS):
        assert line in out
    positions = [out.index(line) for line in (RECEIPTS[0], RECEIPTS[1], RECEIPTS[2], *ERRORS)]
    assert positions == sorted(positions), "the six calls ran out of order"
    assert [
        line.strip() for line in out.splitlines() if "round trips:" in line or "requests:" in line
    ] == rounds
    assert (
        out.count("? Order ORD-7002 has several items (trail-boots, wool-socks). Refund the whole order?")
        == 4
    )
    assert "? Restock trail-boots, wool-socks?" in out and "? Restock wool-socks?" in out
    assert "Questions asked over the whole story: {'scope': 4, 'restock': 2}" in out
    assert "FAILED" not in out


MODERN_ROUNDS = [f"round trips: {n}" for n in (1, 3, 3, 2, 2, 1)]
LEGACY_REQUESTS = ["requests: 1 (questions were asked mid-call)"] * 6


def test_refund_desk_over_stdio() -> None:
    done = run_example(REFUND_CLIENT)
    assert "Refund desk over stdio, protocol 2026-07-28" in done.stdout
    assert_story(done, rounds=MODERN_ROUNDS)
    assert "All checks passed (stdio, protocol 2026-07-28)." in done.stdout


def test_refund_desk_over_stdio_legacy() -> None:
    done = run_example(REFUND_CLIENT, "--legacy")
    assert_story(done, rounds=LEGACY_REQUESTS)
    assert "All checks passed (stdio, protocol 2025-11-25)." in done.stdout


def test_refund_desk_over_http() -> None:
    """The client hosts server.py on a free port; the questions ride 2026-07-28 input-required rounds."""
    done = run_example(REFUND_CLIENT, "--http")
    assert "Refund desk over HTTP, protocol 2026-07-28" in done.stdout
    assert_story(done, rounds=MODERN_ROUNDS)
    assert "All checks passed (HTTP, protocol 2026-07-28)." in done.stdout


def test_refund_desk_over_http_legacy() -> None:
    """Handshake era over HTTP: each question is an elicitation/create request sent mid-call."""
    done = run_example(REFUND_CLIENT, "--http", "--legacy")
    assert "Refund desk over HTTP, protocol 2025-11-25" in done.stdout
    assert_story(done, rounds=LEGACY_REQUESTS)
    assert "All checks passed (HTTP, protocol 2025-11-25)." in done.stdout


@pytest.mark.parametrize(("flags", "protocol"), [((), "2026-07-28"), (("--legacy",), "2025-11-25")])
def test_refund_desk_with_bearer_tokens(flags: tuple[str, ...], protocol: str) -> None:
    """`--auth`: turned away without a token; as alice the story plays; bob's order is refused to her
    although the call claims customer_id='bob' (the customer comes from the token, not the arguments)."""
    done = run_example(REFUND_CLIENT, "--auth", *flags)
    out = done.stdout
    assert out.startswith("Without a token the desk refuses: Unauthorized: this server needs a bearer token")
    assert f"Refund desk over HTTP, protocol {protocol}, as alice (bearer token)" in out
    rounds = MODERN_ROUNDS if protocol == "2026-07-28" else LEGACY_REQUESTS
    extra = (
        ["round trips: 1"] if protocol == "2026-07-28" else ["requests: 1 (questions were asked mid-call)"]
    )
    assert_story(done, rounds=rounds + extra)
    assert "7. refund_order(order_id='ORD-8001', reason='it is my order, really', customer_id='bob')" in out
    assert "error: Error executing tool refund_order: unknown order 'ORD-8001'" in out
    assert f"All checks passed (HTTP with a bearer token, protocol {protocol})." in out


@pytest.mark.parametrize(("flags", "protocol"), [((), "2026-07-28"), (("--legacy",), "2025-11-25")])
def test_refund_desk_signed_in_through_the_oauth_proxy(flags: tuple[str, ...], protocol: str) -> None:
    """`--proxy`: the desk behind an OAuthProxy in front of a headless OpenID provider. Turned away
    without signing in; alice approves the client on the consent page and signs in upstream once;
    the story plays as her, and bob's order is refused to her."""
    done = run_example(REFUND_CLIENT, "--proxy", *flags)
    out = done.stdout
    assert out.startswith("Identity provider (oidc-provider, headless) at http://127.0.0.1:"), (
        out + done.stderr
    )
    assert "Without signing in the desk refuses: Unauthorized: this server needs a bearer token" in out
    sign_in = [
        "   the desk's consent page: mcp-resolve client wants to sign you in with oidc",
        "   > the person approves",
        "   back to the client, which trades the code for the desk's own token",
    ]
    positions = [out.index(line) for line in sign_in]
    assert positions == sorted(positions)
    assert out.count("): alice signs in") == 1
    assert f"Refund desk over HTTP, protocol {protocol}, as alice (signed in upstream)" in out
    rounds = MODERN_ROUNDS if protocol == "2026-07-28" else LEGACY_REQUESTS
    assert_story(done, rounds=rounds + rounds[-1:])
    assert "7. refund_order(order_id='ORD-8001', reason='it is my order, really', customer_id='bob')" in out
    assert "error: Error executing tool refund_order: unknown order 'ORD-8001'" in out
    assert "Sign-ins over the whole story: 1 (consent pages: 1)" in out
    assert f"All checks passed (HTTP, signed in through the OAuth proxy, protocol {protocol})." in out


@pytest.mark.anyio
async def test_refund_desk_client_catches_a_wrong_server() -> None:
    """The client's checks are real: a desk that refunds the wrong amount, or asks again, is reported."""
    client_module = load_module(REFUND_CLIENT)
    server = load_module(EXAMPLES / "refund_desk" / "server.py")
    digital = server.ORDERS["ORD-7001"][0]
    server.ORDERS["ORD-7001"] = (replace(digital, cents=1999),)
    lines: list[str] = []
    person = client_module.Person(lines.append)
    async with client_module.CountingClient(server.mcp, elicitation_handler=person) as client:
        failures = await client_module.play(client, person, lines.append)
    receipt = {
        "order_id": "ORD-7001",
        "reason": "the download never arrived",
        "cents": 1999,
        "restocked": False,
    }
    assert failures == [  # the receipt's text is its JSON indented by 2, as the official SDK sends it
        f"call 1: expected a receipt with {{'cents': 999, 'restocked': False}}, got {json.dumps(receipt, indent=2)!r}"
    ]


@pytest.mark.anyio
async def test_refund_desk_client_counts_questions() -> None:
    """If the scope question fired once per consumer instead of once per call, the counters say so."""
    client_module = load_module(REFUND_CLIENT)
    server = load_module(EXAMPLES / "refund_desk" / "server.py")

    async def scope_again(
        order: Annotated[server.Order, Resolve(server.load_order)],
    ) -> server.Scope | Elicit[server.Scope]:
        return await server.refund_scope(order)

    async def ask_restock_own_scope(
        order: Annotated[server.Order, Resolve(server.load_order)],
        scope: Annotated[server.Scope, Resolve(scope_again)],
    ) -> server.Restock | Elicit[server.Restock]:
        return await server.ask_restock(order, scope)

    server.mcp.dependency_overrides[server.ask_restock] = ask_restock_own_scope
    lines: list[str] = []
    person = client_module.Person(lines.append)
    async with client_module.CountingClient(server.mcp, elicitation_handler=person) as client:
        failures = await client_module.play(client, person, lines.append)
    assert person.counts["scope"] > 4
    assert f"question counters {{'scope': {person.counts['scope']}, 'restock': 2}}" in failures[-1]
    assert (
        "call 2: the person was asked ['scope', 'scope', 'restock'], expected ['scope', 'restock']"
        in failures
    )


@pytest.mark.parametrize("args", [[], ["--legacy"]], ids=["2026-07-28", "legacy"])
def test_bookshop_client(args: list[str]) -> None:
    done = run_example(BOOKSHOP_CLIENT, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for line in (
        "[ok ] input schema properties: ['title']",
        "[ok ] Dune with a forged stock argument (ignored): Reserved 'Dune' (6 copies left).",
        "[ok ] inventory lookups for that call: 1",
        "[ok ] lookups for Dune after a second call (once per call, never cached): 2",
        "[ok ] Neuromancer, person says yes: Backordered 'Neuromancer'; it ships in 2-3 weeks.",
        "[ok ] Neuromancer, person says no: No order placed.",
        "[ok ] Neuromancer, person declines to answer: Error executing tool order_book: "
        "Resolver for parameter 'backorder' could not resolve: elicitation was decline",
    ):
        assert line in out
    assert "BAD" not in out and out.rstrip().endswith("All checks passed.")
