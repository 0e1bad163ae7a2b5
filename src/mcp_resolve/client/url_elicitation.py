"""URL-mode elicitation, client side: a server sends the person to a page, the client asks first.

A server that needs something that must not pass through the client (an
OAuth consent with a third party, a payment, a secret typed into its own
page) asks with `elicitation/create` in `mode: "url"`. The client's
`url_elicitation_handler` receives the `ElicitRequestURLParams` and answers
`accept` (the person agreed to go; the work happens at the URL), `decline`
or `cancel`. The spec's client rules: never pre-fetch the URL, never open it
without the person's consent, show the full URL (its host highlighted)
before asking. `BrowserUrlElicitation` is the ready-made handler that does
exactly that, on the terminal, and opens the system browser like the OAuth
login does; any `async (params) -> action` of yours may replace it.

How the outcome gets back to the server depends on the era:

* 2025-11-25: the question arrives mid-call; the answer goes back at once,
  and the server later sends `notifications/elicitation/complete` with the
  elicitation's id. `UrlElicitations` records those (bounded) so that
  `Client.wait_for_elicitation(id)` returns when it arrived, before or after
  the wait began;
* 2026-07-28: the question arrives in an input-required round; the answer
  travels in `inputResponses` of the retried request, with the server's
  `requestState`, and the server says on that retry whether the page was
  completed (its result, or another round). There is no notification.

A server may also refuse a request with error -32042 until URLs are visited;
the client raises it as `UrlElicitationRequiredError` with the parsed
`elicitations`, so the caller can show them, wait, and retry.
"""

from __future__ import annotations

import logging
import sys
import webbrowser
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
from mcp_types import ElicitRequestURLParams

from ..errors import URL_ELICITATION_REQUIRED, MCPError, UrlElicitationRequiredError

__all__ = ["MAX_URL_CHARS", "BrowserUrlElicitation", "UrlElicitationHandler"]

logger = logging.getLogger("mcp_resolve.client")

UrlElicitationHandler = Callable[[ElicitRequestURLParams], Awaitable[Any]]
"""`async (params) -> "accept" | "decline" | "cancel"` (or an `ElicitResult`, or its dict)."""

MAX_URL_CHARS = 8 * 1024
"""A URL longer than this is not shown to anyone: the handler declines it unseen."""
MAX_ELICITATIONS = 16
"""The URLs one -32042 error may list; more are dropped (a person visits a few, not hundreds)."""
MAX_REMEMBERED = 256
"""Completion notifications remembered per client, and ids waited for at once."""


def url_elicitation_error(error: MCPError) -> MCPError:
    """`error` as a `UrlElicitationRequiredError` with its URLs parsed, if it is a -32042; else `error`."""
    if error.code != URL_ELICITATION_REQUIRED or isinstance(error, UrlElicitationRequiredError):
        return error
    listed = error.data.get("elicitations") if isinstance(error.data, dict) else None
    elicitations: list[ElicitRequestURLParams] = []
    for item in listed if isinstance(listed, list) else []:
        if len(elicitations) == MAX_ELICITATIONS:
            break
        try:
            params = ElicitRequestURLParams.model_validate(item)
        except ValueError:
            continue  # not a URL elicitation we could show: left out, not fatal
        if len(params.url) <= MAX_URL_CHARS:
            elicitations.append(params)
    return UrlElicitationRequiredError(elicitations, message=error.message[:1000])


def as_elicit_result(answer: Any) -> dict[str, Any]:
    """A URL handler's answer as the `ElicitResult` dict (URL mode carries no `content`)."""
    if hasattr(answer, "model_dump"):
        answer = answer.model_dump(by_alias=True, exclude_none=True, mode="json")
    action = answer.get("action") if isinstance(answer, dict) else answer
    if action not in ("accept", "decline", "cancel"):
        raise TypeError(f"a URL elicitation handler answers accept, decline or cancel, not {action!r}")
    return {"action": action}


class UrlElicitations:
    """The `notifications/elicitation/complete` a client has heard, and the waits for them (2025-11-25)."""

    def __init__(self) -> None:
        self._completed: OrderedDict[str, None] = OrderedDict()
        self._waiting: dict[str, anyio.Event] = {}
        self._waiters: dict[str, int] = {}

    def completed(self, elicitation_id: Any) -> None:
        """The server says the page of `elicitation_id` was completed."""
        if not isinstance(elicitation_id, str) or len(elicitation_id) > 1000:
            return
        self._completed[elicitation_id] = None
        self._completed.move_to_end(elicitation_id)
        while len(self._completed) > MAX_REMEMBERED:
            self._completed.popitem(last=False)
        event = self._waiting.get(elicitation_id)
        if event is not None:
            event.set()

    async def wait(self, elicitation_id: str) -> None:
        """Until the server has said `elicitation_id` is complete (at once if it already has)."""
        if elicitation_id in self._completed:
            return
        event = self._waiting.get(elicitation_id)
        if event is None:
            if len(self._waiting) >= MAX_REMEMBERED:
                raise RuntimeError(f"already waiting for {MAX_REMEMBERED} elicitations")
            event = self._waiting[elicitation_id] = anyio.Event()
        self._waiters[elicitation_id] = self._waiters.get(elicitation_id, 0) + 1
        try:
            await event.wait()
        finally:
            self._waiters[elicitation_id] -= 1
            if not self._waiters[elicitation_id]:  # the last one waiting (done or cancelled) clears up
                del self._waiters[elicitation_id]
                self._waiting.pop(elicitation_id, None)


Confirm = Callable[[ElicitRequestURLParams, str], "Awaitable[bool] | bool"]


class BrowserUrlElicitation:
    """The ready-made URL handler: show the message and the full URL, ask, then open the system browser.

    `confirm(params, host)` decides whether the person agrees; by default a
    yes/no question on the terminal (stderr and stdin), which is declined
    when there is no terminal to ask on: the spec forbids opening a URL
    without consent. `open_url(url)` opens it (default: the system browser,
    or the URL printed on stderr when there is none). A URL that is not
    https (plain http only to this machine, with `allow_http=True` anywhere),
    carries a user name or password, or is not printable is declined without
    being shown. Nothing is ever fetched from the URL by the client.
    """

    def __init__(
        self,
        *,
        confirm: Confirm | None = None,
        open_url: Callable[[str], Awaitable[None]] | None = None,
        allow_http: bool = False,
    ) -> None:
        self.confirm = confirm or ask_on_terminal
        self.open_url = open_url or open_in_browser
        self.allow_http = allow_http

    async def __call__(self, params: ElicitRequestURLParams) -> dict[str, Literal["accept", "decline"]]:
        host = self._showable_host(params.url)
        if host is None:
            logger.warning("declined a URL elicitation whose URL cannot be shown safely")
            return {"action": "decline"}
        agreed = self.confirm(params, host)
        if not isinstance(agreed, bool):
            agreed = await agreed
        if not agreed:
            return {"action": "decline"}
        await self.open_url(params.url)
        return {"action": "accept"}

    def _showable_host(self, url: str) -> str | None:
        if len(url) > MAX_URL_CHARS or not url.isprintable() or any(c.isspace() for c in url):
            return None
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - a malformed port raises here
        except ValueError:
            return None
        host = parts.hostname
        if not host or parts.username is not None or parts.password is not None:
            return None
        loopback = host in ("localhost", "127.0.0.1", "::1")
        if parts.scheme == "https" or (parts.scheme == "http" and (loopback or self.allow_http)):
            return host
        return None


def ask_on_terminal(params: ElicitRequestURLParams, host: str) -> Awaitable[bool] | bool:
    """The default consent: the message, the full URL and its host on stderr, then y/N on stdin."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        logger.warning("a server asked to open a URL on %s, and there is no terminal to ask: declined", host)
        return False

    def ask() -> bool:
        print(
            f"\nThe MCP server asks you to visit a page:\n  {params.message}\n"
            f"  site: {host}\n  full URL: {params.url}",
            file=sys.stderr,
        )
        reply = input("Open it in your browser? [y/N] ")
        return reply.strip().lower() in ("y", "yes")

    return anyio.to_thread.run_sync(ask)


async def open_in_browser(url: str) -> None:
    """Open `url` in the system browser, or print it on stderr when there is none."""
    opened = await anyio.to_thread.run_sync(webbrowser.open, url)
    if not opened:
        print(f"Open this URL in a browser:\n{url}", file=sys.stderr)
