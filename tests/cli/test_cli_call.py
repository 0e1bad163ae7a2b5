"""`mcp-resolve list` and `call` through a pseudo-terminal, against the refund desk over stdio and HTTP.

A person (pexpect) answers the desk's questions as they appear: the scope of a multi-item order,
then whether to restock. Declining, cancelling, a wrong answer asked again and Ctrl-C are each
played on both protocol eras. The HTTP desk runs in this process with uvicorn on loopback; the
stdio desk is the child `mcp-resolve call FILE` starts itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from conftest import REFUND_DESK, SERVERS, load_module
from http_helpers import serving
from mcp_resolve.cli._call import parse_arguments
from mcp_resolve.cli._connect import token_cache
from mcp_resolve.cli._target import CLIError
from mcp_resolve.cli._terminal import parse_value

ERAS = ["2026-07-28", "legacy"]
PROMPT = r"\[a\]ccept, \[d\]ecline or \[c\]ancel\? \[a\] "


@pytest.fixture(scope="module")
def desk_url() -> Iterator[str]:
    desk = load_module(REFUND_DESK)
    with serving(desk.mcp.streamable_http_app()) as base:
        yield f"{base}/mcp"


def spawn(*argv: str) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(sys.path)}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mcp_resolve", *argv],
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 200),
    )
    return child


def finish(child: pexpect.spawn) -> tuple[str, int]:
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    assert child.exitstatus is not None, "killed by a signal rather than exiting"
    return output, child.exitstatus


def plain(output: str) -> str:
    """What the command printed, without the terminal's styling."""
    return re.sub(r"\x1b\[[0-9;]*m", "", output)


def result_of(output: str) -> dict:
    """The JSON the command printed."""
    text = plain(output)
    return json.loads(text[text.index("{") : text.rindex("}") + 1])


def server_for(transport: str, request: pytest.FixtureRequest) -> str:
    return str(REFUND_DESK) if transport == "stdio" else request.getfixturevalue("desk_url")


TRANSPORTS = ["stdio", "http"]


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_call_answers_the_desks_questions_and_asks_again_on_a_wrong_answer(
    transport: str, era: str, request: pytest.FixtureRequest
) -> None:
    child = spawn(
        "call", server_for(transport, request), "refund_order", "order_id=ORD-7002", "reason=too small",
        "--protocol", era,
    )  # fmt: skip
    child.expect("Refund the whole order\\?")
    child.expect(PROMPT)
    child.sendline("x")  # not a, d or c
    child.expect("type a, d or c")
    child.expect(PROMPT)
    child.sendline("")  # the default: accept
    child.expect(r"full \(y/n\): ")
    child.sendline("")  # required, no default
    child.expect("required")
    child.sendline("perhaps")
    child.expect("answer y or n: try again")
    child.sendline("n")
    child.expect(r'sku \(string, default ""\): ')
    child.sendline("wool-socks")
    child.expect("Restock wool-socks\\?")
    child.expect(PROMPT)
    child.sendline("a")
    child.expect(r"restock \(y/n\): ")
    child.sendline("y")
    output, status = finish(child)
    assert status == 0, output
    assert result_of(output) == {
        "order_id": "ORD-7002",
        "reason": "too small",
        "cents": 2400,
        "restocked": True,
    }


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_declining_the_scope_aborts_the_refund(
    transport: str, era: str, request: pytest.FixtureRequest
) -> None:
    child = spawn(
        "call",
        server_for(transport, request),
        "refund_order",
        "order_id=ORD-7002",
        "reason=x",
        "--protocol",
        era,
    )
    child.expect(PROMPT)
    child.sendline("d")
    output, status = finish(child)
    assert status == 1
    assert "refund_order failed" in output and "elicitation was decline" in output
    assert "Traceback" not in output


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_cancelling_the_restock_question_still_refunds(
    transport: str, era: str, request: pytest.FixtureRequest
) -> None:
    child = spawn(
        "call",
        server_for(transport, request),
        "refund_order",
        "order_id=ORD-7002",
        "reason=x",
        "--protocol",
        era,
    )
    child.expect(PROMPT)
    child.sendline("a")
    child.expect(r"full \(y/n\): ")
    child.sendline("y")
    child.expect("sku")
    child.sendline("")
    child.expect("Restock trail-boots, wool-socks\\?")
    child.expect(PROMPT)
    child.sendline("c")
    output, status = finish(child)
    assert status == 0, output
    assert result_of(output) == {"order_id": "ORD-7002", "reason": "x", "cents": 4800, "restocked": False}


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ctrl_c_at_a_question_exits_cleanly(transport: str, era: str, request: pytest.FixtureRequest) -> None:
    child = spawn(
        "call",
        server_for(transport, request),
        "refund_order",
        "order_id=ORD-7002",
        "reason=x",
        "--protocol",
        era,
    )
    child.expect(PROMPT)
    child.sendintr()
    output, status = finish(child)
    assert status == 130
    assert "interrupted" in output and "Traceback" not in output


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_amount_cannot_be_inflated_from_the_shell(transport: str, request: pytest.FixtureRequest) -> None:
    child = spawn(
        "call",
        server_for(transport, request),
        "refund_order",
        "order_id=ORD-7001",
        "reason=x",
        "cents=100000",
    )
    output, status = finish(child)
    assert status == 0, output
    assert "has no parameter 'cents' (it takes order_id, reason); sent anyway" in output
    assert result_of(output)["cents"] == 999


@pytest.mark.slow
def test_values_are_parsed_against_the_input_schema(request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("desk_url")
    child = spawn("call", url, "restock", "order_id=ORD-7002", "on=maybe")
    output, status = finish(child)
    assert status == 1 and "on=maybe: expected boolean" in output

    child = spawn("call", url, "restock", "order_id=ORD-7002", "on=yes", "--json")
    output, status = finish(child)
    assert status == 0, output
    result = result_of(output)
    assert result["isError"] is False
    assert sorted(result["structuredContent"]["in_stock"]) == ["trail-boots", "wool-socks"]


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_list_marks_the_resolved_parameters_of_a_server_file(era: str) -> None:
    output, status = finish(spawn("list", str(REFUND_DESK), "--protocol", era))
    assert status == 0, output
    lines = [line.rstrip() for line in plain(output).splitlines()]
    tool = lines.index("  refund_order(order_id: string, reason: string)")
    assert lines[tool + 2] == "    resolved by the server, not the model: cents, restock"
    assert "  ui://refund-desk/receipt.html  receipt_view" in lines


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_list_json_over_http_and_over_a_stdio_command(era: str, request: pytest.FixtureRequest) -> None:
    output, status = finish(spawn("list", request.getfixturevalue("desk_url"), "--json", "--protocol", era))
    assert status == 0, output
    listing = result_of(output)
    tools = {tool["name"]: tool for tool in listing["tools"]}
    assert set(tools["refund_order"]["inputSchema"]["properties"]) == {"order_id", "reason"}
    assert "resolvedParameters" not in tools["refund_order"]  # a URL cannot say
    assert [r["uri"] for r in listing["resources"]] == ["ui://refund-desk/receipt.html"]
    assert listing["server"]["protocolVersion"] == ("2025-11-25" if era == "legacy" else era)

    output, status = finish(
        spawn("list", "--json", "--protocol", era, "--", sys.executable, str(REFUND_DESK))
    )
    assert status == 0, output
    assert {tool["name"] for tool in result_of(output)["tools"]} == set(tools)


def test_arguments_follow_the_schema() -> None:
    tool = {
        "name": "t",
        "inputSchema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "x": {"type": "number"},
                "flag": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {"type": "object"},
                "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "code": {"type": "string"},
            },
            "required": ["n"],
        },
    }
    words = ["n=3", "x=2.5", "flag=no", 'tags=["a","b"]', 'opts={"k":1}', "maybe=null", "code=007", "extra=5"]
    arguments, notes = parse_arguments(tool, words)
    assert arguments == {
        "n": 3, "x": 2.5, "flag": False, "tags": ["a", "b"], "opts": {"k": 1}, "maybe": None, "code": "007", "extra": 5
    }  # fmt: skip
    assert notes == [
        "note: t has no parameter 'extra' (it takes n, x, flag, tags, opts, maybe, code); sent anyway"
    ]
    with pytest.raises(CLIError, match="n=three: expected integer"):
        parse_arguments(tool, ["n=three"])
    with pytest.raises(CLIError, match=r"t needs n=\.\.\."):
        parse_arguments(tool, ["x=1"])
    with pytest.raises(CLIError, match="opts=\\[1\\]: expected object"):
        parse_arguments(tool, ["n=1", "opts=[1]"])


def test_form_answers_follow_the_schema() -> None:
    assert parse_value("3", {"type": "integer", "minimum": 1}) == 3
    with pytest.raises(ValueError, match="the minimum is 1"):
        parse_value("0", {"type": "integer", "minimum": 1})
    with pytest.raises(ValueError, match="whole number"):
        parse_value("1.5", {"type": "integer"})
    assert parse_value("red", {"type": "string", "enum": ["red", "blue"]}) == "red"
    with pytest.raises(ValueError, match="choose one of red, blue"):
        parse_value("green", {"type": "string", "enum": ["red", "blue"]})
    assert parse_value("b", {"type": "string", "oneOf": [{"const": "a"}, {"const": "b"}]}) == "b"
    assert parse_value("a, b", {"type": "array", "items": {"enum": ["a", "b", "c"]}}) == ["a", "b"]
    with pytest.raises(ValueError, match="at least 3 characters"):
        parse_value("ab", {"type": "string", "minLength": 3})
    with pytest.raises(ValueError, match="e-mail"):
        parse_value("nobody", {"type": "string", "format": "email"})


def test_oauth_tokens_are_cached_per_server(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    one, other = token_cache("https://a.example/mcp"), token_cache("https://b.example/mcp")
    assert one != other and one.parent == other.parent == tmp_path / "mcp-resolve" / "oauth"
    assert token_cache("https://a.example/mcp") == one


CLIENTS_SERVER = str(SERVERS / "clients_server.py")


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_sampling_is_answered_by_typing(era: str) -> None:
    child = spawn("call", CLIENTS_SERVER, "summarize", "topic=rain", "--protocol", era)
    child.expect("the server asks for a completion")
    child.expect("Write a one-line headline about rain.")
    child.expect("your reply, as the model: ")
    child.sendline("Rain, again")
    output, status = finish(child)
    assert status == 0, output
    assert plain(output).splitlines()[-1].strip() == "headline[person-at-terminal]: Rain, again"


@pytest.mark.slow
def test_sampling_is_answered_by_a_pydantic_ai_model() -> None:
    # pydantic-ai's TestModel ("test"): a real model object that answers without a provider.
    output, status = finish(
        spawn("call", CLIENTS_SERVER, "summarize", "topic=rain", "--sampling-model", "test")
    )
    assert status == 0, output
    assert plain(output).splitlines()[-1].strip().startswith("headline[test]: ")


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_roots_come_from_root_options(era: str, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    child = spawn(
        "call",
        CLIENTS_SERVER,
        "workspace",
        "--root",
        str(tmp_path / "a"),
        "--root",
        str(tmp_path),
        "--protocol",
        era,
    )
    output, status = finish(child)
    assert status == 0, output
    text = plain(output)
    assert json.loads(text[text.index("[") :]) == [(tmp_path / "a").as_uri(), tmp_path.as_uri()]


@pytest.mark.slow
def test_list_shows_resources_templates_and_prompts() -> None:
    output, status = finish(spawn("list", CLIENTS_SERVER))
    assert status == 0, output
    lines = [line.rstrip() for line in plain(output).splitlines()]
    assert "  add(a: integer, b: integer)" in lines
    assert "  notes://today  Today's note." in lines
    assert "resource templates (1)" in lines and any(line.startswith("  notes://{day}") for line in lines)
    assert "  review(code)  Ask for a code review." in lines


def test_without_the_cli_extra_list_and_call_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcp_resolve.cli import main

    monkeypatch.setitem(sys.modules, "rich", None)  # as if rich were not installed
    assert main(["call", str(REFUND_DESK), "refund_order", "order_id=ORD-7001", "reason=x"]) == 1
    assert "pip install 'mcp-resolve[cli]'" in capsys.readouterr().err


OPTIONAL_MODEL_SERVER = """
from pydantic import BaseModel
from mcp_resolve import MCPServer
mcp = MCPServer("opt")
class Filter(BaseModel):
    status: str
@mcp.tool()
async def search(flt: Filter | None = None, code: int | str = "x", tags: list[str] | None = None) -> str:
    return f"flt={flt!r} code={code!r} tags={tags!r}"
"""


@pytest.mark.slow
def test_an_optional_model_argument_follows_its_ref(tmp_path: Path) -> None:
    server = tmp_path / "opt_server.py"
    server.write_text(OPTIONAL_MODEL_SERVER)
    child = spawn("call", str(server), "search", 'flt={"status": "open"}', "code=007", 'tags=["a"]')
    output, status = finish(child)
    assert status == 0, output
    assert "flt=Filter(status='open') code='007' tags=['a']" in output
    output, status = finish(spawn("call", str(server), "search", "flt=null", "code=7"))
    assert status == 0, output
    assert "flt=None code=7 tags=None" in output


def test_refs_and_untyped_branches_are_followed() -> None:
    schema = {
        "type": "object",
        "$defs": {"Filter": {"type": "object", "properties": {"status": {"type": "string"}}}},
        "properties": {
            "flt": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
            "loose": {"anyOf": [{}, {"type": "null"}]},
            "missing": {"anyOf": [{"$ref": "#/$defs/Nowhere"}, {"type": "null"}]},
            "code": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        },
    }
    tool = {"name": "t", "inputSchema": schema}
    words = ['flt={"status":"open"}', "loose=plain words", 'missing={"a":1}', "code=007"]
    arguments, _ = parse_arguments(tool, words)
    assert arguments == {
        "flt": {"status": "open"},
        "loose": "plain words",
        "missing": {"a": 1},
        "code": "007",
    }
    assert parse_arguments(tool, ["loose=[1]", "code=12"])[0] == {"loose": [1], "code": 12}
    with pytest.raises(CLIError, match="expected object or null"):
        parse_arguments(tool, ["flt=[1]"])


@pytest.mark.slow
def test_a_server_that_never_answers_times_out_with_a_message() -> None:
    from test_cli import cli

    done = cli("list", "--timeout", "1", "--", sys.executable, "-c", "import time; time.sleep(30)")
    assert done.returncode == 1
    assert "TimeoutError: the server did not answer in time (--timeout" in done.stderr


def test_non_finite_numbers_are_refused() -> None:
    for text in ("nan", "inf", "-Infinity"):
        with pytest.raises(ValueError, match="finite"):
            parse_value(text, {"type": "number", "minimum": 0, "maximum": 10})
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"x": {"type": "number"}}}}
    with pytest.raises(CLIError, match="x=nan: expected number"):
        parse_arguments(tool, ["x=nan"])
    assert parse_value("2.5", {"type": "number", "minimum": 0}) == 2.5
