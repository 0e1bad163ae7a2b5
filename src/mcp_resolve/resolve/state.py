"""The plaintext request-state record that rides between 2026-07-28 rounds.

It holds what was asked: for each question key, the digest of the exact
rendered question and, once answered, the answer; and, only when a resolver
is written `Resolve(fn, carry=True)`, the JSON of its value (`carry.py`). Sealing happens elsewhere;
this module only encodes and decodes, and treats anything it cannot read as
"no progress yet" so a mangled record costs a re-ask, never a crash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

__all__ = ["STATE_VERSION", "StateRecord", "question_digest"]

STATE_VERSION = 1


def question_digest(question: dict[str, Any]) -> str:
    """A digest of the rendered question: the same wording gives the same digest in any process."""
    canonical = pydantic_core.to_json(_sorted(question))
    return hashlib.sha256(canonical).hexdigest()[:32]


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


@dataclass
class StateRecord:
    """Questions asked (key -> digest), answers accepted (key -> (digest, answer)), carried values (key -> JSON)."""

    asked: dict[str, str] = field(default_factory=dict)
    answers: dict[str, tuple[str, Any]] = field(default_factory=dict)
    carried: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> bytes:
        record: dict[str, Any] = {
            "v": STATE_VERSION,
            "asked": self.asked,
            "answers": {key: {"d": digest, "r": answer} for key, (digest, answer) in self.answers.items()},
        }
        if self.carried:  # absent unless something carries: a record without is byte for byte as before
            record["carried"] = self.carried
        return pydantic_core.to_json(record)

    @classmethod
    def decode(cls, data: bytes | None) -> StateRecord:
        if not data:
            return cls()
        try:
            raw = pydantic_core.from_json(data)
        except ValueError:
            return cls()
        if not isinstance(raw, dict) or raw.get("v") != STATE_VERSION:
            return cls()
        record = cls()
        asked = raw.get("asked")
        if isinstance(asked, dict):
            record.asked = {k: v for k, v in asked.items() if isinstance(k, str) and isinstance(v, str)}
        answers = raw.get("answers")
        if isinstance(answers, dict):
            for key, entry in answers.items():
                if isinstance(entry, dict) and isinstance(entry.get("d"), str) and "r" in entry:
                    record.answers[key] = (entry["d"], entry["r"])
        carried = raw.get("carried")
        if isinstance(carried, dict):
            record.carried = carried
        return record
