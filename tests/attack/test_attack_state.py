"""Attack suite (issue 22): sealed requestState flipped, cut, moved and replayed, with hypothesis choosing how.

test_state_tamper.py checks chosen mutations (a sample of byte flips, the
encoding tricks, each kind of misdirection); here hypothesis picks any bit,
any character, any cut and splice, any other arguments or target, and any
answers sent with a spent single-use state. Every one must get exactly
`-32602 "Invalid or expired requestState"`, run nothing (the server's events
file does not grow), log one line of reason and no traceback, and leave the
server serving the genuine token.

Real stdio processes of tests/servers/state_server.py, one per module.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from servers.attack_messages import attack_settings, json_values
from servers.attack_stdio import screen
from servers.state_wire import FROZEN, StatePeer, accept

KEY = "attack-suite-secret-0123456789abcdefghijklmnopq"
PICK = {"name": "pick", "arguments": {"item": "hat"}}
RED = {"color": "red"}
REFUND = {"name": "refund_order", "arguments": {"order_id": "ORD-7002", "reason": "too small"}}
REJECTED = "rejected requestState on"
REPLAYED = "rejected replayed requestState on"

pytestmark = pytest.mark.slow


def b64decode(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def first_round(peer: StatePeer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result = peer.result(method, params)
    assert result["resultType"] == "input_required", result
    return result


def retry(target: dict[str, Any], result: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    """The next round of `target`: the state `result` sealed, every question answered with `content`."""
    return {
        **target,
        "requestState": result["requestState"],
        "inputResponses": accept(result["inputRequests"], content),
    }


def assert_frozen(peer: StatePeer, method: str, params: dict[str, Any], reason: str = REJECTED) -> None:
    """The frozen error, nothing ran, one line of reason in the log and no traceback."""
    events, log = peer.events(), peer.stderr()
    response = peer.request(method, params)
    assert response.get("error") == FROZEN and "result" not in response, response
    assert peer.events() == events, "a handler or resolver ran on a rejected requestState"
    logged = peer.stderr()[len(log) :]
    assert logged.count(reason) == 1, logged
    screen(logged, "the server's stderr")


# -- tampering and moving --------------------------------------------------------------------------
@dataclass
class Pick:
    """A state server and the round-one tokens of each kind of request it takes."""

    peer: StatePeer
    token: str  # tools/call pick {"item": "hat"}
    keys: list[str]
    tokens: dict[str, tuple[str, dict[str, Any]]]  # by label: (method, request without state)

    def assert_serving(self) -> None:
        params = {**PICK, "requestState": self.token, "inputResponses": accept(self.keys, RED)}
        assert self.peer.result("tools/call", params)["content"][0]["text"] == "hat in red"

    def assert_rejected(self, token: Any, method: str = "tools/call", target: dict[str, Any] = PICK) -> None:
        assert_frozen(
            self.peer, method, {**target, "requestState": token, "inputResponses": accept(self.keys, RED)}
        )
        self.assert_serving()


REQUESTS = {
    "pick": ("tools/call", PICK),
    "other": ("tools/call", {"name": "other", "arguments": {"item": "hat"}}),
    "prompt": ("prompts/get", PICK),
    "resource": ("resources/read", {"uri": "notes://hat"}),
    "manual": ("tools/call", {"name": "manual", "arguments": {"step": "s1"}}),
}


@pytest.fixture(scope="module")
def pick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pick]:
    directory = tmp_path_factory.mktemp("attack-state")
    with StatePeer(directory, "pick", {"MCP_RESOLVE_STATE_KEYS": KEY}) as peer:
        rounds = {label: first_round(peer, *request) for label, request in REQUESTS.items()}
        tokens = {label: (result["requestState"], REQUESTS[label][1]) for label, result in rounds.items()}
        target = Pick(peer, rounds["pick"]["requestState"], list(rounds["pick"]["inputRequests"]), tokens)
        target.assert_serving()
        yield target


@attack_settings(max_examples=300)
@given(data=st.data())
def test_any_bit_flip_is_rejected(pick: Pick, data: st.DataObject) -> None:
    """Any one bit of the sealed bytes flipped: version, key fingerprint, nonce, ciphertext or tag."""
    raw = bytearray(b64decode(pick.token))
    bit = data.draw(st.integers(0, len(raw) * 8 - 1), label="bit")
    raw[bit // 8] ^= 1 << (bit % 8)
    pick.assert_rejected(b64encode(bytes(raw)))


@attack_settings(max_examples=200)
@given(data=st.data())
def test_any_character_change_is_rejected(pick: Pick, data: st.DataObject) -> None:
    """Any character of the token text replaced by any other (in or out of the base64 alphabet)."""
    token = pick.token
    at = data.draw(st.integers(0, len(token) - 1), label="position")
    character = data.draw(st.characters(codec="utf-8") | st.sampled_from("AQgw-_+/=."), label="character")
    assume(character != token[at])
    pick.assert_rejected(token[:at] + character + token[at + 1 :])


@attack_settings(max_examples=200)
@given(data=st.data())
def test_any_cut_or_splice_is_rejected(pick: Pick, data: st.DataObject) -> None:
    """A stretch of the token removed and something else (maybe nothing, maybe itself) put in."""
    token = pick.token
    start = data.draw(st.integers(0, len(token)), label="start")
    end = data.draw(st.integers(start, len(token)), label="end")
    inserted = data.draw(
        st.text(max_size=8) | st.sampled_from(["", token, token[start:end] * 2]), label="inserted"
    )
    forged = token[:start] + inserted + token[end:]
    assume(forged != token)
    pick.assert_rejected(forged)


@attack_settings(max_examples=150)
@given(arguments=st.dictionaries(st.text(max_size=8), json_values, max_size=3) | json_values)
def test_any_other_arguments_are_rejected(pick: Pick, arguments: Any) -> None:
    """The token on the same tool with any other arguments, of any shape (not even an object)."""
    assume(arguments != PICK["arguments"])
    pick.assert_rejected(pick.token, target={"name": "pick", "arguments": arguments})


MOVES = [
    ("tools/call", {"name": "other", "arguments": {"item": "hat"}}),
    ("tools/call", {"name": "manual", "arguments": {"step": "s1"}}),
    ("tools/call", PICK),
    ("prompts/get", PICK),
    ("resources/read", {"uri": "notes://hat"}),
]


@attack_settings(max_examples=100)
@given(whose=st.sampled_from(sorted(REQUESTS)), where=st.sampled_from(MOVES), uri=st.text(max_size=8))
def test_any_token_moved_to_another_request_is_rejected(
    pick: Pick, whose: str, where: tuple[str, dict[str, Any]], uri: str
) -> None:
    """A token presented on any request but its own: another tool, method, prompt or resource URI."""
    token, _own = pick.tokens[whose]
    method, target = where
    if method == "resources/read" and uri:
        target = {"uri": f"notes://{uri}"}
    assume((method, target) != REQUESTS[whose])
    pick.assert_rejected(token, method, target)


def test_every_kind_of_token_is_refused_by_another_server_name(pick: Pick, tmp_path: Path) -> None:
    """Same keys, another name: the audience differs, so no token of the first server opens there."""
    with StatePeer(
        tmp_path, "elsewhere", {"MCP_RESOLVE_STATE_KEYS": KEY, "STATE_SERVER_NAME": "Elsewhere"}
    ) as other:
        for label, (token, target) in pick.tokens.items():
            method = REQUESTS[label][0]
            assert_frozen(
                other, method, {**target, "requestState": token, "inputResponses": accept(pick.keys, RED)}
            )
        assert other.events() == []
        assert other.stderr().count("audience mismatch") == len(pick.tokens)
    pick.assert_serving()


# -- replaying a single-use refund -----------------------------------------------------------------
@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StatePeer]:
    """The refund desk (single_use) in a state-server process, counting refunds in its events file."""
    directory = tmp_path_factory.mktemp("attack-replay")
    env = {"STATE_SERVER_APP": "refund", "MCP_RESOLVE_STATE_KEYS": KEY}
    with StatePeer(directory, "desk", env) as peer:
        yield peer


def refunds(peer: StatePeer) -> int:
    return peer.events().count("refund_order")


def rounds_to_final(peer: StatePeer) -> tuple[dict[str, Any], dict[str, Any]]:
    """Rounds one and two of a full ORD-7002 refund; the params of round two and of round three."""
    round2 = retry(REFUND, first_round(peer, "tools/call", REFUND), {"full": True})
    round3 = retry(REFUND, first_round(peer, "tools/call", round2), {"restock": True})
    return round2, round3


answer_content = st.one_of(
    st.fixed_dictionaries({"full": st.booleans()}, optional={"sku": st.sampled_from(["trail-boots", "x"])}),
    st.fixed_dictionaries({"restock": st.booleans()}),
    st.dictionaries(st.text(max_size=6), json_values, max_size=2),
)


@attack_settings(max_examples=60)
@given(
    replayed=st.sampled_from(["round 2", "round 3"]),
    content=answer_content,
    action=st.sampled_from(["accept", "decline"]),
)
def test_a_spent_refund_state_stays_spent_whatever_is_answered(
    desk: StatePeer, replayed: str, content: dict[str, Any], action: str
) -> None:
    """After the refund completed, either of its states with any answers: frozen, and no second refund."""
    round2, round3 = rounds_to_final(desk)
    before = refunds(desk)
    assert desk.result("tools/call", round3)["structuredContent"]["cents"] == 4800
    assert refunds(desk) == before + 1
    params = round2 if replayed == "round 2" else round3
    answers = {key: {"action": action, "content": content} for key in params["inputResponses"]}
    assert_frozen(desk, "tools/call", {**params, "inputResponses": answers}, REPLAYED)
    assert refunds(desk) == before + 1


@attack_settings(max_examples=20)
@given(content=answer_content)
def test_a_refund_state_is_spent_on_first_use_even_unfinished(
    desk: StatePeer, content: dict[str, Any]
) -> None:
    """Round two's state, used once (the refund not yet done), cannot be used again with other answers."""
    round2, _round3 = rounds_to_final(desk)
    answers = {key: {"action": "accept", "content": content} for key in round2["inputResponses"]}
    assert_frozen(desk, "tools/call", {**round2, "inputResponses": answers}, REPLAYED)


@attack_settings(max_examples=40)
@given(
    order_id=st.sampled_from(["ORD-7001", "ORD-7002", "ORD-9999"]) | st.text(max_size=8),
    reason=st.text(max_size=12),
)
def test_a_refund_state_moved_to_other_arguments_is_rejected(
    desk: StatePeer, order_id: str, reason: str
) -> None:
    """The final state of one refund presented for another order or reason: frozen, no refund."""
    _round2, round3 = rounds_to_final(desk)
    arguments = {"order_id": order_id, "reason": reason}
    assume(arguments != REFUND["arguments"])
    before = refunds(desk)
    assert_frozen(desk, "tools/call", {**round3, "arguments": arguments})
    assert refunds(desk) == before
