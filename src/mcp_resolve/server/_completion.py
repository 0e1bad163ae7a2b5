"""The `@mcp.completion()` handler, in either of its two forms, told apart once at registration.

The official SDK's form, which a ported server keeps:

    async def complete(ref, argument, context) -> Completion | None

gets the request as the protocol's models: `ref` a `PromptReference` or
`ResourceTemplateReference`, `argument` a `CompletionArgument`, and `context`
the `CompletionContext` (the arguments already filled in) or None.

The earlier form here, kept for the servers written against it, gets `ref`
and `argument` as the request's dicts and the call's `Context` third. A
handler declares it in its annotations: `dict` for `ref` or `argument`, or
`Context` for the third parameter. Any other handler, annotated or not, gets
the models.

Either form may answer with a `Completion`, its dict, a list of strings (the
first 100 sent, with `total` and `hasMore`) or None, which answers
`{"values": []}` as the official does. A handler may be sync or async.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, get_origin, get_type_hints

from mcp_types import CompleteRequestParams
from pydantic import BaseModel, ValidationError

from ..context import Context
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, MCPError

__all__ = ["Completer"]

logger = logging.getLogger("mcp_resolve.completion")

MAX_VALUES = 100
"""The most values one answer may carry (the protocol's limit)."""


class Completer:
    """One registered completion handler, with the form it takes decided when it was registered."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.wants_dicts = _wants_dicts(fn)
        """True for the earlier form: the request's dicts and the Context, rather than the models."""

    async def complete(self, params: dict[str, Any], context: Context) -> dict[str, Any]:
        """The `completion/complete` result for `params`, as a wire dict."""
        try:
            request = CompleteRequestParams.model_validate(params)
        except ValidationError:
            raise MCPError(
                INVALID_PARAMS, "Invalid params: completion/complete needs a valid 'ref' and 'argument'"
            ) from None
        try:
            if self.wants_dicts:
                answer = self.fn(params["ref"], params["argument"], context)
            else:
                answer = self.fn(request.ref, request.argument, request.context)
            if inspect.isawaitable(answer):
                answer = await answer
        except MCPError:
            raise
        except Exception:
            # The official SDK's answer; the exception's text stays in the server log.
            logger.exception("completion for argument %r raised", request.argument.name)
            raise MCPError(INTERNAL_ERROR, f"Error completing argument {request.argument.name}") from None
        return {"completion": _completion(answer)}


def _completion(answer: Any) -> dict[str, Any]:
    if answer is None:
        return {"values": []}
    if isinstance(answer, BaseModel):
        return answer.model_dump(by_alias=True, exclude_none=True, mode="json")
    if isinstance(answer, Mapping):
        return dict(answer)
    values = [str(v) for v in answer]
    return {"values": values[:MAX_VALUES], "total": len(values), "hasMore": len(values) > MAX_VALUES}


def _wants_dicts(fn: Callable[..., Any]) -> bool:
    """Whether `fn`'s annotations ask for the earlier form (dicts and the Context)."""
    try:
        parameters = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    try:
        hints: dict[str, Any] = get_type_hints(fn)
    except Exception:  # a name the annotations use is not importable here: read them as written
        hints = dict(getattr(fn, "__annotations__", {}))
    ref, argument, third = (hints.get(name) for name in [*parameters, "", "", ""][:3])
    return _is_dict(ref) or _is_dict(argument) or _is_context(third)


def _is_dict(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.replace(" ", "").startswith(("dict", "Dict", "Mapping", "typing.Dict"))
    target = get_origin(annotation) or annotation
    return isinstance(target, type) and issubclass(target, Mapping)


def _is_context(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation == "Context" or annotation.startswith("Context[")
    target = get_origin(annotation) or annotation
    return isinstance(target, type) and issubclass(target, Context)
