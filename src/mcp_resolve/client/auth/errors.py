"""The one exception the client's authorization raises.

It has no dependency beyond `MCPError`, so the HTTP transport can catch it
without importing the OAuth machinery (and its optional libraries).
"""

from __future__ import annotations

from typing import Any

from ...errors import INVALID_REQUEST, MCPError

__all__ = ["AuthorizationError"]


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
