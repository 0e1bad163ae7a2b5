"""Attack suite (issue 22): the question paths, fuzzed with what a client declares and how it answers.

Item 2 of issue 22: a handshake-era HTTP call that failed fast while another
of its questions was on its way answered 500. The question desk
(servers/attack_server.py) combines forms, sampling, roots and failing
resolvers in every order; hypothesis picks the capabilities a client
declares, the tools it calls, what it accepts, and how it answers each
question (properly, declining, with an error, with junk, or by dropping the
stream). Whatever it picks, the server must answer no 5xx, leak and log no
stack trace, and serve a well-behaved client afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import PYTHON
from servers import attack_server
from servers.attack_http import AttackHttp, Tracebacks, serving_with_tracebacks, with_meta
from servers.attack_messages import attack_settings, initialize_params, json_values
from servers.attack_stdio import Respawning, decline, screen

pytestmark = pytest.mark.slow

TOOLS = attack_server.TOOLS
capabilities = st.fixed_dictionaries(
    {},
    optional={
        "elicitation": st.sampled_from([{}, {"form": {}}]),
        "sampling": st.sampled_from([{}, {"tools": {}}]),
        "roots": st.just({}),
    },
)
accepts = st.sampled_from(["application/json, text/event-stream", "text/event-stream", "application/json"])
calls = st.lists(st.tuples(st.sampled_from(TOOLS), st.text(max_size=8), accepts), min_size=1, max_size=3)
"""(tool, its `item` argument, the Accept header) for each call of an example."""
VALID = {
    "elicitation/create": {"action": "accept", "content": {"ok": True}},
    "sampling/createMessage": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "t"}},
    "roots/list": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]},
}
"""A proper answer to each question the desk asks."""
WORST_CASE = {"elicitation": {}}
"""Item 2's client: it can answer a form, not the sampling asked next to it."""


def answers(data: st.DataObject, *, may_drop: bool) -> Any:
    """Answers to the server's questions, each drawn when it is asked; None drops the stream."""

    def answer(question: dict[str, Any]) -> dict[str, Any] | None:
        kinds = ["valid", "decline", "error", "junk result", "junk error"] + (["drop"] if may_drop else [])
        kind = data.draw(st.sampled_from(kinds), label=f"answer to {question['method']}")
        if kind == "valid":
            return {"result": VALID.get(question["method"], {})}
        if kind == "decline":
            return {"result": {"action": data.draw(st.sampled_from(["decline", "cancel"]))}}
        if kind == "error":
            return {"error": {"code": -32603, "message": "the client broke"}}
        if kind == "junk result":
            return {"result": data.draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3))}
        if kind == "junk error":
            return {"error": data.draw(st.fixed_dictionaries({"code": json_values, "message": json_values}))}
        return None

    return answer


def properly(question: dict[str, Any]) -> dict[str, Any]:
    return {"result": VALID[question["method"]]}


def assert_answered(response: dict[str, Any] | None) -> None:
    """A JSON-RPC response ended the call: a result, or an error with a code and a message."""
    assert response is not None
    if "error" in response:
        assert isinstance(response["error"]["code"], int) and isinstance(response["error"]["message"], str)
    else:
        assert isinstance(response["result"], dict), response


# -- handshake era over HTTP -------------------------------------------------------------------
class HttpDesk:
    """The question desk's ASGI app under uvicorn, a client of it, and the tracebacks it logged."""

    def __init__(self, url: str, tracebacks: Tracebacks) -> None:
        self.client, self.tracebacks = AttackHttp(url), tracebacks

    def assert_serving(self) -> None:
        """A client that declared forms and declines: the branching tool reports the decline."""
        session = self.client.open_session({"elicitation": {}})
        listed = self.client.session_result(session, "tools/list", {})
        assert sorted(tool["name"] for tool in listed["tools"]) == TOOLS
        call = {"name": "branch", "arguments": {"item": "x"}}
        result = self.client.session_result(session, "tools/call", call)
        assert result["content"][0]["text"] == "x: decline", result
        self.client.close_session(session)


@pytest.fixture(scope="module")
def http_desk() -> Iterator[HttpDesk]:
    with serving_with_tracebacks(attack_server.mcp.streamable_http_app()) as (url, tracebacks):
        desk = HttpDesk(url, tracebacks)
        try:
            yield desk
        finally:
            desk.client.close()


@pytest.mark.parametrize("tool", ["ask_and_sample", "sample_and_ask", "ask_roots_and_sample"])
@pytest.mark.parametrize("accept", ["application/json, text/event-stream", "text/event-stream"])
def test_a_missing_capability_next_to_a_question_is_minus_32021(
    http_desk: HttpDesk, tool: str, accept: str
) -> None:
    """Issue 22, item 2: the client can answer the form but not the sampling asked beside it.

    However the two race, the call ends in -32021 naming `sampling` (or
    `roots`, which this client also lacks), the form answered or withdrawn,
    and never in a 500 or -32603.
    """
    http_desk.tracebacks.take()
    session = http_desk.client.open_session(WORST_CASE)
    call = {"name": tool, "arguments": {"item": "x"}}
    response = http_desk.client.session_request(session, "tools/call", call, accept=accept, answer=properly)
    assert response is not None and "error" in response, response
    assert response["error"]["code"] == -32021, response
    required = response["error"]["data"]["requiredCapabilities"]
    assert set(required) <= {"sampling", "roots"} and required, response
    http_desk.client.close_session(session)
    assert http_desk.tracebacks.take() == []


@attack_settings(max_examples=150)
@given(declared=capabilities, batch=calls, data=st.data())
def test_handshake_questions_over_http(
    http_desk: HttpDesk, declared: dict[str, Any], batch: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    """A session that declared some capabilities makes a few calls and answers their questions its way."""
    http_desk.tracebacks.take()
    client = http_desk.client
    session = client.open_session(declared)
    answer = answers(data, may_drop=True)
    for tool, item, accept in batch:
        call = {"name": tool, "arguments": {"item": item}}
        response = client.session_request(session, "tools/call", call, accept=accept, answer=answer)
        if response is not None:
            assert_answered(response)
    client.close_session(session)
    http_desk.assert_serving()
    assert http_desk.tracebacks.take() == []


def modern_answer(data: st.DataObject, method: str) -> Any:
    """One entry of `inputResponses`: proper, declined, junk, or None to leave the question out."""
    kind = data.draw(
        st.sampled_from(["valid", "valid", "decline", "junk", "omit"]), label=f"answer to {method}"
    )
    if kind == "valid":
        return VALID[method]
    if kind == "decline":
        return {"action": "decline"}
    if kind == "junk":
        return data.draw(json_values)
    return None


@attack_settings(max_examples=150)
@given(
    declared=capabilities,
    tool=st.sampled_from(TOOLS),
    item=st.text(max_size=8),
    accept=accepts,
    data=st.data(),
)
def test_modern_rounds_over_http(
    http_desk: HttpDesk, declared: dict[str, Any], tool: str, item: str, accept: str, data: st.DataObject
) -> None:
    """The 2026-07-28 rounds with each question answered, declined, junk or left out, and the state
    echoed, dropped or replaced: every round ends in a result or an error, never a 5xx."""
    http_desk.tracebacks.take()
    params: dict[str, Any] = {"name": tool, "arguments": {"item": item}}
    for _round in range(4):
        response = http_desk.client.modern("tools/call", with_meta(params, declared), accept)
        assert_answered(response)
        result = response.get("result")
        if result is None or result.get("resultType") != "input_required":
            break
        params = {
            **params,
            "requestState": data.draw(st.sampled_from([result["requestState"]] * 3 + [None, "junk"])),
            "inputResponses": {
                key: answer
                for key, request in result["inputRequests"].items()
                if (answer := modern_answer(data, request["method"])) is not None
            },
        }
    assert http_desk.tracebacks.take() == []
    listed = http_desk.client.modern_result("tools/list", with_meta({}))
    assert sorted(tool["name"] for tool in listed["tools"]) == TOOLS


# -- handshake era over stdio ------------------------------------------------------------------
class StdioDesk(Respawning):
    """The question desk as a stdio subprocess; each example initializes it with its own capabilities."""

    def __init__(self, directory: Path) -> None:
        command = [PYTHON, str(Path(attack_server.__file__))]
        super().__init__(command, directory, "questions", lambda peer: None)

    def assert_serving(self) -> None:
        assert "result" in self.peer().request("initialize", initialize_params({"elicitation": {}}))
        listed = self.result("tools/list", {})
        assert sorted(tool["name"] for tool in listed["tools"]) == TOOLS
        result = self.result("tools/call", {"name": "branch", "arguments": {"item": "x"}})
        assert result["content"][0]["text"] == "x: decline", result


@pytest.fixture(scope="module")
def stdio_desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioDesk]:
    desk = StdioDesk(tmp_path_factory.mktemp("attack-questions"))
    try:
        yield desk
    finally:
        desk.close()


@attack_settings(max_examples=150)
@given(declared=capabilities, batch=calls, data=st.data())
def test_handshake_questions_over_stdio(
    stdio_desk: StdioDesk, declared: dict[str, Any], batch: list[tuple[str, str, str]], data: st.DataObject
) -> None:
    """As over HTTP, less the stream to drop: stdio has one pipe, and closing it ends the server."""
    peer = stdio_desk.peer()
    peer.new_stderr()
    assert "result" in peer.request("initialize", initialize_params(declared))
    peer.answer = answers(data, may_drop=False)
    try:
        for tool, item, _accept in batch:
            assert_answered(peer.request("tools/call", {"name": tool, "arguments": {"item": item}}))
    finally:
        peer.answer = decline
    stdio_desk.assert_serving()
    screen(peer.new_stderr(), "the server's stderr")


@pytest.mark.parametrize(
    "error",
    [{"code": None, "message": None}, {"code": "abc", "message": 1}, {"code": [1]}, {"message": "no code"}],
    ids=["null-code", "text-code", "list-code", "no-code"],
)
def test_a_junk_error_answer_is_the_clients_failure_not_the_servers(
    stdio_desk: StdioDesk, error: dict[str, Any]
) -> None:
    """A client answering a question with an error object whose code is not an integer.

    That is the client failing to answer, like any other error it sends: the
    call ends in the tool error naming the question and the resolver, and
    the log gets a line, not an "unexpected error" and a stack trace.
    """
    peer = stdio_desk.peer()
    assert "result" in peer.request("initialize", initialize_params({"elicitation": {}}))
    peer.new_stderr()
    peer.answer = lambda question: {"error": error}
    try:
        result = stdio_desk.result("tools/call", {"name": "branch", "arguments": {"item": "x"}})
    finally:
        peer.answer = decline
    assert result["isError"] is True
    assert "could not answer elicitation/create for resolver" in result["content"][0]["text"], result
    screen(peer.new_stderr(), "the server's stderr")
