"""Prompts and resource templates take resolvers exactly as tools do, on both eras."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY, ElicitRequestFormParams
from pydantic import BaseModel

from mcp_resolve import Client, Elicit, ElicitationResult, MCPServer, Resolve
from mcp_resolve.errors import MCPError
from mcp_resolve.transports.memory import connect_in_memory

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]
META = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {"elicitation": {"form": {}}}}


class Tone(BaseModel):
    tone: str


def writing_server() -> tuple[MCPServer, list[str]]:
    server = MCPServer("writing")
    lookups: list[str] = []

    async def style_guide(topic: str) -> str:
        lookups.append(topic)
        return "short sentences"

    async def ask_tone(topic: str) -> Elicit[Tone]:
        return Elicit(f"Which tone for {topic}?", Tone)

    @server.prompt()
    async def write(
        topic: str,
        guide: Annotated[str, Resolve(style_guide)],
        tone: Annotated[Tone, Resolve(ask_tone)],
    ) -> str:
        """Write about a topic."""
        return f"Write about {topic} in a {tone.tone} tone, {guide}."

    @server.prompt()
    async def maybe_write(topic: str, tone: Annotated[ElicitationResult[Tone], Resolve(ask_tone)]) -> str:
        return f"tone: {tone.action}"

    @server.resource("notes://{topic}")
    async def note(topic: str, tone: Annotated[Tone, Resolve(ask_tone)]) -> str:
        return f"{topic} ({tone.tone})"

    return server, lookups


class Person:
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        self.asked.append(params.message)
        return self.answer


DRY = {"action": "accept", "content": {"tone": "dry"}}


@pytest.mark.parametrize("mode", MODES)
async def test_resolved_parameters_are_hidden_from_prompt_arguments_and_template_variables(mode: str) -> None:
    server, _lookups = writing_server()
    async with Client(server, mode=mode) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        templates = (await client.list_resource_templates()).resource_templates
    assert [a.name for a in prompts["write"].arguments or []] == ["topic"]
    assert [a.name for a in prompts["maybe_write"].arguments or []] == ["topic"]
    assert [t.uri_template for t in templates] == ["notes://{topic}"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_prompt_resolves_and_asks(mode: str) -> None:
    server, lookups = writing_server()
    person = Person(DRY)
    async with Client(server, mode=mode, elicitation_handler=person) as client:
        result = await client.get_prompt("write", {"topic": "sand", "guide": "ignored"})
    (message,) = result.messages
    assert message.content.text == "Write about sand in a dry tone, short sentences."  # type: ignore[union-attr]
    assert person.asked == ["Which tone for sand?"]
    # Once per round: mid-call on the handshake era, once in each of the two rounds at 2026-07-28.
    assert lookups == ["sand"] * (1 if mode == "legacy" else 2)


@pytest.mark.parametrize("mode", MODES)
async def test_a_template_resource_resolves_and_asks(mode: str) -> None:
    server, _lookups = writing_server()
    person = Person(DRY)
    async with Client(server, mode=mode, elicitation_handler=person) as client:
        result = await client.read_resource("notes://sand")
    (contents,) = result.contents
    assert contents.text == "sand (dry)"  # type: ignore[union-attr]
    assert person.asked == ["Which tone for sand?"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_declined_question_is_a_readable_error_for_prompts_and_resources(mode: str) -> None:
    server, _lookups = writing_server()
    async with Client(server, mode=mode, elicitation_handler=Person({"action": "decline"})) as client:
        with pytest.raises(MCPError) as prompt_error:
            await client.get_prompt("write", {"topic": "sand"})
        with pytest.raises(MCPError) as resource_error:
            await client.read_resource("notes://sand")
        branched = await client.get_prompt("maybe_write", {"topic": "sand"})
    declined = "Resolver for parameter 'tone' could not resolve: elicitation was decline"
    assert prompt_error.value.code == -32603
    assert prompt_error.value.message == f"Error rendering prompt write: {declined}"
    assert resource_error.value.message == f"Error reading resource notes://sand: {declined}"
    assert branched.messages[0].content.text == "tone: decline"  # type: ignore[union-attr]


@asynccontextmanager
async def raw(server: MCPServer) -> AsyncIterator[Any]:
    async with connect_in_memory(server) as pipe:
        ids = iter(range(1, 100))

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            request_id = next(ids)
            await pipe.send(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
            )
            message = await pipe.receive()
            assert message["id"] == request_id
            return message["result"]  # type: ignore[no-any-return]

        yield request


@pytest.mark.parametrize(
    ("method", "params", "check"),
    [
        (
            "prompts/get",
            {"name": "write", "arguments": {"topic": "sand"}},
            lambda r: (
                r["messages"][0]["content"]["text"] == "Write about sand in a dry tone, short sentences."
            ),
        ),
        ("resources/read", {"uri": "notes://sand"}, lambda r: r["contents"][0]["text"] == "sand (dry)"),
    ],
    ids=["prompts/get", "resources/read"],
)
async def test_input_required_on_prompts_get_and_resources_read_at_2026(
    method: str, params: dict[str, Any], check: Any
) -> None:
    server, _lookups = writing_server()
    async with raw(server) as request:
        first = await request(method, params)
        assert first["resultType"] == "input_required"
        ((key, question),) = first["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "Which tone for sand?"
        second = await request(
            method, {**params, "inputResponses": {key: DRY}, "requestState": first["requestState"]}
        )
    assert second["resultType"] == "complete"
    assert check(second)
