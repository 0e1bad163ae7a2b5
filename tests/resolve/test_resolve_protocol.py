"""The engine on the wire: 2026-07-28 rounds and state, capability checks, Sample and ListRoots on both eras.

Modern-era tests speak raw JSON-RPC through the in-memory pipe, so they see
exactly which questions each round carries and can forge what a client echoes.
"""

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import pytest
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequestFormParams,
    ListRootsResult,
    TextContent,
)
from pydantic import BaseModel

from mcp_resolve import (
    Client,
    Elicit,
    ListRoots,
    MCPServer,
    RequestStateSecurity,
    Resolve,
    Sample,
    ToolError,
)
from mcp_resolve.errors import MCPError
from mcp_resolve.resolve import ResolverPlan
from mcp_resolve.resolve.questions import render_question
from mcp_resolve.resolve.state import question_digest
from mcp_resolve.tools import Tool
from mcp_resolve.transports.memory import connect_in_memory

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
FORM = {"elicitation": {"form": {}}}


class Note(BaseModel):
    text: str


class Count(BaseModel):
    n: int


class PlainCodec:
    """Seals nothing: the test plays a client that can read and rewrite requestState."""

    def seal(self, data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode()

    def unseal(self, token: str) -> bytes:
        return base64.urlsafe_b64decode(token.encode())


def read_record(token: str) -> dict[str, Any]:
    envelope = json.loads(PlainCodec().unseal(token))
    return json.loads(base64.b64decode(envelope["p"]))  # type: ignore[no-any-return]


def rewrite_record(token: str, record: dict[str, Any]) -> str:
    envelope = json.loads(PlainCodec().unseal(token))
    envelope["p"] = base64.b64encode(json.dumps(record).encode()).decode()
    return PlainCodec().seal(json.dumps(envelope).encode())


class Wire:
    """A raw 2026-07-28 client: one request at a time, results as the server sent them."""

    def __init__(self, pipe: Any, capabilities: dict[str, Any]) -> None:
        self.pipe = pipe
        self.meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: capabilities}
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.pipe.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": {**params, "_meta": self.meta}}
        )
        while True:
            message = await self.pipe.receive()
            if message.get("id") == self.next_id:
                return message  # type: ignore[no-any-return]

    async def call(self, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        message = await self.request("tools/call", {"name": name, "arguments": arguments, **extra})
        return message["result"]  # type: ignore[no-any-return]


@asynccontextmanager
async def wire(server: MCPServer, capabilities: dict[str, Any] | None = None) -> AsyncIterator[Wire]:
    async with connect_in_memory(server) as pipe:
        yield Wire(pipe, FORM if capabilities is None else capabilities)


def only_question(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["resultType"] == "input_required"
    ((key, question),) = result["inputRequests"].items()
    return key, question


def plans_by_name(server: MCPServer, tool_name: str) -> dict[str, ResolverPlan]:
    """The resolver plans of one tool, by resolver function name: to know each question's wire key."""
    (tool,) = [c for c in server.components() if isinstance(c, Tool) and c.name == tool_name]
    return {plan.fn.__name__: plan for plan in tool.signature.plans().values()}


def tool_text(result: dict[str, Any]) -> str:
    assert result["resultType"] == "complete"
    (block,) = result["content"]
    return str(block["text"])


# -- questions whose wording changes, extra and missing answers -------------------------------


def wording_server() -> tuple[MCPServer, list[str]]:
    server = MCPServer("wording")
    wording = ["How many?"]

    async def ask_count() -> Elicit[Count]:
        return Elicit(wording[0], Count)

    @server.tool()
    async def count(n: Annotated[Count, Resolve(ask_count)]) -> str:
        return f"n={n.n}"

    return server, wording


async def test_an_answer_to_a_question_whose_wording_changed_is_re_asked() -> None:
    server, wording = wording_server()
    async with wire(server) as client:
        first = await client.call("count", {})
        key, question = only_question(first)
        assert question["params"]["message"] == "How many?"
        wording[0] = "How many, now that things changed?"
        answer = {key: {"action": "accept", "content": {"n": 1}}}
        second = await client.call("count", {}, inputResponses=answer, requestState=first["requestState"])
        again_key, again = only_question(second)
        assert again_key == key
        assert again["params"]["message"] == "How many, now that things changed?"
        answer = {key: {"action": "accept", "content": {"n": 2}}}
        third = await client.call("count", {}, inputResponses=answer, requestState=second["requestState"])
    assert tool_text(third) == "n=2"


async def test_extra_unknown_input_responses_are_ignored() -> None:
    server, _wording = wording_server()
    async with wire(server) as client:
        first = await client.call("count", {})
        key, _question = only_question(first)
        responses = {
            key: {"action": "accept", "content": {"n": 3}},
            "nobody:asked": {"action": "accept", "content": {"n": 4}},
            "another_unexpected": {"roots": []},
        }
        second = await client.call("count", {}, inputResponses=responses, requestState=first["requestState"])
    assert tool_text(second) == "n=3"


async def test_a_missing_answer_re_asks_instead_of_failing() -> None:
    server, _wording = wording_server()
    async with wire(server) as client:
        first = await client.call("count", {})
        key, question = only_question(first)
        second = await client.call("count", {}, requestState=first["requestState"])
        assert only_question(second) == (key, question)
        answer = {key: {"action": "accept", "content": {"n": 5}}}
        third = await client.call("count", {}, inputResponses=answer, requestState=second["requestState"])
    assert tool_text(third) == "n=5"


async def test_an_accepted_answer_that_fails_the_schema_is_a_tool_error_naming_the_resolver() -> None:
    server, _wording = wording_server()
    async with wire(server) as client:
        first = await client.call("count", {})
        key, _question = only_question(first)
        bad = {key: {"action": "accept", "content": {"n": "many"}}}
        second = await client.call("count", {}, inputResponses=bad, requestState=first["requestState"])
    assert second["isError"] is True
    text = tool_text(second)
    assert text.startswith("Error executing tool count: Resolver ")
    assert ":wording_server.<locals>.ask_count' received an accepted elicitation whose content" in text
    assert "does not match the requested schema" in text  # the official wording
    assert "n:" in text


async def test_a_non_conforming_answer_on_the_handshake_era_is_a_tool_error_naming_the_resolver() -> None:
    server, _wording = wording_server()

    async def answer(_params: ElicitRequestFormParams) -> dict[str, Any]:
        return {"action": "accept", "content": {"n": "many"}}

    async with Client(server, mode="legacy", elicitation_handler=answer) as client:
        result = await client.call_tool("count", {})
        assert result.is_error is True
        text = result.content[0].text  # type: ignore[union-attr]
        assert "ask_count' received an accepted elicitation whose content does not match" in text
        assert (await client.call_tool("count", {})).is_error is True  # the connection keeps serving


# -- what the client echoes in requestState -----------------------------------------------------


class Stock(BaseModel):
    copies: int


class Backorder(BaseModel):
    confirm: bool


def forgery_server() -> MCPServer:
    """`price` and (for Dune) `confirm_backorder` compute their own values; `ask_note` always asks."""
    server = MCPServer("forgery", request_state_security=RequestStateSecurity(codec=PlainCodec()))

    async def price(title: str) -> int:
        return 100

    async def confirm_backorder(title: str) -> Backorder | Elicit[Backorder]:
        if title == "Dune":
            return Backorder(confirm=True)
        return Elicit(f"{title!r} is out of stock. Order anyway?", Backorder)

    async def ask_note(title: str) -> Elicit[Note]:
        return Elicit(f"A note for {title}?", Note)

    @server.tool()
    async def order(
        title: str,
        cents: Annotated[int, Resolve(price)],
        backorder: Annotated[Backorder, Resolve(confirm_backorder)],
        note: Annotated[Note, Resolve(ask_note)],
    ) -> str:
        return f"{cents} confirm={backorder.confirm} note={note.text}"

    return server


async def test_forged_state_cannot_replace_a_value_the_resolver_computes() -> None:
    server = forgery_server()
    plans = plans_by_name(server, "order")
    would_ask = render_question(Elicit("'Dune' is out of stock. Order anyway?", Backorder))
    async with wire(server) as client:
        first = await client.call("order", {"title": "Dune"})
        note_key, note_question = only_question(first)
        assert note_key == plans["ask_note"].wire_key
        record = read_record(first["requestState"])
        assert record["asked"] == {note_key: question_digest(note_question)}
        # The forger answers the note through the state (honoured: the resolver asks exactly that), and
        # claims outcomes for two resolvers that compute their own values (ignored: they never ask).
        record["answers"] = {
            note_key: {
                "d": question_digest(note_question),
                "r": {"action": "accept", "content": {"text": "hi"}},
            },
            plans["price"].wire_key: {"d": "0" * 32, "r": 1},
            plans["confirm_backorder"].wire_key: {
                "d": question_digest(would_ask),
                "r": {"action": "decline"},
            },
        }
        forged = await client.call(
            "order", {"title": "Dune"}, requestState=rewrite_record(first["requestState"], record)
        )
    assert tool_text(forged) == "100 confirm=True note=hi"


@pytest.mark.parametrize(
    "payload",
    [b"", b"not json", b"[1, 2]", b'{"v": 99, "answers": {}}', b'{"v": 1, "asked": 7, "answers": {"k": 3}}'],
)
async def test_a_garbage_state_record_is_no_progress_not_an_error(payload: bytes) -> None:
    server = forgery_server()
    async with wire(server) as client:
        first = await client.call("order", {"title": "Dune"})
        envelope = json.loads(PlainCodec().unseal(first["requestState"]))
        envelope["p"] = base64.b64encode(payload).decode()
        garbage = PlainCodec().seal(json.dumps(envelope).encode())
        again = await client.call("order", {"title": "Dune"}, requestState=garbage)
    assert only_question(again) == only_question(first)


# -- missing client capabilities: -32021 on both eras -------------------------------------------


class Pick(BaseModel):
    ok: bool


def capability_server() -> MCPServer:
    server = MCPServer("capabilities")

    async def ask() -> Elicit[Pick]:
        return Elicit("OK?", Pick)

    async def sample() -> Sample:
        return Sample("Say hi")

    async def sample_with_tools() -> Sample:
        return Sample("Use a tool", tools=[{"name": "lookup", "inputSchema": {"type": "object"}}])

    async def roots() -> ListRoots:
        return ListRoots()

    @server.tool()
    async def needs_form(v: Annotated[Pick, Resolve(ask)]) -> str:
        return "form"

    @server.tool()
    async def needs_sampling(v: Annotated[CreateMessageResult, Resolve(sample)]) -> str:
        return "sampling"

    @server.tool()
    async def needs_sampling_tools(
        v: Annotated[CreateMessageResultWithTools, Resolve(sample_with_tools)],
    ) -> str:
        return "tools"

    @server.tool()
    async def needs_roots(v: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        return "roots"

    return server


async def never(_params: Any) -> Any:
    raise AssertionError("a client without the capability must not be asked")


CAPABILITY_CASES = [
    ("needs_form", {}, {"elicitation": {"form": {}}}),
    ("needs_form", {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    ("needs_sampling", {}, {"sampling": {}}),
    ("needs_sampling_tools", {"sampling": {}}, {"sampling": {"tools": {}}}),
    ("needs_roots", {"sampling": {}, "elicitation": {}}, {"roots": {}}),
]


@pytest.mark.parametrize(("tool", "declared", "required"), CAPABILITY_CASES)
async def test_missing_capability_at_2026(
    tool: str, declared: dict[str, Any], required: dict[str, Any]
) -> None:
    async with wire(capability_server(), declared) as client:
        message = await client.request("tools/call", {"name": tool, "arguments": {}})
    assert "result" not in message
    assert message["error"]["code"] == -32021
    assert message["error"]["data"] == {"requiredCapabilities": required}


HANDSHAKE_CLIENTS: dict[str, dict[str, Any]] = {
    "needs_form": {},
    "needs_sampling": {"elicitation_handler": never},
    "needs_sampling_tools": {"sampling_handler": never, "sampling_tools": False},
    "needs_roots": {"elicitation_handler": never, "sampling_handler": never},
}


@pytest.mark.parametrize(
    ("tool", "declared", "required"), [c for c in CAPABILITY_CASES if "url" not in str(c[1])]
)
async def test_missing_capability_on_the_handshake_era(
    tool: str, declared: dict[str, Any], required: dict[str, Any]
) -> None:
    async with Client(capability_server(), mode="legacy", **HANDSHAKE_CLIENTS[tool]) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool(tool, {})
        assert caught.value.code == -32021
        assert caught.value.data == {"requiredCapabilities": required}


# -- Sample and ListRoots on both eras ----------------------------------------------------------


class Sampler:
    def __init__(self) -> None:
        self.asked: list[CreateMessageRequestParams] = []

    async def __call__(self, params: CreateMessageRequestParams) -> dict[str, Any]:
        self.asked.append(params)
        if params.tools:
            return {
                "role": "assistant",
                "model": "test-llm",
                "content": [{"type": "tool_use", "name": "lookup", "id": "call-1", "input": {"q": "dune"}}],
                "stopReason": "toolUse",
            }
        return {"role": "assistant", "model": "test-llm", "content": {"type": "text", "text": "Hello!"}}


def sampling_server() -> MCPServer:
    server = MCPServer("sampling")

    async def greeting(name: str) -> Sample:
        return Sample(f"Greet {name}", max_tokens=50, system_prompt="Be brief", temperature=0.2)

    async def with_tools() -> Sample:
        return Sample(
            "Look it up",
            tools=[
                {"name": "lookup", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}
            ],
            tool_choice={"mode": "required"},
        )

    async def roots() -> ListRoots:
        return ListRoots()

    @server.tool()
    async def greet(name: str, reply: Annotated[CreateMessageResult, Resolve(greeting)]) -> str:
        assert isinstance(reply, CreateMessageResult)
        assert isinstance(reply.content, TextContent)
        return f"{reply.model}: {reply.content.text}"

    @server.tool()
    async def look_up(reply: Annotated[CreateMessageResultWithTools, Resolve(with_tools)]) -> str:
        assert isinstance(reply, CreateMessageResultWithTools)
        (call,) = reply.content  # type: ignore[misc]
        return f"{reply.stop_reason}: {call.name}({call.input})"

    @server.tool()
    async def where(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        assert isinstance(found, ListRootsResult)
        return ", ".join(f"{root.name}={root.uri}" for root in found.roots)

    return server


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_sample_without_tools(mode: str) -> None:
    sampler = Sampler()
    async with Client(sampling_server(), mode=mode, sampling_handler=sampler) as client:
        result = await client.call_tool("greet", {"name": "Ada"})
    assert result.content[0].text == "test-llm: Hello!"  # type: ignore[union-attr]
    (asked,) = sampler.asked
    assert asked.max_tokens == 50 and asked.system_prompt == "Be brief" and asked.temperature == 0.2
    assert asked.messages[0].content.text == "Greet Ada"  # type: ignore[union-attr]
    assert asked.tools is None


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_sample_with_tools(mode: str) -> None:
    sampler = Sampler()
    async with Client(sampling_server(), mode=mode, sampling_handler=sampler, sampling_tools=True) as client:
        result = await client.call_tool("look_up", {})
    assert result.content[0].text == "toolUse: lookup({'q': 'dune'})"  # type: ignore[union-attr]
    (asked,) = sampler.asked
    assert [tool.name for tool in asked.tools or []] == ["lookup"]
    assert asked.tool_choice is not None and asked.tool_choice.mode == "required"


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_list_roots(mode: str) -> None:
    roots = [{"uri": "file:///work/a", "name": "a"}, {"uri": "file:///work/b", "name": "b"}]

    async def current_roots() -> list[Any]:
        from mcp_types import Root

        return [Root.model_validate(r) for r in roots]

    async with Client(sampling_server(), mode=mode, roots=current_roots) as client:
        result = await client.call_tool("where", {})
    assert result.content[0].text == "a=file:///work/a, b=file:///work/b"  # type: ignore[union-attr]


# -- sampled results ride the state ---------------------------------------------------------------


def draft_server() -> MCPServer:
    """A question that depends on a sampled draft: the draft is sampled once, then the person confirms it."""
    server = MCPServer("draft", request_state_security=RequestStateSecurity(codec=PlainCodec()))

    async def draft(topic: str) -> Sample:
        return Sample(f"Draft a line about {topic}")

    async def approve(topic: str, written: Annotated[CreateMessageResult, Resolve(draft)]) -> Elicit[Pick]:
        assert isinstance(written.content, TextContent)
        return Elicit(f"Send {written.content.text!r}?", Pick)

    @server.tool()
    async def post(
        topic: str,
        written: Annotated[CreateMessageResult, Resolve(draft)],
        approved: Annotated[Pick, Resolve(approve)],
    ) -> str:
        assert isinstance(written.content, TextContent)
        return f"posted {written.content.text!r}" if approved.ok else "kept"

    return server


async def test_a_sampled_result_rides_the_state_to_later_rounds() -> None:
    server = draft_server()
    draft_reply = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Dunes shift."}}
    async with wire(server, {"sampling": {}, "elicitation": {"form": {}}}) as client:
        first = await client.call("post", {"topic": "sand"})
        draft_key, draft_question = only_question(first)
        assert draft_question["method"] == "sampling/createMessage"
        second = await client.call(
            "post",
            {"topic": "sand"},
            inputResponses={draft_key: draft_reply},
            requestState=first["requestState"],
        )
        approve_key, approve_question = only_question(second)  # the draft is not asked again
        assert approve_key != draft_key
        assert approve_question["method"] == "elicitation/create"
        assert approve_question["params"]["message"] == "Send 'Dunes shift.'?"
        assert draft_key in read_record(second["requestState"])["answers"]
        third = await client.call(
            "post",
            {"topic": "sand"},
            inputResponses={approve_key: {"action": "accept", "content": {"ok": True}}},
            requestState=second["requestState"],
        )
    assert tool_text(third) == "posted 'Dunes shift.'"


async def test_an_answer_to_a_question_not_yet_asked_is_ignored() -> None:
    """Round 2 volunteers an answer to the question round 2 is about to ask: it is asked anyway."""
    server = draft_server()
    plans = plans_by_name(server, "post")
    draft_reply = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Dunes shift."}}
    volunteered = {
        plans["draft"].wire_key: draft_reply,
        plans["approve"].wire_key: {"action": "accept", "content": {"ok": True}},
    }
    async with wire(server, {"sampling": {}, "elicitation": {"form": {}}}) as client:
        first = await client.call("post", {"topic": "sand"})
        second = await client.call(
            "post", {"topic": "sand"}, inputResponses=volunteered, requestState=first["requestState"]
        )
    assert only_question(second)[0] == plans["approve"].wire_key


async def test_our_client_samples_once_across_rounds_and_asks_once() -> None:
    sampler = Sampler()
    asked: list[str] = []

    async def approve(params: ElicitRequestFormParams) -> dict[str, Any]:
        asked.append(params.message)
        return {"action": "accept", "content": {"ok": True}}

    for mode in (MODERN, "legacy"):
        sampler.asked.clear()
        asked.clear()
        async with Client(
            draft_server(), mode=mode, sampling_handler=sampler, elicitation_handler=approve
        ) as client:
            result = await client.call_tool("post", {"topic": "sand"})
        assert result.content[0].text == "posted 'Hello!'"  # type: ignore[union-attr]
        assert len(sampler.asked) == 1 and asked == ["Send 'Hello!'?"]


# -- failures surface as tool errors, never as crashes --------------------------------------------


class Shipping(BaseModel):
    address: Note  # nested: cannot be a form; unannotated resolvers only find out when asking


def failing_server() -> MCPServer:
    server = MCPServer("failures")

    async def refuses(item: str) -> int:
        raise ToolError(f"no such item {item!r}")

    async def breaks(item: str) -> int:
        raise KeyError("warehouse")

    async def bad_form():  # type: ignore[no-untyped-def]  # unannotated: registration cannot check the form
        return Elicit("Where to?", Shipping)

    async def ask() -> Elicit[Pick]:
        return Elicit("OK?", Pick)

    @server.tool()
    async def refused(item: str, n: Annotated[int, Resolve(refuses)]) -> str:
        return "unreachable"

    @server.tool()
    async def body_refused(item: str) -> str:
        raise ToolError(f"no such item {item!r}")

    @server.tool()
    async def broken(item: str, n: Annotated[int, Resolve(breaks)]) -> str:
        return "unreachable"

    @server.tool()
    async def unrenderable(where: Annotated[Shipping, Resolve(bad_form)]) -> str:
        return "unreachable"

    @server.tool()
    async def asks(ok: Annotated[Pick, Resolve(ask)]) -> str:
        return "unreachable"

    return server


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_resolver_failures_are_tool_errors(mode: str) -> None:
    async def refuses_to_answer(_params: ElicitRequestFormParams) -> dict[str, Any]:
        raise RuntimeError("the form crashed")

    async with Client(failing_server(), mode=mode, elicitation_handler=refuses_to_answer) as client:
        refused = await client.call_tool("refused", {"item": "hat"})
        body_refused = await client.call_tool("body_refused", {"item": "hat"})
        broken = await client.call_tool("broken", {"item": "hat"})
        unrenderable = await client.call_tool("unrenderable", {})
        asks = await client.call_tool("asks", {}) if mode == "legacy" else None
    # A ToolError from a resolver reads exactly like one from the body.
    assert refused.is_error is True and body_refused.is_error is True
    assert refused.content[0].text == "Error executing tool refused: no such item 'hat'"  # type: ignore[union-attr]
    assert body_refused.content[0].text == "Error executing tool body_refused: no such item 'hat'"  # type: ignore[union-attr]
    assert broken.is_error is True
    assert "Traceback" not in broken.content[0].text  # type: ignore[union-attr]
    unrenderable_text = unrenderable.content[0].text  # type: ignore[union-attr]
    assert unrenderable.is_error is True
    assert ":failing_server.<locals>.bad_form asked a question that cannot be rendered" in unrenderable_text
    assert "Shipping.address" in unrenderable_text
    if (
        asks is not None
    ):  # a client that answers a mid-call question with an error: a tool error naming the resolver
        assert asks.is_error is True
        assert "could not answer elicitation/create for resolver" in asks.content[0].text  # type: ignore[union-attr]
        assert ":failing_server.<locals>.ask" in asks.content[0].text  # type: ignore[union-attr]


# -- the official SDK's wording for a bad answer ----------------------------------------------
@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        ({"action": "maybe"}, "received a non-elicitation response"),
        ({"action": "accept"}, "received an accepted elicitation with no content"),
        (
            {"action": "accept", "content": {"n": "many"}},
            "received an accepted elicitation whose content does not match the requested schema",
        ),
    ],
    ids=["not-elicitation", "no-content", "wrong-content"],
)
async def test_a_bad_elicitation_answer_is_worded_as_the_official_sdk_words_it(
    answer: dict[str, Any], phrase: str
) -> None:
    server, _wording = wording_server()
    async with wire(server) as client:
        first = await client.call("count", {})
        key, _question = only_question(first)
        second = await client.call(
            "count", {}, inputResponses={key: answer}, requestState=first["requestState"]
        )
    assert second["isError"] is True
    text = tool_text(second)
    assert text.startswith("Error executing tool count: Resolver '") and phrase in text


async def test_a_sampling_answer_of_the_wrong_shape_is_a_response_of_the_wrong_kind() -> None:
    server = MCPServer("sampler")

    async def ask() -> Sample:
        return Sample("A word?", max_tokens=5)

    @server.tool()
    async def word(said: Annotated[CreateMessageResult, Resolve(ask)]) -> str:
        return "unreachable"

    async with wire(server, {"sampling": {}}) as client:
        first = await client.call("word", {})
        key, _question = only_question(first)
        second = await client.call(
            "word", {}, inputResponses={key: {"role": "assistant"}}, requestState=first["requestState"]
        )
    assert "received a response of the wrong kind" in tool_text(second)


def test_registration_errors_use_the_official_wording() -> None:
    """The phrases the official SDK's own tests match on, raised by ours for the same code."""
    from mcp_types import InputRequiredResult

    from mcp_resolve import InvalidSignature

    async def ask() -> Elicit[Count]:
        return Elicit("How many?", Count)

    server = MCPServer("wording")
    with pytest.raises(InvalidSignature, match=r"combines Resolve\(\.\.\.\) parameters"):

        @server.tool()
        async def mixed(n: Annotated[Count, Resolve(ask)]) -> InputRequiredResult:
            raise NotImplementedError

    with pytest.raises(InvalidSignature, match="wraps `Resolve"):

        @server.tool()
        async def buried(n: Annotated[Count, Resolve(ask)] | None = None) -> str:
            raise NotImplementedError
