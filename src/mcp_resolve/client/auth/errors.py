"""The one exception the client's authorization raises, and how a server's words get into it.

It has no dependency beyond `MCPError`, so the HTTP transport can catch it
without importing the OAuth machinery (and its optional libraries). What an
authorization server says goes into a message only printable and bounded.
"""

from __future__ import annotations

from typing import Any

from ...errors import INVALID_REQUEST, MCPError

__all__ = ["AuthorizationError", "printable", "refusal"]


class AuthorizationError(MCPError):
    """The client could not obtain (or keep) the right to call a protected server.

    An `MCPError`, so code that already handles protocol errors handles this
    one too; `error` is the OAuth error code when the authorization server
    gave one (`access_denied`, `invalid_grant`, ...), otherwise a short code
    of ours (`metadata_invalid`, `iss_mismatch`, ...). The message never
    contains a token or a secret.
    """

    def __init__(self, error: str, description: str) -> None:
        super().__init__(
            INVALID_REQUEST, f"authorization failed ({error}): {description}", {"authorization": error}
        )
        self.error = error
        self.description = description

    @classmethod
    def from_data(cls, message: str, data: Any) -> AuthorizationError | None:
        """The AuthorizationError a JSON-RPC error stands for, if it is one (the transport's way back)."""
        error = data.get("authorization") if isinstance(data, dict) else None
        if not isinstance(error, str):
            return None
        prefix = f"authorization failed ({error}): "
        return cls(error, message.removeprefix(prefix))


def printable(text: Any, limit: int = 300) -> str:
    """A server-provided string fit for an error message: printable, bounded."""
    value = "".join(c if c.isprintable() else "?" for c in str(text))
    return value if len(value) <= limit else value[:limit] + "..."


def refusal(payload: Any, status: int, default_error: str, endpoint: str) -> AuthorizationError:
    """What an endpoint's refusal stands for: the OAuth `error` it sent, else `default_error` and the status."""
    error = payload.get("error") if isinstance(payload, dict) else None
    description = payload.get("error_description") if isinstance(payload, dict) else None
    return AuthorizationError(
        printable(error or default_error, 80),
        printable(description or f"the {endpoint} endpoint answered HTTP {status}"),
    )
