"""Turning a question marker into a client request, and a client answer back into a value.

Both eras carry the same request objects (in a mid-call request or inside
`inputRequests`) and the same answers, so this is era-free.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CreateMessageResult, CreateMessageResultWithTools, ListRootsResult
from pydantic import ValidationError

from ..elicitation import form_schema, outcome_from_answer
from .markers import Elicit, ListRoots, QuestionMarker, Sample

__all__ = [
    "Question",
    "capability_name",
    "has_capability",
    "parse_answer",
    "render_question",
    "required_capability",
]

Question = dict[str, Any]
"""A rendered client request: {"method": ..., "params": {...}}."""


def render_question(marker: QuestionMarker) -> Question:
    if isinstance(marker, Elicit):
        return {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": marker.message,
                "requestedSchema": form_schema(marker.schema),
            },
        }
    if isinstance(marker, Sample):
        params: dict[str, Any] = {
            "messages": [
                m.model_dump(by_alias=True, exclude_none=True, mode="json") for m in marker.messages
            ],
            "maxTokens": marker.max_tokens,
        }
        optional = {
            "systemPrompt": marker.system_prompt,
            "includeContext": marker.include_context,
            "temperature": marker.temperature,
            "stopSequences": marker.stop_sequences,
            "metadata": marker.metadata,
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        if marker.model_preferences is not None:
            params["modelPreferences"] = marker.model_preferences.model_dump(
                by_alias=True, exclude_none=True, mode="json"
            )
        if marker.tools:
            params["tools"] = [
                t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in marker.tools
            ]
        if marker.tool_choice is not None:
            params["toolChoice"] = marker.tool_choice.model_dump(
                by_alias=True, exclude_none=True, mode="json"
            )
        return {"method": "sampling/createMessage", "params": params}
    if isinstance(marker, ListRoots):
        return {"method": "roots/list", "params": {}}
    raise TypeError(f"not a question marker: {marker!r}")


def required_capability(marker: QuestionMarker) -> dict[str, Any]:
    """The `ClientCapabilities` fragment a client must have declared for this question."""
    if isinstance(marker, Elicit):
        return {"elicitation": {"form": {}}}
    if isinstance(marker, Sample):
        return {"sampling": {"tools": {}}} if marker.uses_tools else {"sampling": {}}
    return {"roots": {}}


def capability_name(required: dict[str, Any]) -> str:
    """The capability `required` asks for, as a person reads it in an error: "form elicitation", "sampling.tools"."""
    if "elicitation" in required:
        return "form elicitation"
    if "sampling" in required:
        return "sampling.tools" if "tools" in required["sampling"] else "sampling"
    return "roots"


def has_capability(declared: dict[str, Any] | None, required: dict[str, Any]) -> bool:
    """Whether `declared` client capabilities cover `required`.

    An `elicitation: {}` declaration means form support (the spec's default
    for clients written before modes existed).
    """
    declared = declared or {}
    if "elicitation" in required:
        elicitation = declared.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        return not elicitation or "form" in elicitation
    if "sampling" in required:
        sampling = declared.get("sampling")
        if not isinstance(sampling, dict):
            return False
        return "tools" not in required["sampling"] or isinstance(sampling.get("tools"), dict)
    return isinstance(declared.get("roots"), dict)


def parse_answer(marker: QuestionMarker, answer: Any) -> Any:
    """Validate a client's answer; raise ValueError with a readable reason if it does not conform."""
    # The official SDK's wording ("Received a non-elicitation response", "... of the wrong kind").
    if not isinstance(answer, dict):
        kind = "non-elicitation response" if isinstance(marker, Elicit) else "response of the wrong kind"
        raise ValueError(f"Received a {kind} (not an object)")
    try:
        if isinstance(marker, Elicit):
            return outcome_from_answer(marker.schema, answer)
        if isinstance(marker, Sample):
            model = CreateMessageResultWithTools if marker.uses_tools else CreateMessageResult
            return model.model_validate(answer)
        return ListRootsResult.model_validate(answer)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ValueError(f"Received a response of the wrong kind ({where}: {first['msg']})") from None
