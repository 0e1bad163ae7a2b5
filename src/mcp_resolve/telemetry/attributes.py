"""The names telemetry records under, and the bounds on every client value before it is recorded.

Attribute names are the OpenTelemetry semantic conventions' where they have
one, ours under `mcp_resolve.` otherwise. What a client sends (ids, names,
versions, session and task ids) is cut, digested or replaced by `OTHER` here,
so that no span grows without bound, no metric gains an attribute value per
request, and no id that grants access is written down.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pydantic_core
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

METHOD = "mcp.method.name"
REQUEST_ID = "jsonrpc.request.id"
PROTOCOL_VERSION = "mcp.protocol.version"
SESSION_ID = "mcp.session.id"
OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
PROMPT_NAME = "gen_ai.prompt.name"
RESOURCE_URI = "mcp.resource.uri"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
ERROR_TYPE = "error.type"
STATUS_CODE = "rpc.response.status_code"
RESULT_TYPE = "mcp_resolve.result_type"
ROUND = "mcp_resolve.round"
LINK_KIND = "mcp_resolve.link.kind"
RESOLVER_NAME = "mcp_resolve.resolver.name"
RESOLVER_ASKED = "mcp_resolve.resolver.asked"
RESOLVER_OUTCOME = "mcp_resolve.resolver.outcome"
QUESTION_KIND = "mcp_resolve.question.kind"
QUESTION_KEY = "mcp_resolve.question.key"
QUESTION_OUTCOME = "mcp_resolve.question.outcome"
QUESTION_TEXT = "mcp_resolve.question.text"
REJECTION_REASON = "mcp_resolve.rejection.reason"
TASK_ID = "mcp_resolve.task.id"
TASK_REFUSAL_REASON = "mcp_resolve.task.refusal.reason"
TASK_REFUSAL_STAGE = "mcp_resolve.task.refusal.stage"

OTHER = "_OTHER"
"""The conventions' stand-in for a value outside the known set (a method, a question's kind, an id)."""
KNOWN_VERSIONS = frozenset((*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS))
"""Protocol versions recorded as metric attributes; any other is only clipped onto the span."""
MAX_ID, MAX_NAME, MAX_URI, MAX_ARGUMENTS, MAX_QUESTION_TEXT = 128, 128, 256, 4096, 4096
_MAX_TASK_ID = 128


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_text(value: Any) -> str:
    try:
        return pydantic_core.to_json(value, fallback=repr).decode()
    except Exception:
        return repr(value)


def request_id(value: int | str) -> str:
    """The id as the conventions want it, a string; cut, and an absurd integer not even converted."""
    if isinstance(value, int):
        return str(value) if -(10**20) < value < 10**20 else OTHER  # str() of a huge int raises, or crawls
    return clip(value, MAX_ID)


def session_digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def task_digest(task_id: Any) -> str | None:
    """A task id as spans carry it: a digest, since the id itself is all it takes to read or answer the task."""
    if not isinstance(task_id, str) or not task_id or len(task_id) > _MAX_TASK_ID:
        return None
    return session_digest(task_id)


def error_type(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return str(code)  # an MCPError: its JSON-RPC code, as the conventions ask
    return type(exc).__qualname__


def question_text(question: Any) -> str | None:
    """What a question says to the person or the model: an elicitation's message, a sampling request's texts.

    Recorded only when the author opted in (`instrument(record_questions=True)`):
    the server wrote these words, but they often quote what the call is about
    (an order, a name, an amount). Roots requests say nothing; None then.
    """
    params = question.get("params") if isinstance(question, dict) else None
    if not isinstance(params, dict):
        return None
    if question.get("method") == "elicitation/create":
        message = params.get("message")
        return clip(message, MAX_QUESTION_TEXT) if isinstance(message, str) else None
    if question.get("method") != "sampling/createMessage":
        return None
    texts = [params["systemPrompt"]] if isinstance(params.get("systemPrompt"), str) else []
    for message in params.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
    return clip("\n".join(texts), MAX_QUESTION_TEXT) if texts else None
