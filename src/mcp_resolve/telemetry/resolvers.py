"""A span for each resolver a request runs, and one for each question a resolver puts to the client.

A resolver's span is current while the resolver runs, so its own spans nest
under it and concurrent resolvers are overlapping siblings. A question's span
is CLIENT on the handshake era, where the question is a real request to the
client (its `_meta` then carries the span) and lasts as long as the person
takes; INTERNAL on 2026-07-28, where it marks the question going out in an
`input_required` round ("pending") or its answer coming back. An answer the
requestState recorded in an earlier round was counted then, and is not again.
Neither span records an answer, an argument or an exception's text; a question's
own wording (the Elicit message, the Sample prompt) only when the author opted
in with `instrument(record_questions=True)`.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..resolve.run import PENDING
from ..resolve.state import question_digest
from .attributes import (
    ERROR_TYPE,
    METHOD,
    OTHER,
    QUESTION_KEY,
    QUESTION_KIND,
    QUESTION_OUTCOME,
    QUESTION_TEXT,
    RESOLVER_ASKED,
    RESOLVER_NAME,
    RESOLVER_OUTCOME,
    error_type,
    question_text,
)
from .propagation import question_with_context

if TYPE_CHECKING:
    from ..resolve.questions import Question
    from ..resolve.run import Questioner
    from .entry import Telemetry

_QUESTION_KINDS = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
_ELICITATION_ACTIONS = frozenset({"accept", "decline", "cancel"})

_current_resolver: contextvars.ContextVar[ResolverSpan | None] = contextvars.ContextVar(
    "mcp_resolve_current_resolver", default=None
)
"""The resolver whose span is open in this task: its question marks it as having asked."""


class ResolverSpan:
    """One resolver's span, current in the resolver's task while it runs; its duration measured too."""

    __slots__ = ("_reset", "_started", "_token", "asked", "name", "pending", "span", "telemetry")

    def __init__(self, telemetry: Telemetry, name: str) -> None:
        self.telemetry = telemetry
        self.name = name
        self.asked = False
        self.pending = False

    def __enter__(self) -> ResolverSpan:
        self.span = self.telemetry.tracer.start_span(
            f"resolve {self.name}", kind=SpanKind.INTERNAL, attributes={RESOLVER_NAME: self.name}
        )
        self._token = otel_context.attach(trace.set_span_in_context(self.span))
        self._reset = _current_resolver.set(self)
        self._started = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        duration = time.perf_counter() - self._started
        _current_resolver.reset(self._reset)
        otel_context.detach(self._token)
        span = self.span
        if exc is None:
            outcome = "pending" if self.pending else "ok"
        elif isinstance(exc, Exception):
            outcome = "error"
            span.set_attribute(ERROR_TYPE, error_type(exc))
            span.set_status(Status(StatusCode.ERROR))  # the type only: the message may quote arguments
        else:  # cancelled: a sibling earlier in the order failed, or the request was
            outcome = "cancelled"
        span.set_attribute(RESOLVER_ASKED, self.asked)
        span.set_attribute(RESOLVER_OUTCOME, outcome)
        span.end()
        self.telemetry.resolver_duration.record(
            duration, {RESOLVER_NAME: self.name, RESOLVER_OUTCOME: outcome}
        )


class WatchedQuestioner:
    """A request's questioner, with a span and a count for each question put to the client."""

    __slots__ = ("_inner", "_live", "_telemetry")

    def __init__(self, telemetry: Telemetry, inner: Questioner, *, live: bool) -> None:
        self._telemetry = telemetry
        self._inner = inner
        self._live = live

    async def ask(self, wire_key: str, question: Question) -> Any:
        resolver = _current_resolver.get()
        if resolver is not None:
            resolver.asked = True
        if self._answered_earlier(wire_key, question):
            # The answer is in the requestState: a round before this one received it, and counted it.
            return await self._inner.ask(wire_key, question)
        method = question.get("method")
        kind = _QUESTION_KINDS.get(method, OTHER) if isinstance(method, str) else OTHER
        name = method if isinstance(method, str) and kind != OTHER else OTHER
        attributes: dict[str, Any] = {METHOD: name, QUESTION_KIND: kind, QUESTION_KEY: wire_key}
        if self._telemetry.record_questions:
            text = question_text(question)
            if text is not None:
                attributes[QUESTION_TEXT] = text
        span = self._telemetry.tracer.start_span(
            name, kind=SpanKind.CLIENT if self._live else SpanKind.INTERNAL, attributes=attributes
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        outcome = "error"
        try:
            answer = await self._inner.ask(
                wire_key, question_with_context(question) if self._live else question
            )
        except Exception as exc:
            span.set_attribute(ERROR_TYPE, error_type(exc))
            span.set_status(Status(StatusCode.ERROR))
            raise
        except BaseException:
            outcome = "cancelled"
            raise
        else:
            if answer is PENDING:
                outcome = "pending"
                if resolver is not None:
                    resolver.pending = True
            else:
                outcome = _outcome(method, answer)
            return answer
        finally:
            otel_context.detach(token)
            span.set_attribute(QUESTION_OUTCOME, outcome)
            span.end()
            self._telemetry.questions.add(1, {QUESTION_KIND: kind, QUESTION_OUTCOME: outcome})

    def input_required(self, pending: dict[str, Question], carried: Mapping[str, Any] | None = None) -> Any:
        return self._inner.input_required(pending, carried)

    def carried(self) -> Mapping[str, Any]:
        return self._inner.carried()

    def _answered_earlier(self, wire_key: str, question: Question) -> bool:
        """Whether the 2026-07-28 questioner will answer from its requestState record (as it does when the
        recorded answer is for this exact wording): the question was asked and answered rounds ago."""
        record = getattr(self._inner, "record", None)
        recorded = None if record is None else record.answers.get(wire_key)
        return recorded is not None and recorded[0] == question_digest(question)


def _outcome(method: Any, answer: Any) -> str:
    """accept, decline or cancel: an elicitation's action; sampling and roots answers are accepts."""
    if not isinstance(answer, dict):
        return "invalid"
    if method == "elicitation/create":
        action = answer.get("action")
        return action if isinstance(action, str) and action in _ELICITATION_ACTIONS else "invalid"
    return "accept"
