"""Input-required rounds: the batch questioner a 2026-07-28 request's resolver engine asks.

A round cannot wait for an answer: every question a call needs is collected,
returned as one `InputRequiredResult`, and the client calls again with the
answers (`inputResponses`) beside the state it was given. What the questioner
asked and what was answered so far travel in that state (a `StateRecord`),
which the sealing step has already verified and opened, so nothing here
trusts the client beyond the answers themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import InputRequiredResult

from ...errors import INVALID_PARAMS, MCPError
from ...resolve.questions import Question
from ...resolve.run import PENDING
from ...resolve.state import StateRecord, question_digest

__all__ = ["MULTI_ROUND_METHODS", "BatchQuestioner", "input_responses"]

MULTI_ROUND_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The methods that may answer `input_required` and so carry a requestState from round to round."""


def input_responses(params: dict[str, Any]) -> dict[str, Any]:
    """The round's answers by question key; a malformed map is a protocol error, not a missing answer."""
    if "inputResponses" not in params:
        return {}
    responses = params["inputResponses"]
    if not isinstance(responses, dict) or not all(isinstance(r, dict) for r in responses.values()):
        raise MCPError(
            INVALID_PARAMS, "Invalid params: inputResponses must map each question key to a result object"
        )
    return responses


_NO_RECORD = StateRecord()
"""A first round's record: nothing asked, nothing answered (only ever read)."""


class BatchQuestioner:
    """Answers questions from this round's `inputResponses`, or marks them for the next round.

    An answer counts only for a question this server asked, with exactly that
    wording, in a requestState it sealed: so every answer went through a round
    whose state the replay store of a `single_use` tool can claim. Answers that
    arrive with no requestState (a first round) are ignored and the questions
    asked, unless the server opted into `first_round_answers` (never for a
    `single_use` tool); they are validated before use either way.
    """

    def __init__(self, params: dict[str, Any], *, first_round_answers: bool = False) -> None:
        state = params.get("requestState")
        self.first_round = state is None
        self.record = (
            _NO_RECORD
            if state is None
            else StateRecord.decode(state.encode() if isinstance(state, str) else None)
        )
        self.responses: dict[str, Any] = (
            input_responses(params) if state is not None or first_round_answers else {}
        )
        self.used: dict[str, tuple[str, Any]] = {}
        self.open: dict[str, str] = {}
        """Key -> digest of each question left for the next round (computed once, in `ask`)."""

    async def ask(self, wire_key: str, question: Question) -> Any:
        digest = question_digest(question)
        recorded = self.record.answers.get(wire_key)
        if recorded is not None and recorded[0] == digest:
            self.used[wire_key] = recorded
            return recorded[1]
        asked = self.first_round or self.record.asked.get(wire_key) == digest
        if asked and wire_key in self.responses:
            answer = self.responses[wire_key]
            self.used[wire_key] = (digest, answer)
            return answer
        self.open[wire_key] = digest
        return PENDING

    def carried(self) -> Mapping[str, Any]:
        """What `Resolve(fn, carry=True)` resolvers gave in earlier rounds: only ever from a state this
        server sealed (a first round has none, and a client cannot write one)."""
        return self.record.carried

    def input_required(
        self, pending: dict[str, Question], carried: Mapping[str, Any] | None = None
    ) -> InputRequiredResult:
        asked = {key: self.open.get(key) or question_digest(question) for key, question in pending.items()}
        record = StateRecord(asked=asked, answers=self.used, carried=dict(carried) if carried else {})
        return InputRequiredResult.model_validate(
            {"inputRequests": pending, "requestState": record.encode().decode()}
        )
