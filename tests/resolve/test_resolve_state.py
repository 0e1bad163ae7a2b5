"""The plaintext request-state record: versioned, digest-pinned, and unable to crash on garbage."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from mcp_resolve import Elicit
from mcp_resolve.resolve.questions import render_question
from mcp_resolve.resolve.state import STATE_VERSION, StateRecord, question_digest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


class Ok(BaseModel):
    ok: bool


@given(st.binary(max_size=200))
def test_any_bytes_decode_to_a_record(data: bytes) -> None:
    assert isinstance(StateRecord.decode(data), StateRecord)


@settings(max_examples=50)
@given(json_values)
def test_any_json_decodes_to_a_record_keeping_only_well_formed_entries(value: object) -> None:
    record = StateRecord.decode(json.dumps(value).encode())
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in record.asked.items())
    assert all(isinstance(digest, str) for digest, _answer in record.answers.values())


def test_deeply_nested_json_is_no_progress() -> None:
    assert StateRecord.decode(b"[" * 100_000 + b"]" * 100_000) == StateRecord()


@settings(max_examples=50)
@given(
    st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=4),
    st.dictionaries(st.text(max_size=10), st.tuples(st.text(max_size=10), json_values), max_size=4),
)
def test_a_record_round_trips(asked: dict[str, str], answers: dict[str, tuple[str, object]]) -> None:
    record = StateRecord(asked=asked, answers=answers)
    assert StateRecord.decode(record.encode()) == record


def test_another_version_is_no_progress() -> None:
    record = StateRecord(asked={"k": "d"}, answers={"k": ("d", {"action": "decline"})})
    raw = json.loads(record.encode())
    assert raw["v"] == STATE_VERSION
    raw["v"] = STATE_VERSION + 1
    assert StateRecord.decode(json.dumps(raw).encode()) == StateRecord()


def test_the_digest_pins_the_exact_wording_and_ignores_key_order() -> None:
    question = render_question(Elicit("Restock trail-boots?", Ok))
    reordered = {"params": dict(reversed(list(question["params"].items()))), "method": question["method"]}
    assert question_digest(question) == question_digest(reordered)
    assert question_digest(question) != question_digest(render_question(Elicit("Restock wool-socks?", Ok)))
