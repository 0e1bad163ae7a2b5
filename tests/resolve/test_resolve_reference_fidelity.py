"""Issue 29 items 1-4 and 9: where our resolver semantics met the reference module (mcp==2.3.0), now they agree.

Each scenario is built twice from one definition, once with our markers and
server and once with the official SDK's, and driven through the same client
over the same transport (real HTTP on 127.0.0.1, both eras, the official
client; our in-memory Client as well). The outcomes must agree; the wording
only where the seed or the item names the terms a reader greps for.

No `from __future__ import annotations`: the tools are local functions whose
annotations name local resolvers and the marker classes passed in.
"""

import types as pytypes
from collections.abc import Callable
from typing import Annotated, Any, Optional, TypeAlias, Union

import mcp_types as types
import pytest
from mcp.client import Client as OfficialClient
from mcp.server import MCPServer as OfficialServer
from mcp.server.mcpserver import Elicit as OfficialElicit
from mcp.server.mcpserver import ElicitationResult as OfficialElicitationResult
from mcp.server.mcpserver import Resolve as OfficialResolve
from mcp.server.mcpserver.exceptions import InvalidSignature as OfficialInvalidSignature
from mcp.server.mcpserver.resolve import find_resolved_parameters as official_find_resolved_parameters
from mcp.server.mcpserver.resolve import returns_input_required as official_returns_input_required
from mcp_types import InputRequiredResult
from pydantic import BaseModel, create_model
from typing_extensions import TypeAliasType, TypeVar

from http_helpers import http_server
from mcp_resolve import (
    AcceptedElicitation,
    Client,
    Elicit,
    ElicitationResult,
    InvalidSignature,
    MCPServer,
    Resolve,
)
from mcp_resolve.errors import MCPError
from mcp_resolve.resolve import find_resolved_parameters, returns_input_required

pytestmark = pytest.mark.anyio

ERAS = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
MODES = ["2026-07-28", "legacy"]

OURS = pytypes.SimpleNamespace(
    name="ours",
    Server=MCPServer,
    Resolve=Resolve,
    Elicit=Elicit,
    ElicitationResult=ElicitationResult,
    InvalidSignature=InvalidSignature,
)
OFFICIAL = pytypes.SimpleNamespace(
    name="official",
    Server=OfficialServer,
    Resolve=OfficialResolve,
    Elicit=OfficialElicit,
    ElicitationResult=OfficialElicitationResult,
    InvalidSignature=OfficialInvalidSignature,
)
IMPLS = [OURS, OFFICIAL]


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


class Person:
    """Answers form questions by the first script key found in the message, for either client.

    Records every (message, schema) it is shown, so a test can see how many
    times, and with which form, it was asked.
    """

    def __init__(self, script: dict[str, dict[str, Any]]) -> None:
        self.script = script
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def _answer(self, params: types.ElicitRequestParams) -> dict[str, Any]:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append((params.message, params.requested_schema))
        return next(answer for key, answer in self.script.items() if key in params.message)

    async def ours(self, params: types.ElicitRequestFormParams) -> dict[str, Any]:
        return self._answer(params)

    async def official(self, _context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult.model_validate(self._answer(params))


async def call_over_http(
    server: Any, era: tuple[str, str], tool: str, arguments: dict[str, Any], person: Person | None = None
) -> types.CallToolResult:
    """One tools/call from the official client to `server` served by uvicorn (the reference's own client)."""
    mode, version = era
    callback = person.official if person is not None else None
    async with (
        http_server(server.streamable_http_app()) as base,
        OfficialClient(f"{base}/mcp", mode=mode, elicitation_callback=callback) as client,
    ):
        assert client.protocol_version == version
        return await client.call_tool(tool, arguments)


# -- item 1: an InputRequiredResult arm is seen however it is spelled ----------------------------------
T = TypeVar("T")
AliasPEP695 = TypeAliasType("AliasPEP695", str | InputRequiredResult)  # `type AliasPEP695 = ...` on 3.12+
GenericAlias = TypeAliasType("GenericAlias", T | str, type_params=(T,))
AliasOldStyle: TypeAlias = Union[str, InputRequiredResult]
AliasOldStyleString: TypeAlias = "int | InputRequiredResult"
NoArmAlias = TypeAliasType("NoArmAlias", str | int)

SPELLINGS: dict[str, Any] = {
    "Annotated": Annotated[InputRequiredResult, "doc"],
    "X | Y": str | InputRequiredResult,
    "Union": Union[str, InputRequiredResult],
    "Optional": Optional[InputRequiredResult],
    "Annotated union": Annotated[str | InputRequiredResult, "doc"],
    "union of Annotated": Annotated[InputRequiredResult, "doc"] | str,
    "type alias (TypeAliasType)": AliasPEP695,
    "TypeAlias": AliasOldStyle,
    "TypeAlias as a string": AliasOldStyleString,
    "alias in a union": AliasPEP695 | None,
}
NOT_AN_ARM: dict[str, Any] = {
    "plain": str,
    "CallToolResult": types.CallToolResult,
    "alias without the arm": NoArmAlias,
    "Annotated without the arm": Annotated[str | None, "doc"],
}


def returning(annotation: Any) -> Callable[..., Any]:
    def handler() -> None: ...

    handler.__annotations__["return"] = annotation
    return handler


def tool_returning(impl: Any, annotation: Any) -> Callable[..., Any]:
    def looked_up(title: str) -> int:
        return len(title)

    async def hand_rolled(title: str, n: Annotated[int, impl.Resolve(looked_up)]) -> Any:
        return str(n)

    hand_rolled.__annotations__["return"] = annotation
    return hand_rolled


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_returns_input_required_sees_the_arm_in_every_spelling(spelling: str) -> None:
    handler = returning(SPELLINGS[spelling])
    assert returns_input_required(handler) is True
    assert official_returns_input_required(handler) is True


@pytest.mark.parametrize("spelling", list(NOT_AN_ARM))
def test_returns_input_required_is_false_without_the_arm(spelling: str) -> None:
    handler = returning(NOT_AN_ARM[spelling])
    assert returns_input_required(handler) is False
    assert official_returns_input_required(handler) is False


def test_returns_input_required_follows_a_generic_alias_to_its_argument() -> None:
    """`type R[T] = T | str` used as `R[InputRequiredResult]`: the arm is the argument (3.11's alias hides it
    from the reference, which forwards no dunder through a subscripted alias)."""
    assert returns_input_required(returning(GenericAlias[InputRequiredResult])) is True
    assert returns_input_required(returning(GenericAlias[int])) is False
    unevaluable = TypeAliasType("Unevaluable", "NotImportedAnywhere | InputRequiredResult")  # noqa: F821
    assert returns_input_required(returning(unevaluable)) is False  # declares nothing it can read; no crash


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("impl", IMPLS, ids=lambda impl: impl.name)
def test_registration_refuses_resolvers_with_an_input_required_return(impl: Any, spelling: str) -> None:
    server = impl.Server("mixed")
    with pytest.raises(impl.InvalidSignature) as refused:
        server.tool()(tool_returning(impl, SPELLINGS[spelling]))
    if impl is OURS:
        message = str(refused.value)
        assert "InputRequiredResult" in message and "parameter 'n'" in message and "looked_up" in message


def mixed_at_run_time(impl: Any) -> Any:
    """A resolver tool whose body hands back its own InputRequiredResult, with no annotation to warn of it."""
    server = impl.Server("mixed-at-run-time")

    def looked_up(title: str) -> int:
        return len(title)

    @server.tool()
    async def sneaky(title: str, n: Annotated[int, impl.Resolve(looked_up)]):
        return InputRequiredResult(
            input_requests={"mine": types.ElicitRequest(params=_form("Again?"))}, request_state=f"n={n}"
        )

    return server


def _form(message: str) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(
        message=message, requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}
    )


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS, ids=lambda era: era[1])
async def test_a_body_returning_input_required_with_resolvers_is_a_tool_error_over_http(
    era: tuple[str, str],
) -> None:
    person = Person({"": {"action": "accept", "content": {"ok": True}}})
    ours = await call_over_http(mixed_at_run_time(OURS), era, "sneaky", {"title": "abc"}, person)
    official = await call_over_http(mixed_at_run_time(OFFICIAL), era, "sneaky", {"title": "abc"}, person)
    assert ours.is_error is True and official.is_error is True
    assert person.asked == []  # neither client was sent the body's question, round after round
    message = text_of(ours)
    assert message.startswith("Error executing tool sneaky: ")
    assert "InputRequiredResult" in message and "parameter 'n'" in message and "looked_up" in message


@pytest.mark.parametrize("mode", MODES)
async def test_a_body_returning_input_required_with_resolvers_is_a_tool_error_in_memory(mode: str) -> None:
    async with Client(mixed_at_run_time(OURS), mode=mode) as client:
        result = await client.call_tool("sneaky", {"title": "abc"})
    assert result.is_error is True
    assert "the body returned one" in text_of(result)


@pytest.mark.parametrize("mode", MODES)
async def test_a_prompt_or_template_returning_input_required_with_resolvers_fails_too(mode: str) -> None:
    """Prompts and resource templates share the tools' resolver run, so the same mixed flow is refused."""
    server = MCPServer("mixed-elsewhere")

    def looked_up(topic: str) -> int:
        return len(topic)

    @server.prompt()
    async def brief(topic: str, n: Annotated[int, Resolve(looked_up)]):
        return InputRequiredResult(input_requests={"mine": types.ElicitRequest(params=_form("Again?"))})

    @server.resource("notes://{topic}")
    async def note(topic: str, n: Annotated[int, Resolve(looked_up)]):
        return InputRequiredResult(input_requests={"mine": types.ElicitRequest(params=_form("Again?"))})

    async with Client(server, mode=mode) as client:
        with pytest.raises(MCPError) as prompt_error:
            await client.get_prompt("brief", {"topic": "sand"})
        with pytest.raises(MCPError) as resource_error:
            await client.read_resource("notes://sand")
    for error in (prompt_error.value, resource_error.value):
        assert "InputRequiredResult" in str(error) and "parameter 'n'" in str(error)


async def test_a_body_without_resolvers_still_drives_its_own_rounds() -> None:
    """The check is only for the mixed flow: a hand-rolled InputRequiredResult flow alone is left alone."""
    server = MCPServer("own-rounds")

    @server.tool()
    async def own(title: str) -> str | InputRequiredResult:
        return InputRequiredResult(input_requests={"mine": types.ElicitRequest(params=_form(title))})

    async with Client(server, mode="2026-07-28", max_rounds=1) as client:
        raw = await client.request("tools/call", {"name": "own", "arguments": {"title": "Sure?"}})
    assert raw["resultType"] == "input_required" and set(raw["inputRequests"]) == {"mine"}


# -- item 2: Elicit(message, create_model(...)) from a resolver annotated -> Elicit[BaseModel] ------------
class FormBase(BaseModel):
    """An abstract base for forms built at run time."""


def runtime_forms(impl: Any) -> Any:
    """Two questions, the second depending on the first, each with a model built on every run."""
    server = impl.Server("runtime-forms")

    async def ask_name(topic: str) -> impl.Elicit[BaseModel]:
        return impl.Elicit(f"Which {topic}?", create_model("NameForm", name=(str, ...)))

    async def ask_count(
        name: Annotated[BaseModel, impl.Resolve(ask_name)],
    ) -> impl.Elicit[FormBase]:
        form = create_model("CountForm", __base__=FormBase, count=(int, ...))
        return impl.Elicit(f"How many {name.name}?", form)

    @server.tool()
    async def order(
        topic: str,
        name: Annotated[BaseModel, impl.Resolve(ask_name)],
        count: Annotated[FormBase, impl.Resolve(ask_count)],
    ) -> str:
        return (
            f"{type(name).__name__}(name={name.name!r}) "
            f"{type(count).__name__}(count={count.count!r}) base={isinstance(count, FormBase)}"
        )

    return server


ORDERED = "NameForm(name='tulip') CountForm(count=3) base=True"


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS, ids=lambda era: era[1])
@pytest.mark.parametrize("impl", IMPLS, ids=lambda impl: impl.name)
async def test_a_form_built_at_run_time_is_asked_and_validated_over_http(
    impl: Any, era: tuple[str, str]
) -> None:
    person = Person(
        {
            "Which": {"action": "accept", "content": {"name": "tulip"}},
            "How many": {"action": "accept", "content": {"count": 3}},
        }
    )
    result = await call_over_http(runtime_forms(impl), era, "order", {"topic": "flower"}, person)
    assert result.is_error is False, text_of(result)
    assert text_of(result) == ORDERED
    assert [message for message, _schema in person.asked] == ["Which flower?", "How many tulip?"]
    assert person.asked[0][1]["properties"].keys() == {"name"} and person.asked[0][1]["required"] == ["name"]
    assert person.asked[1][1]["properties"]["count"]["type"] == "integer"

    # The answer is validated against the model the resolver builds in the answering round.
    wrong = Person(
        {
            "Which": {"action": "accept", "content": {"name": "tulip"}},
            "How many": {"action": "accept", "content": {"count": "lots"}},
        }
    )
    refused = await call_over_http(runtime_forms(impl), era, "order", {"topic": "flower"}, wrong)
    assert refused.is_error is True


async def test_runtime_form_answers_survive_the_rounds_and_are_revalidated() -> None:
    """2026-07-28, in memory: round 1 asks the name, round 2 takes it and asks the count, round 3 takes both.

    Each round the resolvers build new model classes; the recorded name answer
    (carried in requestState from round 2) is re-read with round 3's model.
    """
    person = Person(
        {
            "Which": {"action": "accept", "content": {"name": "tulip"}},
            "How many": {"action": "accept", "content": {"count": 3}},
        }
    )
    server = runtime_forms(OURS)
    async with Client(server, mode="2026-07-28", elicitation_handler=person.ours) as client:
        first = await client.request("tools/call", {"name": "order", "arguments": {"topic": "flower"}})
        assert first["resultType"] == "input_required"
        ((_key, question),) = first["inputRequests"].items()
        assert question["params"]["requestedSchema"]["properties"].keys() == {"name"}
        result = await client.call_tool("order", {"topic": "flower"})
    assert text_of(result) == ORDERED
    assert [message for message, _schema in person.asked] == ["Which flower?", "How many tulip?"]


async def test_registration_accepts_elicit_of_the_base_class() -> None:
    """Registration used to render `Elicit[BaseModel]`'s schema and crash; both list the tool now."""
    async with Client(runtime_forms(OURS)) as ours, OfficialClient(runtime_forms(OFFICIAL)) as official:
        for client in (ours, official):
            (tool,) = (await client.list_tools()).tools
            assert tool.name == "order" and set(tool.input_schema["properties"]) == {"topic"}


# -- item 3: find_resolved_parameters with an annotation that cannot be evaluated ------------------------
def _plain() -> int:
    return 7


def test_find_resolved_parameters_skips_an_unresolvable_annotation() -> None:
    def tool(
        x: "NotImportedAnywhere",  # noqa: F821
        y: Annotated[int, Resolve(_plain)],
        z: int = Resolve(_plain),
    ) -> None: ...

    def official_tool(
        x: "NotImportedAnywhere",  # noqa: F821
        y: Annotated[int, OfficialResolve(_plain)],
    ) -> None: ...

    found = find_resolved_parameters(tool)  # no InvalidSignature: the readable ones are reported
    assert {name: (marker.fn, wants) for name, (marker, wants) in found.items()} == {
        "y": (_plain, False),
        "z": (_plain, False),
    }
    official = official_find_resolved_parameters(official_tool)  # the reference does not raise either
    assert set(official) <= {"y"}

    # Registration still refuses the handler, with its own message, as the reference does.
    with pytest.raises(InvalidSignature, match="NotImportedAnywhere"):
        MCPServer("unresolvable").tool()(tool)
    with pytest.raises(Exception):  # noqa: B017 - the reference's own exception type for it is its business
        OfficialServer("unresolvable").tool()(official_tool)


def test_find_resolved_parameters_on_a_type_checking_only_import(tmp_path: Any) -> None:
    """The real-world case: `from __future__ import annotations` and a name imported under TYPE_CHECKING."""
    from conftest import load_module

    path = tmp_path / "checking_only.py"
    path.write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING, Annotated\n"
        "from mcp_resolve import Resolve\n"
        "if TYPE_CHECKING:\n"
        "    from decimal import Decimal\n"
        "def rate() -> int:\n"
        "    return 3\n"
        "def tool(amount: Decimal, r: Annotated[int, Resolve(rate)]) -> Decimal: ...\n"
    )
    module = load_module(path)
    found = find_resolved_parameters(module.tool)
    assert list(found) == ["r"] and found["r"][0].fn is module.rate


# -- item 4: a bare ElicitationResult consumer wants the outcome ---------------------------------------
class Confirm(BaseModel):
    ok: bool


def _kind(outcome: Any) -> str:
    """The outcome's class without its type argument (`AcceptedElicitation[Any]` is one of ours)."""
    return type(outcome).__name__.split("[")[0]


def bare_outcomes(impl: Any) -> Any:
    return bare_outcomes_and_tool(impl)[0]


def bare_outcomes_and_tool(impl: Any) -> tuple[Any, Callable[..., Any]]:
    server = impl.Server("bare-outcome")

    async def confirm(item: str) -> impl.Elicit[Confirm]:
        return impl.Elicit(f"Ship {item}?", Confirm)

    def plain(item: str) -> str:
        return item.upper()

    @server.tool()
    async def ship(
        item: str,
        answer: Annotated[impl.ElicitationResult, impl.Resolve(confirm)],
        shout: Annotated[impl.ElicitationResult, impl.Resolve(plain)],
    ) -> str:
        data = answer.data.ok if answer.action == "accept" else None
        return f"{_kind(answer)}:{answer.action}:{data} {_kind(shout)}:{shout.data}"

    return server, ship


def test_find_resolved_parameters_reads_a_bare_elicitation_result_as_the_union() -> None:
    for impl, find in ((OURS, find_resolved_parameters), (OFFICIAL, official_find_resolved_parameters)):
        _server, ship = bare_outcomes_and_tool(impl)
        found = find(ship)
        assert {name: wants for name, (_marker, wants) in found.items()} == {"answer": True, "shout": True}


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS, ids=lambda era: era[1])
@pytest.mark.parametrize("answer", ["accept", "decline", "cancel"])
async def test_a_bare_elicitation_result_gets_the_outcome_over_http(
    era: tuple[str, str], answer: str
) -> None:
    reply = {"action": answer, **({"content": {"ok": True}} if answer == "accept" else {})}
    results = []
    for impl in IMPLS:
        result = await call_over_http(bare_outcomes(impl), era, "ship", {"item": "box"}, Person({"": reply}))
        assert result.is_error is False, text_of(result)
        results.append(text_of(result))
    ours, official = results
    assert ours == official
    expected_data = "True" if answer == "accept" else "None"
    expected_class = {
        "accept": "AcceptedElicitation",
        "decline": "DeclinedElicitation",
        "cancel": "CancelledElicitation",
    }
    assert ours == f"{expected_class[answer]}:{answer}:{expected_data} AcceptedElicitation:BOX"


@pytest.mark.parametrize("mode", MODES)
async def test_a_bare_elicitation_result_gets_the_outcome_in_memory(mode: str) -> None:
    person = Person({"": {"action": "decline"}})
    async with Client(bare_outcomes(OURS), mode=mode, elicitation_handler=person.ours) as client:
        result = await client.call_tool("ship", {"item": "box"})
    assert text_of(result) == "DeclinedElicitation:decline:None AcceptedElicitation:BOX"
    assert issubclass(AcceptedElicitation, BaseModel)


# -- item 9: error texts carry the reference's vocabulary ------------------------------------------------
def _registration_message(impl: Any, build: Callable[[Any], Callable[..., Any]]) -> str:
    with pytest.raises(impl.InvalidSignature) as refused:
        impl.Server("errors").tool()(build(impl))
    return str(refused.value)


def cyclic_tool(impl: Any) -> Callable[..., Any]:
    async def first(v: Annotated[int, impl.Resolve(lambda: 0)]) -> int:
        return v

    async def second(v: Annotated[int, impl.Resolve(first)]) -> int:
        return v

    first.__annotations__["v"] = Annotated[int, impl.Resolve(second)]

    async def looping(value: Annotated[int, impl.Resolve(second)]) -> int:
        return value

    return looping


def unclassifiable_tool(impl: Any) -> Callable[..., Any]:
    async def needs_mystery(mystery: str) -> int:
        return 1

    async def puzzled(title: str, n: Annotated[int, impl.Resolve(needs_mystery)]) -> int:
        return n

    return puzzled


def two_arms_tool(impl: Any) -> Callable[..., Any]:
    async def undecided(title: str) -> Any:
        return impl.Elicit("Sure?", Confirm)

    from mcp.server.mcpserver import Sample as OfficialSample

    from mcp_resolve import Sample

    sample = Sample if impl is OURS else OfficialSample
    undecided.__annotations__["return"] = Union[impl.Elicit[Confirm], sample]

    async def torn(title: str, ok: Annotated[Confirm, impl.Resolve(undecided)]) -> str:
        return "x"

    return torn


def test_registration_errors_use_the_reference_vocabulary() -> None:
    cycle = _registration_message(OURS, cyclic_tool)
    assert "cyclic" in _registration_message(OFFICIAL, cyclic_tool)
    assert "cyclic" in cycle and "parameter 'v'" in cycle and "second" in cycle and "first" in cycle

    unclassified = _registration_message(OURS, unclassifiable_tool)
    official = _registration_message(OFFICIAL, unclassifiable_tool)
    for term in ("'mystery'", "needs_mystery", "cannot be resolved"):
        assert term in unclassified and term in official

    arms = _registration_message(OURS, two_arms_tool)
    assert "multiple" in _registration_message(OFFICIAL, two_arms_tool)
    assert (
        "multiple Elicit/Sample/ListRoots arms" in arms and "undecided" in arms and "parameter 'ok'" in arms
    )


def confirm_server(impl: Any) -> Any:
    server = impl.Server("answers")

    async def ask_ok(item: str) -> impl.Elicit[Confirm]:
        return impl.Elicit(f"Really {item}?", Confirm)

    @server.tool()
    async def settle(item: str, ok: Annotated[Confirm, impl.Resolve(ask_ok)]) -> str:
        return str(ok.ok)

    return server


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS, ids=lambda era: era[1])
@pytest.mark.parametrize(
    ("reply", "term"),
    [
        ({"action": "accept"}, "no content"),
        ({"action": "accept", "content": {"ok": "perhaps"}}, "does not match the requested schema"),
    ],
    ids=["no-content", "wrong-content"],
)
async def test_answer_errors_use_the_reference_vocabulary_over_http(
    era: tuple[str, str], reply: dict[str, Any], term: str
) -> None:
    texts = []
    for impl in IMPLS:
        result = await call_over_http(confirm_server(impl), era, "settle", {"item": "x"}, Person({"": reply}))
        assert result.is_error is True
        texts.append(text_of(result))
    ours, official = texts
    assert term in ours and term in official
    assert "ask_ok" in ours and ours.startswith("Error executing tool settle: Resolver ")


@pytest.mark.parametrize("mode", MODES)
async def test_an_accept_without_content_is_refused_in_memory(mode: str) -> None:
    """Even for a form whose fields are all optional: an accept that carries nothing answered nothing."""
    server = MCPServer("optional-form")

    class Maybe(BaseModel):
        note: str | None = None

    async def ask(item: str) -> Elicit[Maybe]:
        return Elicit(f"Anything about {item}?", Maybe)

    @server.tool()
    async def remark(item: str, maybe: Annotated[Maybe, Resolve(ask)]) -> str:
        return repr(maybe.note)

    person = Person({"": {"action": "accept"}})
    async with Client(server, mode=mode, elicitation_handler=person.ours) as client:
        refused = await client.call_tool("remark", {"item": "x"})
        person.script = {"": {"action": "accept", "content": {}}}
        empty = await client.call_tool("remark", {"item": "x"})
    assert refused.is_error is True and "no content" in text_of(refused)
    assert empty.is_error is False and text_of(empty) == "None"
