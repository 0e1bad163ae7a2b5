"""`param: T = Resolve(fn)`, the FastAPI `= Depends(fn)` habit, is the same declaration as `Annotated[T, Resolve(fn)]`.

Issue 22 item 6: written as a default, Resolve used to leave the parameter in
the input schema, let a client's value reach the body, and hand the body the
marker object itself when the client sent nothing. Now both spellings are
analysed alike at registration, on tools, prompts, resource templates and
resolvers, and any spelling that could be read two ways is refused there.

Proof goes through the real path: a server file registered with MCPServer,
driven by the in-memory Client, a stdio subprocess, real uvicorn and the
`mcp-resolve` command. No `from __future__ import annotations`: the local
functions' annotations name local resolvers.
"""

import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import pytest
from mcp_types import ElicitRequestFormParams, TextContent, TextResourceContents
from pydantic import BaseModel, Field

from conftest import PYTHON, load_module
from http_helpers import http_server
from mcp_resolve import (
    Client,
    Elicit,
    InvalidSignature,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp_resolve.cli import check, graph_text
from mcp_resolve.resolve import find_resolved_parameters

SERVER = '''
from typing import Annotated

from pydantic import BaseModel

from mcp_resolve import Elicit, ElicitationResult, MCPServer, Resolve

mcp = MCPServer("Due dates")
CALLS = []


def due_date(invoice: str) -> str:
    CALLS.append(invoice)
    return f"{invoice}:2025-07-01"


async def late_fee(due: str = Resolve(due_date)) -> int:  # a resolver's own parameter, default form
    return 25 if due.endswith("07-01") else 0


def office():
    return "Leeds"


class Confirm(BaseModel):
    ok: bool


async def confirm(invoice: str) -> Confirm | Elicit[Confirm]:
    return Elicit(f"Pay {invoice}?", Confirm)


@mcp.tool()
async def pay(invoice: str, due: str = Resolve(due_date), fee: int = Resolve(late_fee), where=Resolve(office)) -> str:
    """Pay an invoice; the due date, the fee and the office are never the model's to choose."""
    return f"{invoice} due {due}, fee {fee}, at {where}"


@mcp.tool()
async def pay_same(invoice: str, due: Annotated[str, Resolve(due_date)] = Resolve(due_date)) -> str:
    """Both spellings naming one resolver: redundant, not ambiguous."""
    return due


@mcp.tool()
async def pay_confirmed(invoice: str, answer: Confirm = Resolve(confirm)) -> str:
    return f"confirmed={answer.ok}"


@mcp.tool()
async def pay_outcome(invoice: str, answer: ElicitationResult[Confirm] = Resolve(confirm)) -> str:
    return f"outcome={answer.action}"


@mcp.prompt()
async def reminder(invoice: str, due: str = Resolve(due_date)) -> str:
    return f"Remind: {invoice} is due {due}"


@mcp.resource("invoices://{invoice}/due")
async def invoice_due(invoice: str, due: str = Resolve(due_date)) -> str:
    return due


@mcp.resource("office://here")
async def here(where: str = Resolve(office)) -> str:
    return where


if __name__ == "__main__":
    mcp.run()
'''

FORGED = {"due": "never", "fee": -1000, "where": "Atlantis", "answer": {"ok": True}}
MODES = ["legacy", "2026-07-28"]


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "due_dates.py"
    path.write_text(SERVER)
    return path


@pytest.fixture
def server_module(server_file: Path) -> ModuleType:
    return load_module(server_file)


def _text(blocks: list[Any]) -> str:
    assert isinstance(blocks[0], TextContent)
    return blocks[0].text


class Person:
    """An elicitation handler that gives one scripted answer and records the questions."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.questions: list[str] = []

    async def __call__(self, params: ElicitRequestFormParams) -> dict[str, Any]:
        self.questions.append(params.message)
        return self.answer


async def _assert_the_guarantee(client: Client) -> None:
    """Hidden from every schema, resolved on every call, never client-settable: the Annotated form's contract."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("pay", "pay_same", "pay_confirmed", "pay_outcome"):
        schema = tools[name].input_schema
        assert schema["properties"].keys() == {"invoice"}, schema
        assert schema["required"] == ["invoice"]

    expected = "INV-1 due INV-1:2025-07-01, fee 25, at Leeds"
    assert _text((await client.call_tool("pay", {"invoice": "INV-1"})).content) == expected
    forged = await client.call_tool("pay", {"invoice": "INV-1", **FORGED})
    assert forged.is_error is False and _text(forged.content) == expected
    same = await client.call_tool("pay_same", {"invoice": "INV-2", "due": "never"})
    assert _text(same.content) == "INV-2:2025-07-01"

    prompts = {prompt.name: prompt for prompt in (await client.list_prompts()).prompts}
    assert [argument.name for argument in prompts["reminder"].arguments or []] == ["invoice"]
    for arguments in ({"invoice": "INV-3"}, {"invoice": "INV-3", "due": "never"}):
        rendered = await client.get_prompt("reminder", arguments)
        content = rendered.messages[0].content
        assert isinstance(content, TextContent) and content.text == "Remind: INV-3 is due INV-3:2025-07-01"

    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["invoices://{invoice}/due"]
    read = await client.read_resource("invoices://INV-4/due")
    assert isinstance(read.contents[0], TextResourceContents)
    assert read.contents[0].text == "INV-4:2025-07-01"
    static = await client.read_resource("office://here")
    assert isinstance(static.contents[0], TextResourceContents) and static.contents[0].text == "Leeds"


async def _assert_questions_follow_the_annotation(target: Any, mode: str) -> None:
    """R5 holds for the default form: the declared type decides unwrapped value or full outcome."""
    yes = Person({"action": "accept", "content": {"ok": True}})
    async with Client(target, mode=mode, elicitation_handler=yes) as client:
        result = await client.call_tool("pay_confirmed", {"invoice": "INV-5", "answer": {"ok": False}})
        assert _text(result.content) == "confirmed=True"
    assert yes.questions == ["Pay INV-5?"]

    no = Person({"action": "decline"})
    async with Client(target, mode=mode, elicitation_handler=no) as client:
        declined = await client.call_tool("pay_confirmed", {"invoice": "INV-6"})
        assert declined.is_error is True
        assert _text(declined.content) == (
            "Error executing tool pay_confirmed: "
            "Resolver for parameter 'answer' could not resolve: elicitation was decline"
        )
        outcome = await client.call_tool("pay_outcome", {"invoice": "INV-6"})
        assert _text(outcome.content) == "outcome=decline"


# -- the public analysis ------------------------------------------------------------------------
def test_find_resolved_parameters_reports_the_default_form_like_the_annotated_one(
    server_module: ModuleType,
) -> None:
    m = server_module
    found = find_resolved_parameters(m.pay)
    assert {name: (marker.fn, union) for name, (marker, union) in found.items()} == {
        "due": (m.due_date, False),
        "fee": (m.late_fee, False),
        "where": (m.office, False),
    }

    async def annotated(
        invoice: str,
        due: Annotated[str, Resolve(m.due_date)],
        fee: Annotated[int, Resolve(m.late_fee)],
        where: Annotated[Any, Resolve(m.office)],
    ) -> None: ...

    as_annotated = find_resolved_parameters(annotated)
    assert {n: (mk.fn, u) for n, (mk, u) in as_annotated.items()} == {
        n: (mk.fn, u) for n, (mk, u) in found.items()
    }
    # the declared type still decides whether the consumer wants the full outcome
    assert find_resolved_parameters(m.pay_outcome)["answer"][1] is True
    assert find_resolved_parameters(m.pay_confirmed)["answer"][1] is False
    assert find_resolved_parameters(m.late_fee)["due"][0].fn is m.due_date


def test_registration_hides_the_parameter_and_plans_its_resolver(server_module: ModuleType) -> None:
    m = server_module
    pay = next(tool for tool in m.mcp.components() if getattr(tool, "name", None) == "pay")
    assert pay.signature.argument_names == ("invoice",)
    assert set(pay.signature.resolved_params) == {"due", "fee", "where"}
    assert set(pay.signature.plans()) == {m.due_date, m.late_fee, m.office}


# -- through the real transports ------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_in_memory_client_cannot_set_a_default_form_parameter(
    server_module: ModuleType, mode: str
) -> None:
    async with Client(server_module.mcp, mode=mode) as client:
        await _assert_the_guarantee(client)
    assert "Atlantis" not in str(server_module.CALLS)
    await _assert_questions_follow_the_annotation(server_module.mcp, mode)


@pytest.mark.anyio
async def test_dependency_overrides_replace_a_default_form_resolver(server_module: ModuleType) -> None:
    server_module.mcp.dependency_overrides[server_module.due_date] = lambda: "tomorrow"
    async with Client(server_module.mcp) as client:
        result = await client.call_tool("pay", {"invoice": "INV-7", "due": "never"})
    assert _text(result.content) == "INV-7 due tomorrow, fee 0, at Leeds"


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_stdio_subprocess_cannot_set_a_default_form_parameter(server_file: Path, mode: str) -> None:
    async with Client(str(server_file), mode=mode) as client:
        await _assert_the_guarantee(client)
    await _assert_questions_follow_the_annotation(str(server_file), mode)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_http_cannot_set_a_default_form_parameter(server_module: ModuleType, mode: str) -> None:
    async with http_server(server_module.mcp.streamable_http_app()) as base:
        async with Client(f"{base}/mcp", mode=mode) as client:
            await _assert_the_guarantee(client)
        await _assert_questions_follow_the_annotation(f"{base}/mcp", mode)


# -- the `mcp-resolve` command --------------------------------------------------------------------
def test_check_and_graph_count_the_default_form_as_resolved(server_module: ModuleType) -> None:
    assert check(server_module.mcp) == (
        "OK Due dates: 4 tools, 1 prompt, 1 resource, 1 template, 4 resolvers"
    )
    drawn = graph_text([c for c in server_module.mcp.components() if getattr(c, "name", "") == "pay"])
    assert drawn.splitlines()[0] == "tool pay(invoice)"
    assert "    due_date -> pay.due" in drawn and "    late_fee -> pay.fee" in drawn
    assert "    due_date -> late_fee.due" in drawn and "    office -> pay.where" in drawn


@pytest.mark.slow
def test_check_command_accepts_the_default_form_and_refuses_an_ambiguous_one(
    server_file: Path, tmp_path: Path
) -> None:
    env = {**os.environ}
    done = subprocess.run(
        [PYTHON, "-m", "mcp_resolve", "check", str(server_file)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK Due dates: 4 tools, 1 prompt, 1 resource, 1 template, 4 resolvers"

    ambiguous = tmp_path / "ambiguous.py"
    ambiguous.write_text(
        textwrap.dedent(
            """
            from typing import Annotated
            from mcp_resolve import MCPServer, Resolve

            mcp = MCPServer("Two ways")

            def first() -> str:
                return "a"

            def second() -> str:
                return "b"

            @mcp.tool()
            async def choose(x: Annotated[str, Resolve(first)] = Resolve(second)) -> str:
                return x
            """
        )
    )
    refused = subprocess.run(
        [PYTHON, "-m", "mcp_resolve", "check", str(ambiguous)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert refused.returncode == 1 and refused.stdout == ""
    message = refused.stderr.strip()
    assert message.startswith("InvalidSignature: ") and "Traceback" not in refused.stderr
    assert "choose" in message and "'x'" in message and "first" in message and "second" in message


# -- ambiguous or misplaced markers fail at registration ------------------------------------------
def first() -> str:
    return "a"


def second() -> str:
    return "b"


class Confirm(BaseModel):
    ok: bool


def _tool(fn: Callable[..., Any]) -> None:
    MCPServer("t").tool()(fn)


def _prompt(fn: Callable[..., Any]) -> None:
    MCPServer("t").prompt()(fn)


def _template(fn: Callable[..., Any]) -> None:
    MCPServer("t").resource("items://{item}")(fn)


def _via_resolver(fn: Callable[..., Any]) -> None:
    """`fn` as a resolver of a tool: its own parameters are analysed the same way."""

    async def consumer(item: str, value: Annotated[Any, Resolve(fn)]) -> str:
        return "unreachable"

    _tool(consumer)


async def two_resolvers(item: str, x: Annotated[str, Resolve(first)] = Resolve(second)) -> str:
    return x


async def two_in_annotation(item: str, x: Annotated[str, Resolve(first), Resolve(second)]) -> str:
    return x


async def elicit_default(item: str, x: Confirm = Elicit("Sure?", Confirm)) -> str:  # type: ignore[assignment]
    return "x"


async def sample_default(item: str, x: str = Sample("Summarise")) -> str:  # type: ignore[assignment]
    return x


async def roots_default(item: str, x: Any = ListRoots()) -> str:
    return "x"


async def class_default(item: str, x: str = Resolve) -> str:  # type: ignore[assignment]
    return x


async def in_list(item: str, x: list[str] = [Resolve(first)]) -> str:  # type: ignore[list-item]  # noqa: B006
    return "x"


async def in_dict(item: str, x: dict[str, Any] = {"k": (Resolve(first),)}) -> str:  # noqa: B006
    return "x"


async def in_field(item: str, x: str = Field(default=Resolve(first))) -> str:
    return x


async def question_in_annotation(item: str, x: Annotated[Confirm, Elicit("Sure?", Confirm)]) -> str:
    return "x"


async def buried_default_type(item: str, x: list[Annotated[str, Resolve(first)]] = Resolve(second)) -> str:  # type: ignore[assignment]
    return "x"


async def variadic(item: str, *rest: Annotated[str, Resolve(first)]) -> str:
    return "x"


AMBIGUOUS = [
    (two_resolvers, "names two resolvers, Resolve("),
    (two_in_annotation, "names 2 resolvers in its annotation"),
    (elicit_default, "has Elicit(...) as its default"),
    (sample_default, "has Sample(...) as its default"),
    (roots_default, "has ListRoots(...) as its default"),
    (class_default, "has Resolve as its default"),
    (in_list, "inside its default (list)"),
    (in_dict, "inside its default (dict)"),
    (in_field, "inside its default (FieldInfo)"),
    (question_in_annotation, "carries Elicit(...) in its annotation"),
    (buried_default_type, "hides Resolve("),
    (variadic, "is variadic"),
]


@pytest.mark.parametrize("register", [_tool, _prompt, _template, _via_resolver])
@pytest.mark.parametrize(("fn", "says"), AMBIGUOUS, ids=[fn.__name__ for fn, _ in AMBIGUOUS])
def test_ambiguous_markers_fail_at_registration_naming_function_and_parameter(
    register: Callable[[Callable[..., Any]], None], fn: Callable[..., Any], says: str
) -> None:
    if register is _via_resolver and fn is variadic:
        says = "is variadic; resolver parameters are filled by name"
    with pytest.raises(InvalidSignature) as raised:
        register(fn)
    message = str(raised.value)
    assert says in message, message
    assert f":{fn.__name__}" in message, message  # the module-qualified function...
    param = "'rest'" if fn is variadic else "'x'"
    assert f"parameter {param}" in message, message  # ...and the parameter
    if fn is two_resolvers:
        assert "Resolve(test_resolve_default_marker:first)" in message
        assert "Resolve(test_resolve_default_marker:second)" in message


def test_a_plain_default_inside_a_container_is_still_a_plain_default() -> None:
    """Only markers are refused: ordinary container and Field defaults stay model-facing arguments."""
    mcp = MCPServer("t")

    @mcp.tool()
    async def tagged(tags: list[str] = ["a"], note: str = Field(default="n")) -> str:  # noqa: B006
        return ",".join(tags) + note

    schema = next(iter(mcp.components())).input_schema  # type: ignore[attr-defined]
    assert schema["properties"].keys() == {"tags", "note"}
