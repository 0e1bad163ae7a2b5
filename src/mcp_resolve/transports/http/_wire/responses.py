"""Answers made before any JSON-RPC is read: the status the Streamable HTTP spec names, with a JSON-RPC
error body that has no id, so a client learns why; none carries internals."""

from __future__ import annotations

from typing import Any

import pydantic_core
from starlette.responses import Response

from ....protocol.jsonrpc import error_message

__all__ = ["json_response", "refusal"]


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        pydantic_core.to_json(body), status_code=status, media_type="application/json", headers=headers
    )


def refusal(status: int, code: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """An HTTP-level rejection, with the JSON-RPC error body (no id) the spec allows."""
    return json_response(status, error_message(None, code, message), headers)
