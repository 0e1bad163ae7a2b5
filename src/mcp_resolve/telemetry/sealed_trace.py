"""What telemetry seals beside a round's requestState, so the next round of the call can link to the first.

A 2026-07-28 call that asks questions takes several rounds, each its own
request, possibly on another worker. `RequestWatch.carry` returns a short note
that the protocol layer seals with the round's requestState (so a client can
neither read nor forge it); the next round's `state_opened` reads it back. The
note is `{trace_id}{span_id}{flags}/{round}` in lower-case hex, or `-/{round}`
when the first round was not traced: the first round's span context (each
later round links to it) and the number of the round that reads it. Round 0
means unknown, a note that does not parse (a state sealed by an
uninstrumented server) too.
"""

from __future__ import annotations

import re

from opentelemetry.trace import SpanContext, TraceFlags

_NOTE = re.compile(r"(?:([0-9a-f]{32})([0-9a-f]{16})([0-9a-f]{2})|-)/([0-9]{1,4})")
_MAX_ROUND = 9999


def read_note(carried: str | None) -> tuple[SpanContext | None, int]:
    """The first round's span context (None when absent or invalid), and this round's number (0: unknown)."""
    match = _NOTE.fullmatch(carried) if carried is not None else None
    if match is None:  # sealed by a server that was not instrumented: which round, nobody knows
        return None, 0
    trace_id, span_id, flags, round_number = match.groups()
    if trace_id is None:
        return None, int(round_number)
    first = SpanContext(int(trace_id, 16), int(span_id, 16), True, TraceFlags(int(flags, 16)))
    return (first if first.is_valid else None), int(round_number)


def write_note(first: SpanContext, next_round: int) -> str:
    """The note for the next round: the first round's span context, and that next round's number."""
    next_round = min(next_round, _MAX_ROUND)
    if not first.is_valid:  # no tracer (a no-op provider): the round number still counts
        return f"-/{next_round}"
    return f"{first.trace_id:032x}{first.span_id:016x}{int(first.trace_flags):02x}/{next_round}"
