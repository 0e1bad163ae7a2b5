"""Exceptions an author raises or meets, and the JSON-RPC error codes we answer with.

Two families live here. `ToolError`, the resource errors and `InvalidSignature`
are for authors: a `ToolError` becomes a tool error result the model can read,
a `ResourceError` a JSON-RPC error naming the resource, and an
`InvalidSignature` stops a bad server at registration. `MCPError` is the
protocol's: raising it anywhere below a request handler answers that request
with a JSON-RPC error and nothing else about the connection changes.

The author-facing classes carry the official SDK's names and hierarchy
(`MCPServerError` over `ToolError` and `ResourceError`), so a server's
`except` clauses port unchanged.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from mcp_types import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    ElicitRequestURLParams,
)

__all__ = [
    "unknown_name",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "INVALID_STATE_MESSAGE",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "InvalidRequestState",
    "InvalidSignature",
    "InvalidUriTemplate",
    "MCPError",
    "MCPServerError",
    "MidCallQuestionUnavailable",
    "ResourceError",
    "ResourceNotFoundError",
    "ToolError",
    "UnexpectedResourceError",
    "UnexpectedToolError",
    "UrlElicitationRequiredError",
]

INVALID_STATE_MESSAGE = "Invalid or expired requestState"
"""The one answer to every requestState failure: the reason goes to the log only."""


class MCPServerError(Exception):
    """The base of the errors an author raises (or catches) around tools and resources."""


class ToolError(MCPServerError):
    """Raised by a tool body or a resolver: the call ends with a tool error result.

    The message is shown to the model as `Error executing tool NAME: MESSAGE`,
    so write it for a reader who can act on it.
    """


class UnexpectedToolError(ToolError):
    """A tool crashed (raised something other than `ToolError`, `ResourceError` or `MCPError`).

    Never raised by an author: `mcp.call_tool()` raises it around the crash,
    with the original as `__cause__`, so a test can tell a crash from a
    deliberate `ToolError`. On the wire the model reads only the exception's
    type; its text stays in the server log.
    """


class ResourceError(MCPServerError):
    """A resource read failed in a way its author foresaw.

    Raised from a resource or template function, it answers `resources/read`
    with JSON-RPC error -32603 carrying this message and `data.uri`, logged at
    INFO without a traceback. Raised from a tool (reading a resource of its
    own), it ends the call with a tool error result, like a `ToolError`.
    """


class ResourceNotFoundError(ResourceError):
    """The resource asked for does not exist: the same answer as an unknown URI.

    JSON-RPC error -32602 on 2026-07-28 (-32002 on 2025-11-25 and earlier, as
    that revision asks), with this message and `data.uri`.
    """


class UnexpectedResourceError(ResourceError):
    """A resource function crashed (raised something other than `ResourceError` or `MCPError`).

    Never raised by an author. The client gets -32603 `Error reading resource
    URI` (`Error creating resource from template URI` for a template) and
    nothing of the original, which is this error's `__cause__` and is logged
    with its traceback.
    """


class InvalidSignature(ValueError):
    """A tool, prompt, resource or resolver signature the framework cannot honour.

    Raised at registration, never mid-call, so a bad server fails before any
    client connects. A ValueError, which is what the official SDK raises at
    registration: code catching either keeps working.
    """


class InvalidUriTemplate(InvalidSignature):
    """A resource URI template that is malformed or uses a form that cannot be matched.

    The official SDK's name (a ValueError there too); `template` is the
    template as written, `position` where in it the fault is, when known.
    """

    def __init__(self, message: str, template: str = "", position: int | None = None) -> None:
        super().__init__(message)
        self.template = template
        self.position = position


class InvalidRequestState(Exception):
    """A requestState token failed to unseal or verify.

    The message is for the server log; clients only ever see
    `INVALID_STATE_MESSAGE`.
    """


class MCPError(Exception):
    """A JSON-RPC error answer: raise it from a handler to fail that request."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def invalid_state(cls) -> MCPError:
        return cls(INVALID_PARAMS, INVALID_STATE_MESSAGE)


class MidCallQuestionUnavailable(MCPError, RuntimeError):
    """`ctx.elicit`/`sample`/`list_roots` on a request that cannot ask mid-call (2026-07-28).

    The JSON-RPC error -32600 (Invalid Request) the official server answers
    there, with our advice (declare a resolver) as its message; a RuntimeError,
    because it is a programming mistake.
    """

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_REQUEST, message)


class UrlElicitationRequiredError(MCPError):
    """The request cannot go on until the person has visited one or more URLs (error -32042).

    Raise it from a tool (or a resolver) where the work needs something done
    out of band first, an OAuth consent or a payment: the client shows the
    URLs and may retry once the person is done. The official SDK's class, with
    its code, message and `data.elicitations`.
    """

    def __init__(self, elicitations: list[ElicitRequestURLParams], message: str | None = None) -> None:
        self.elicitations = list(elicitations)
        """The URL elicitations the client must complete."""
        super().__init__(
            URL_ELICITATION_REQUIRED,
            message
            if message is not None
            else f"URL elicitation{'s' if len(elicitations) > 1 else ''} required",
            {
                "elicitations": [
                    e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in elicitations
                ]
            },
        )


def unknown_name(kind: str, name: object, known: Iterable[str]) -> str:
    """`Unknown tool: refnud_order (did you mean 'refund_order'?)`: the error a typo deserves.

    Built only on the error path; the suggestion comes from the registered names alone.
    """
    text = f"Unknown {kind}: {name}"
    if isinstance(name, str):
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
        if close:
            text += f" (did you mean {close[0]!r}?)"
    return text
