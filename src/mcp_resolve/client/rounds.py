"""The 2026-07-28 input-required loop: retry a request with answers until the server gives a final result.

A server that needs something from the client (a form filled, a model's
completion, the roots) answers `resultType: "input_required"` with its
`inputRequests` and an opaque `requestState`. The client answers each
question and sends the same request again with `inputResponses` and that
state, at most `max_rounds` times.
"""

from __future__ import annotations

from typing import Any

from .session import RequestHandler, Send

__all__ = ["run_rounds"]


async def run_rounds(
    send: Send, answer: RequestHandler, method: str, params: dict[str, Any], max_rounds: int
) -> dict[str, Any]:
    """`method` sent with `params` through `send`, retried through input-required rounds to a final result.

    `answer(method, params)` answers each of the server's questions.
    """
    request_params = dict(params)
    for _round in range(max_rounds):
        result = await send(method, request_params)
        if result.get("resultType") != "input_required":
            return result
        input_requests = result.get("inputRequests") or {}
        responses = {
            key: await answer(q.get("method", ""), q.get("params") or {}) for key, q in input_requests.items()
        }
        request_params = dict(params)
        if responses:
            request_params["inputResponses"] = responses
        if result.get("requestState") is not None:
            request_params["requestState"] = result["requestState"]
    raise RuntimeError(f"{method} did not complete within {max_rounds} input-required rounds")
