"""The refund-desk story, played end to end against `server.py`, with a scripted person answering.

    python examples/refund_desk/client.py                  # stdio: spawns server.py
    python examples/refund_desk/client.py --http           # hosts server.py on a free port (2026-07-28 rounds)
    python examples/refund_desk/client.py --http --legacy  # same, handshake era (questions mid-call)
    python examples/refund_desk/client.py --auth           # HTTP with bearer tokens: the customer is the token's

The same server code answers on every path. The client checks that the model
only ever sees `order_id` and `reason`, runs the story's six calls, checks
each outcome, which questions the person was asked, how many round trips
each call took, and that the scope question fired once per call even though
two resolvers consume it. Any failed check makes the exit status non-zero.

With `--auth` the desk demands a bearer token. The client makes a signing
key for the run, starts the server trusting it, and mints alice's token (a
local stand-in for an authorization server). It shows a call without a token
turned away, plays the story as alice, then tries bob's order while passing
`customer_id="bob"`: refused, because the customer comes from the token.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp_types import CallToolResult, ElicitRequestFormParams

from mcp_resolve import Client, MCPError

SERVER = Path(__file__).resolve().with_name("server.py")
SCHEMA_FIELDS = {"order_id", "reason"}
QUESTION_KINDS = {frozenset({"full", "sku"}): "scope", frozenset({"restock"}): "restock"}
EXPECTED_QUESTIONS = {"scope": 4, "restock": 2}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


DECLINE: dict[str, Any] = {"action": "decline"}


@dataclass(frozen=True)
class Step:
    """One call of the story: what the model sends, what the person answers, what must come back."""

    order_id: str
    reason: str
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Question kind -> the person's answer; a question not listed here fails the run."""
    receipt: dict[str, Any] | None = None
    """The expected cents and restocked of the receipt; None when the call must fail."""
    error: str | None = None
    rounds: int = 1
    """tools/call requests the call takes on 2026-07-28 (each input-required round is one more)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Arguments the model slips in beyond the schema (the server ignores them)."""

    @property
    def questions(self) -> list[str]:
        return list(self.answers)


STORY = (
    Step("ORD-7001", "the download never arrived", receipt={"cents": 999, "restocked": False}),
    Step(
        "ORD-7002",
        "wrong size",
        {"scope": accept(full=True), "restock": accept(restock=True)},
        receipt={"cents": 4800, "restocked": True},
        rounds=3,
    ),
    Step(
        "ORD-7002",
        "the socks itch",
        {"scope": accept(full=False, sku="wool-socks"), "restock": DECLINE},
        receipt={"cents": 2400, "restocked": False},
        rounds=3,
    ),
    Step(
        "ORD-7002",
        "a hat was missing",
        {"scope": accept(full=False, sku="mystery-hat")},
        error="order has no item 'mystery-hat'",
        rounds=2,
    ),
    Step(
        "ORD-7002",
        "not sure yet",
        {"scope": DECLINE},
        error="Resolver for parameter 'scope' could not resolve: elicitation was decline",
        rounds=2,
    ),
    Step("ORD-9999", "never ordered", error="unknown order 'ORD-9999'"),
)
SOMEONE_ELSES = Step(
    "ORD-8001", "it is my order, really", error="unknown order 'ORD-8001'", extra={"customer_id": "bob"}
)
"""With --auth: alice's token, bob's order, and an argument claiming to be bob."""


class CountingClient(Client):
    """A Client that counts its tools/call requests: on 2026-07-28 each round trip is one more."""

    tool_requests = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if method == "tools/call":
            self.tool_requests += 1
        return await super().request(method, params)


class Person:
    """The human at the desk: answers from the current step's script and counts what was asked."""

    def __init__(self, say: Any) -> None:
        self.say = say
        self.script: dict[str, dict[str, Any]] = {}
        self.asked: list[str] = []
        self.counts: Counter[str] = Counter()

    async def __call__(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        properties: dict[str, Any] = params.requested_schema.get("properties", {})
        kind = QUESTION_KINDS.get(frozenset(properties), "unexpected")
        self.asked.append(kind)
        self.counts[kind] += 1
        self.say(f"   ? {params.message}")
        for name, prop in properties.items():
            self.say(f"       {name} ({prop.get('type', '?')}): {prop.get('description', '')}")
        answer = self.script.get(kind, DECLINE)
        if answer["action"] == "accept":
            shown = ", ".join(f"{k}={_show(v)}" for k, v in answer["content"].items())
            self.say(f"   > the person accepts: {shown}")
        else:
            self.say(f"   > the person answers: {answer['action']}")
        return answer


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return repr(value)


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def play(
    client: CountingClient, person: Person, say: Any, story: tuple[Step, ...] = STORY
) -> list[str]:
    """Run the story on a connected client; return the failed checks (empty when all passed)."""
    failures: list[str] = []
    modern = client.is_modern
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["refund_order"].input_schema
    properties, required = set(schema.get("properties", {})), set(schema.get("required", []))
    say(
        f"The model sees refund_order({', '.join(sorted(properties))}); required: {', '.join(sorted(required))}."
    )
    say("cents and restock are filled by resolvers and are not in the input schema.\n")
    if properties != SCHEMA_FIELDS or required != SCHEMA_FIELDS:
        failures.append(f"input schema: properties {sorted(properties)}, required {sorted(required)}")

    for number, step in enumerate(story, 1):
        slipped = "".join(f", {name}={value!r}" for name, value in step.extra.items())
        say(f"{number}. refund_order(order_id={step.order_id!r}, reason={step.reason!r}{slipped})")
        person.script, person.asked = step.answers, []
        before = client.tool_requests
        arguments = {"order_id": step.order_id, "reason": step.reason, **step.extra}
        result = await client.call_tool("refund_order", arguments)
        rounds = client.tool_requests - before
        if not person.asked:
            say("   (no questions: nothing to ask the person)")
        if step.extra:
            ignored = ", ".join(step.extra)
            say(f"   ({ignored}: not a parameter of refund_order, so ignored; the customer comes from the token)")
        if result.is_error:
            say(f"   error: {_text(result)}")
        else:
            receipt = result.structured_content or {}
            restocked = "restocked" if receipt.get("restocked") else "not restocked"
            say(
                f"   receipt: refunded {receipt.get('cents')} cents for {receipt.get('order_id')}, {restocked}"
            )
        if modern:
            say(f"   round trips: {rounds}")
        else:
            say(f"   requests: {rounds} (questions were asked mid-call)")
        say("")
        failures.extend(
            f"call {number}: {problem}" for problem in _check(step, result, person.asked, rounds, modern)
        )

    counts = {**dict.fromkeys(EXPECTED_QUESTIONS, 0), **person.counts}
    say(f"Questions asked over the whole story: {counts}")
    if counts != EXPECTED_QUESTIONS:
        failures.append(f"question counters {counts}, expected {EXPECTED_QUESTIONS}")
    return failures


def _check(step: Step, result: CallToolResult, asked: list[str], rounds: int, modern: bool) -> list[str]:
    problems: list[str] = []
    if asked != step.questions:
        problems.append(f"the person was asked {asked}, expected {step.questions}")
    expected_rounds = step.rounds if modern else 1
    if rounds != expected_rounds:
        problems.append(f"{rounds} tools/call requests, expected {expected_rounds}")
    if step.receipt is not None:
        receipt = result.structured_content or {}
        got = {key: receipt.get(key) for key in step.receipt}
        if result.is_error or got != step.receipt or receipt.get("order_id") != step.order_id:
            problems.append(f"expected a receipt with {step.receipt}, got {_text(result)!r}")
    elif not result.is_error or step.error not in _text(result):
        problems.append(f"expected an error containing {step.error!r}, got {_text(result)!r}")
    return problems


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def hosted_server(public_key: Path | None = None) -> AsyncIterator[str]:
    """Run server.py on HTTP on a free loopback port for the length of the block; yield its URL.

    With `public_key` (a PEM file) the server runs `--auth`, trusting tokens that key's pair signs.
    """
    port = _free_port()
    auth = ["--auth", "--public-key", str(public_key)] if public_key is not None else []
    with tempfile.TemporaryFile() as log:
        process = await anyio.open_process(
            [sys.executable, str(SERVER), "--http", "--port", str(port), *auth],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        try:
            await _wait_listening(process, port, log)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.terminate()
                    with anyio.move_on_after(10):
                        await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()


async def _wait_listening(process: Any, port: int, log: Any) -> None:
    with anyio.move_on_after(30):
        while process.returncode is None:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return
    log.seek(0)
    output = log.read().decode(errors="replace")
    raise RuntimeError(f"server.py did not start listening on port {port}:\n{output}")


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--http", action="store_true", help="host server.py on HTTP on a free loopback port")
    parser.add_argument("--legacy", action="store_true", help="speak the handshake era (initialize)")
    parser.add_argument(
        "--auth", action="store_true", help="HTTP with bearer tokens: mint alice's token with a key made for this run"
    )
    args = parser.parse_args(argv)
    if args.auth:
        return await _main_authenticated(args.legacy)

    def say(line: str) -> None:
        print(line, flush=True)

    person = Person(say)
    mode = "legacy" if args.legacy else "2026-07-28"
    transport = "HTTP" if args.http else "stdio"
    async with (
        _target(args.http) as target,
        CountingClient(target, mode=mode, elicitation_handler=person) as client,
    ):
        say(f"Refund desk over {transport}, protocol {client.protocol_version}\n")
        failures = await play(client, person, say)
    if failures:
        say("\nFAILED checks:")
        for failure in failures:
            say(f"  - {failure}")
        return 1
    say(f"All checks passed ({transport}, protocol {client.protocol_version}).")
    return 0


@asynccontextmanager
async def _target(http: bool) -> AsyncIterator[str]:
    if not http:
        yield os.fspath(SERVER)
        return
    async with hosted_server() as url:
        yield url


async def _main_authenticated(legacy: bool) -> int:
    """The story as alice over HTTP --auth, framed by a call without a token and a try at bob's order."""

    def say(line: str) -> None:
        print(line, flush=True)

    from joserfc.jwk import ECKey  # the mcp-resolve[auth] extra

    key = ECKey.generate_key("P-256", parameters={"kid": "desk-demo"})
    person = Person(say)
    mode = "legacy" if legacy else "2026-07-28"
    with tempfile.TemporaryDirectory() as scratch:
        public_key = Path(scratch) / "desk-demo.pem"
        public_key.write_bytes(key.as_pem(private=False))
        async with hosted_server(public_key) as url:
            try:
                async with Client(url, mode=mode) as anonymous:
                    await anonymous.list_tools()
                say("A call without a token went through: the desk is not protected")
                return 1
            except MCPError as exc:
                say(f"Without a token the desk refuses: {exc.message}")
            token = mint_token(key, subject="alice", audience=url)
            headers = {"authorization": f"Bearer {token}"}
            async with CountingClient(url, mode=mode, elicitation_handler=person, headers=headers) as client:
                say(f"Refund desk over HTTP, protocol {client.protocol_version}, as alice (bearer token)\n")
                failures = await play(client, person, say, (*STORY, SOMEONE_ELSES))
    if failures:
        say("\nFAILED checks:")
        for failure in failures:
            say(f"  - {failure}")
        return 1
    say(f"All checks passed (HTTP with a bearer token, protocol {client.protocol_version}).")
    return 0


def mint_token(key: Any, *, subject: str, audience: str) -> str:
    """A token as an authorization server would issue it for this desk (here the client signs it itself)."""
    import time

    from joserfc import jwt

    now = int(time.time())
    claims = {
        "iss": "https://auth.refund-desk.example",
        "sub": subject,
        "aud": audience,
        "client_id": "refund-desk-demo",
        "scope": "refunds:write",
        "iat": now,
        "exp": now + 600,
    }
    return jwt.encode({"alg": "ES256", "kid": "desk-demo"}, claims, key)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
