"""The browser step of the authorization code flow, pluggable at both ends.

The flow needs two things from its surroundings: someone to take the person
to the authorization URL (a *redirect handler*: any `async (url) -> None`),
and someone to receive the authorization server's redirect back (a *callback
handler*: it names the `redirect_uri` and waits for the redirect). The
defaults are the desktop ones, `open_browser` and `LoopbackCallback` (RFC
8252: a listener on 127.0.0.1); `HeadlessBrowser` plays both parts without a
person, for tests and for authorization servers that approve without asking.

The callback handler is told the `state` it should expect, so a listener
can ignore stray or forged requests (a web page can make the browser hit
`127.0.0.1:PORT/callback` too) and keep waiting for the real one; the flow
checks `state` and `iss` again in any case.
"""

from __future__ import annotations

import logging
import sys
import webbrowser
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urljoin, urlsplit

import anyio
import anyio.abc
import h11
import httpx

from .discovery import fetch_deadline, is_secure_url
from .errors import AuthorizationError

__all__ = [
    "AuthorizationResponse",
    "CallbackHandler",
    "HeadlessBrowser",
    "LoopbackCallback",
    "RedirectHandler",
    "open_browser",
]

logger = logging.getLogger("mcp_resolve.client.auth")

RedirectHandler = Callable[[str], Awaitable[None]]
"""Takes the person to the authorization URL (opens a browser, prints it, drives a test browser)."""

MAX_CALLBACK_BYTES = 16 * 1024
_SINGLE = ("code", "state", "iss", "error", "error_description", "error_uri")


@dataclass(frozen=True)
class AuthorizationResponse:
    """The query of the authorization server's redirect back to us (RFC 6749 §4.1.2)."""

    params: Mapping[str, str] = field(default_factory=dict)
    duplicated: frozenset[str] = frozenset()
    """Parameters that appeared more than once: an ambiguous response the flow rejects."""

    @classmethod
    def from_query(cls, query: str) -> AuthorizationResponse:
        params: dict[str, str] = {}
        duplicated: set[str] = set()
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name in params:
                duplicated.add(name)
            params.setdefault(name, value)
        return cls(params, frozenset(duplicated & set(_SINGLE)))

    @classmethod
    def from_url(cls, url: str) -> AuthorizationResponse:
        return cls.from_query(urlsplit(url).query)

    @property
    def state(self) -> str | None:
        return self.params.get("state")


@runtime_checkable
class CallbackHandler(Protocol):
    """Receives the redirect back from the authorization server."""

    async def redirect_uri(self) -> str:
        """The redirect URI to register and send; stable for this handler's life."""
        ...

    async def wait_for_callback(self, state: str, timeout: float) -> AuthorizationResponse:
        """The redirect that carries `state` (others may be discarded), within `timeout` seconds."""
        ...


async def open_browser(url: str) -> None:
    """The default redirect handler: the system browser, or the URL on stderr when there is none."""
    opened = await anyio.to_thread.run_sync(webbrowser.open, url)
    if not opened:
        print(f"Open this URL in a browser to authorize the MCP client:\n{url}", file=sys.stderr)


def _same_endpoint(url: str, redirect_uri: str) -> bool:
    a, b = urlsplit(url), urlsplit(redirect_uri)
    return (a.scheme, a.netloc.lower(), a.path or "/") == (b.scheme, b.netloc.lower(), b.path or "/")


_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>MCP authorization</title>"
    b"<p>%s</p><p>You can close this window.</p>"
)


class LoopbackCallback:
    """The default callback handler: a one-request-at-a-time HTTP listener on 127.0.0.1 (RFC 8252 §7.3).

    The port is chosen on first use (`port=0`) and kept for this object's
    life, so a client registered with its redirect URI keeps working across
    logins; pass a fixed `port` when the authorization server only accepts a
    redirect URI registered in advance. Requests are parsed with h11 and
    bounded in size and time; anything but a GET of the callback path that
    carries the expected `state` gets an error page and is otherwise ignored.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, path: str = "/callback") -> None:
        self.host = host
        self.port = port
        self.path = path if path.startswith("/") else f"/{path}"
        self._listener: anyio.abc.SocketListener | None = None

    async def redirect_uri(self) -> str:
        await self._bind()
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    async def _bind(self) -> anyio.abc.SocketListener:
        if self._listener is None:
            multi = await anyio.create_tcp_listener(local_host=self.host, local_port=self.port)
            listener = multi.listeners[0]
            assert isinstance(listener, anyio.abc.SocketListener)
            self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
            self._listener = listener
        return self._listener

    async def aclose(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()

    async def wait_for_callback(self, state: str, timeout: float) -> AuthorizationResponse:
        listener = await self._bind()
        try:
            with anyio.fail_after(timeout):
                while True:
                    stream = await listener.accept()
                    async with stream:
                        response = await self._serve(stream, state)
                    if response is not None:
                        return response
        except TimeoutError:
            raise AuthorizationError(
                "callback_timeout", f"no authorization response reached {self.path} within {timeout:g} s"
            ) from None
        finally:
            await self.aclose()  # bound again, on the same port, by the next login

    async def _serve(self, stream: anyio.abc.ByteStream, state: str) -> AuthorizationResponse | None:
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_CALLBACK_BYTES)
        request: h11.Request | None = None
        with anyio.move_on_after(10):
            while request is None:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    try:
                        connection.receive_data(await stream.receive(4096))
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        connection.receive_data(b"")
                elif isinstance(event, h11.Request):
                    request = event
                else:
                    return None  # a malformed request or a closed connection
        if request is None:
            return None
        target = request.target.decode("ascii", "replace")
        response: AuthorizationResponse | None = None
        status, text = 404, b"Not found."
        if request.method == b"GET" and urlsplit(target).path == self.path:
            candidate = AuthorizationResponse.from_url(target)
            if candidate.state == state:
                response = candidate
                status = 200
                text = b"Authorization failed." if "error" in candidate.params else b"Authorization complete."
            else:
                status, text = 400, b"This response does not belong to the login in progress; ignored."
        body = _PAGE % text
        try:
            headers = [
                ("content-type", "text/html; charset=utf-8"),
                ("content-length", str(len(body))),
                ("connection", "close"),  # one request per connection: the listener serves them one by one
            ]
            await stream.send(connection.send(h11.Response(status_code=status, headers=headers)) or b"")
            await stream.send(connection.send(h11.Data(data=body)) or b"")
            await stream.send(connection.send(h11.EndOfMessage()) or b"")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.LocalProtocolError):
            pass
        return response


class HeadlessBrowser:
    """Both handlers at once, for tests: fetches the authorization URL and follows its redirects itself.

    It plays a person who approves at once, so it only works with an
    authorization server that redirects back without showing a page (a test
    server, or a real one where the user already consented). Redirects are
    followed over https (or loopback http) only, at most `max_redirects`, and
    the one to `redirect_uri` is captured instead of being followed. Each hop
    has one deadline for the whole exchange, like every fetch of the flow
    (the HTTP client's longest timeout: 30 s by default), and no page body
    is read.
    """

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:47823/callback",
        *,
        max_redirects: int = 10,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        self._redirect_uri = redirect_uri
        self.max_redirects = max_redirects
        self._http_client = http_client or (lambda: httpx.AsyncClient(timeout=30))
        self._responses: list[AuthorizationResponse] = []

    async def redirect_uri(self) -> str:
        return self._redirect_uri

    async def __call__(self, url: str) -> None:
        """The redirect handler: visit `url` as a browser would, up to the redirect back."""
        async with self._http_client() as http:
            for _hop in range(self.max_redirects + 1):
                if not is_secure_url(url):
                    raise AuthorizationError("insecure_url", f"refusing to browse to {url}")
                # Only the status and Location matter: the body (a page for a person) is never read.
                async with (
                    fetch_deadline(http, url),
                    http.stream("GET", url, follow_redirects=False) as response,
                ):
                    location = response.headers.get("location")
                if not response.is_redirect or not location:
                    raise AuthorizationError(
                        "interaction_required",
                        f"the authorization server answered HTTP {response.status_code} instead of redirecting "
                        "back: it wants a person",
                    )
                url = urljoin(url, location)
                if _same_endpoint(url, self._redirect_uri):
                    self._responses.append(AuthorizationResponse.from_url(url))
                    return
        raise AuthorizationError("too_many_redirects", f"more than {self.max_redirects} redirects")

    async def wait_for_callback(self, state: str, timeout: float) -> AuthorizationResponse:
        if not self._responses:
            raise AuthorizationError("callback_missing", "the browser step ended without a redirect back")
        return self._responses.pop(0)
