"""The refund-desk story, played end to end against `server.py`, with a scripted person answering.

    python examples/refund_desk/client.py                  # stdio: spawns server.py
    python examples/refund_desk/client.py --http           # hosts server.py on a free port (2026-07-28 rounds)
    python examples/refund_desk/client.py --http --legacy  # same, handshake era (questions mid-call)
    python examples/refund_desk/client.py --auth           # HTTP with bearer tokens: the customer is the token's
    python examples/refund_desk/client.py --proxy          # sign in at an identity provider: its user is the customer

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

With `--proxy` the desk signs people in itself, at the identity provider they
already have, through an `OAuthProxy`. The client starts a headless provider
on loopback (oidc-provider, a certified OpenID provider, run by
tests/node/upstream_server.mjs on the repository's Node 22: `make demo`
installs it), where alice signs in as soon as she is asked, and starts the desk
with `--proxy` in front of it. Our `Client` signs in with OAuth: it registers
itself at the desk and sends the person's browser there. `SignInBrowser` plays
that browser: it approves the client on the desk's consent page and follows
the provider's sign-in back. Alice signs in once; the story's seven calls all
ride the token the desk issued her, and bob's order is refused to her.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx
from mcp_types import CallToolResult, ElicitRequestFormParams

from mcp_resolve import Client, MCPError

SERVER = Path(__file__).resolve().with_name("server.py")
NODE_DIR = Path(__file__).resolve().parents[2] / "tests" / "node"
"""The headless identity provider for --proxy: a script and the Node 22 that `npm ci` installs beside it."""
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
async def hosted_server(
    public_key: Path | None = None, *, proxy: Mapping[str, str] | None = None
) -> AsyncIterator[str]:
    """Run server.py on HTTP on a free loopback port for the length of the block; yield its URL.

    With `public_key` (a PEM file) the server runs `--auth`, trusting tokens that key's pair signs.
    With `proxy` (its REFUND_DESK_* settings) it runs `--proxy`, signing people in upstream.
    """
    port = _free_port()
    flags = ["--http", "--port", str(port)]
    if public_key is not None:
        flags += ["--auth", "--public-key", str(public_key)]
    if proxy is not None:
        flags.append("--proxy")
    with tempfile.TemporaryFile() as log:
        process = await anyio.open_process(
            [sys.executable, str(SERVER), *flags],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**os.environ, **(proxy or {})},
        )
        try:
            await _wait_listening(process, port, log)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            await _stop(process)


async def _stop(process: Any) -> None:
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
    parser.add_argument(
        "--proxy", action="store_true", help="HTTP, alice signing in at a headless identity provider"
    )
    args = parser.parse_args(argv)
    if args.auth:
        return await _main_authenticated(args.legacy)
    if args.proxy:
        return await _main_signed_in(args.legacy)

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


# ---------------------------------------------------------------------------------------------
# --proxy: alice signs in at her identity provider, through the desk
# ---------------------------------------------------------------------------------------------


async def _main_signed_in(legacy: bool) -> int:
    """The story as alice, who signs in once at a headless identity provider, through the desk's proxy."""

    def say(line: str) -> None:
        print(line, flush=True)

    from mcp_resolve.client.auth import OAuth  # the mcp-resolve[auth] extra

    person = Person(say)
    browser = SignInBrowser(say)
    mode = "legacy" if legacy else "2026-07-28"
    client_id, client_secret = "refund-desk", secrets.token_urlsafe(24)  # the desk's, at the provider
    async with headless_provider(client_id, client_secret, account="alice") as provider:
        say(f"Identity provider (oidc-provider, headless) at {provider}; the person there is alice\n")
        settings = {
            "REFUND_DESK_DISCOVERY_URL": f"{provider}/.well-known/openid-configuration",
            "REFUND_DESK_CLIENT_ID": client_id,
            "REFUND_DESK_CLIENT_SECRET": client_secret,
        }
        async with hosted_server(proxy=settings) as url:
            try:
                async with Client(url, mode=mode) as anonymous:
                    await anonymous.list_tools()
                say("A call without signing in went through: the desk is not protected")
                return 1
            except MCPError as exc:
                say(f"Without signing in the desk refuses: {exc.message}")
            say("The client registers itself at the desk and sends the person's browser there:")
            oauth = OAuth(redirect_handler=browser, callback_handler=browser)
            async with CountingClient(url, mode=mode, elicitation_handler=person, auth=oauth) as client:
                version = client.protocol_version
                say(f"\nRefund desk over HTTP, protocol {version}, as alice (signed in upstream)\n")
                failures = await play(client, person, say, (*STORY, SOMEONE_ELSES))
    say(f"Sign-ins over the whole story: {browser.sign_ins} (consent pages: {browser.consent_pages})")
    if (browser.sign_ins, browser.consent_pages) != (1, 1):
        failures.append(f"{browser.sign_ins} sign-ins, {browser.consent_pages} consent pages: expected 1 and 1")
    if failures:
        say("\nFAILED checks:")
        for failure in failures:
            say(f"  - {failure}")
        return 1
    say(f"All checks passed (HTTP, signed in through the OAuth proxy, protocol {client.protocol_version}).")
    return 0


@asynccontextmanager
async def headless_provider(client_id: str, client_secret: str, *, account: str) -> AsyncIterator[str]:
    """An identity provider on a free loopback port for the block, where `account` signs in at once.

    tests/node/upstream_server.mjs runs oidc-provider set up as Google is (OpenID, no
    dynamic registration), with the desk as its one registered client; yields its issuer URL.
    """
    node = NODE_DIR / "node_modules" / ".bin" / "node"
    if not (node.exists() and (NODE_DIR / "node_modules" / "oidc-provider").exists()):
        raise SystemExit(f"--proxy needs the headless identity provider: `make demo`, or `npm ci` in {NODE_DIR}")
    callback = "http://127.0.0.1/auth/callback"  # the desk's; loopback, so any port matches (RFC 8252)
    command = [str(node), "upstream_server.mjs", "oidc", client_id, client_secret, callback]
    with tempfile.TemporaryFile() as log:
        process = await anyio.open_process(
            command,
            cwd=NODE_DIR,
            env={**os.environ, "UPSTREAM_ACCOUNT": account},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        try:
            ready = b""
            assert process.stdout is not None
            with anyio.move_on_after(30):
                while not ready.endswith(b"\n"):
                    ready += await process.stdout.receive()
            if not ready.endswith(b"\n"):
                log.seek(0)
                output = log.read().decode(errors="replace")
                raise RuntimeError(f"the identity provider did not start:\n{output}")
            yield str(json.loads(ready)["issuer"])
        finally:
            await _stop(process)


class ConsentForm(HTMLParser):
    """What the browser reads on the desk's consent page: the heading, the form's action and hidden fields."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.heading = ""
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self._in_heading = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self._in_heading = tag == "h1"
        if tag == "form" and self.action is None:
            self.action = values.get("action", "")
        elif tag == "input" and values.get("type") == "hidden" and "name" in values:
            self.fields[values["name"]] = values.get("value", "")

    def handle_data(self, data: str) -> None:
        if self._in_heading:
            self.heading += data

    def handle_endtag(self, tag: str) -> None:
        self._in_heading = self._in_heading and tag != "h1"


class SignInBrowser:
    """The person's browser during a sign-in, scripted: both handlers our Client's OAuth takes.

    Given the desk's authorization URL it does what a browser and an agreeable person would: it
    follows redirects with its cookies, approves on the desk's consent page (the form carries its
    CSRF token), and goes through the provider's sign-in. The redirect back to the client carries
    the authorization code: the browser hands it to the client (a desktop client would listen on
    loopback for it) and shows none of it.
    """

    REDIRECT_URI = "http://127.0.0.1:47823/callback"

    def __init__(self, say: Any) -> None:
        self.say = say
        self.cookies = httpx.Cookies()
        self.sign_ins = 0
        self.consent_pages = 0
        self._redirects_back: list[str] = []

    async def redirect_uri(self) -> str:
        return self.REDIRECT_URI

    async def __call__(self, url: str) -> None:
        """The redirect handler: browse from the desk's /authorize to the redirect back."""
        self.sign_ins += 1
        async with httpx.AsyncClient(cookies=self.cookies, timeout=30) as http:
            try:
                await self._browse(http, url)
            finally:
                self.cookies = http.cookies  # kept from one sign-in to the next, as a browser does

    async def _browse(self, http: httpx.AsyncClient, url: str) -> None:
        desk = urlsplit(url).netloc
        response = await http.get(url)
        for _hop in range(20):
            if response.is_redirect:
                url = urljoin(url, response.headers["location"])
                if url.startswith(self.REDIRECT_URI):
                    self.say("   back to the client, which trades the code for the desk's own token")
                    self._redirects_back.append(url)
                    return
                if urlsplit(url).netloc != desk and urlsplit(str(response.url)).netloc == desk:
                    self.say(f"   at the identity provider ({urlsplit(url).netloc}): alice signs in")
                response = await http.get(url)
                continue
            form = ConsentForm(response.text)
            if response.status_code != 200 or form.action is None:
                break
            self.consent_pages += 1
            self.say(f"   the desk's consent page: {form.heading}")
            self.say("   > the person approves")
            url = urljoin(url, form.action)
            response = await http.post(url, data={**form.fields, "decision": "approve"})
        raise RuntimeError(f"the sign-in stopped at HTTP {response.status_code} on {urlsplit(url).path}")

    async def wait_for_callback(self, state: str, timeout: float) -> Any:
        """The callback handler: the redirect back this browser brought."""
        from mcp_resolve.client.auth import AuthorizationResponse

        return AuthorizationResponse.from_url(self._redirects_back.pop(0))


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
