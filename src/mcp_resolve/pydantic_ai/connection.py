"""The Client a toolset builds: ours, with a read timeout and a way to end a change stream.

`Client` covers the target, the era, the handlers, headers, `auth=`,
`verify=`, `http_client=`, a stdio `cwd`, `init_timeout=` and a hook for
every notification (`notification_handler`, which the toolset uses to drop
its caches). What pydantic-ai's toolset adds is `read_timeout=`, a bound on
each request's wait (`Client.request` is the one place every request goes
through), and withdrawing a request (to end a `subscriptions/listen`
stream), both through the Client's public API.
"""

from __future__ import annotations

from typing import Any

import anyio

from ..client import Client

__all__ = ["ToolsetClient"]

UNTIMED_METHODS = frozenset({"subscriptions/listen"})
"""Requests that last as long as the connection: `read_timeout` does not apply to them."""


class ToolsetClient(Client):
    """A `Client` whose requests each wait at most `read_timeout` seconds for their answer.

    `read_timeout` bounds each request's wait for its answer (on the
    handshake era that includes a person answering a question asked mid-call;
    on 2026-07-28 each round is a request of its own, so it does not).
    """

    def __init__(self, target: Any, *, read_timeout: float | None = None, **options: Any) -> None:
        super().__init__(target, **options)
        self.read_timeout = read_timeout

    @property
    def is_http(self) -> bool:
        """Whether the server is reached over Streamable HTTP (else stdio or in memory)."""
        return isinstance(self.target, str) and self.target.startswith(("http://", "https://"))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.read_timeout is None or method in UNTIMED_METHODS:
            return await super().request(method, params)
        with anyio.fail_after(self.read_timeout):
            return await super().request(method, params)

    async def cancel_request(self, request_id: Any, reason: str) -> None:
        """Tell the server we no longer want the answer to `request_id` (`notifications/cancelled`)."""
        await self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
