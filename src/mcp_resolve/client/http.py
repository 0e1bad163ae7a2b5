"""The client end of Streamable HTTP as a message pipe: the session above never sees HTTP.

`send` of a request POSTs it and pumps whatever comes back (a JSON body, or an
SSE stream of notifications, server-to-client requests and finally the
response) into the receive queue, in a task of its own so requests overlap.
Any failure of that POST becomes a JSON-RPC error for the request's id, so a
caller waiting on it always wakes up; in particular a server that does not
speak 2026-07-28 answering the `server/discover` probe with a 4xx makes the
Client fall back to `initialize`. A POST that got no answer at all (the
connection failed) is marked `UNDELIVERED`, and one the OAuth flow gave up
on carries the `AuthorizationError`'s code: neither says anything about the
server's era.

The era is read off each outgoing message: a request whose `_meta` carries a
protocol version is 2026-07-28 (that version in `MCP-Protocol-Version`, the
mirrored `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` headers, no session);
anything else is the handshake era (the `Mcp-Session-Id` captured from the
`initialize` response and the negotiated version on every later POST, and a
DELETE of the session on close).
"""

from __future__ import annotations

import functools
import logging
import math
import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import httpx
import pydantic_core
from mcp_types import PROTOCOL_VERSION_META_KEY

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND
from ..protocol.http_names import (
    METHOD_HEADER,
    NAME_FIELDS,
    NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
    SESSION_HEADER,
)
from ..protocol.jsonrpc import encode, error_message
from ..protocol.param_headers import (
    InvalidHeaderDeclaration,
    encode_header_value,
    header_declarations,
    param_headers,
)
from .auth.errors import AuthorizationError
from .pipes import UNDELIVERED

__all__ = ["BorrowedClient", "HttpPipe", "open_http"]

logger = logging.getLogger("mcp_resolve.client")

MAX_EVENT_BYTES = 64 * 1024 * 1024
_TIMEOUT = httpx.Timeout(30.0, read=None)  # an SSE stream may stay quiet while a tool works
_RESUME_ATTEMPTS = 3
_RESEND_DELAYS = (0.05, 0.25, 1.0)
"""Waits before sending an answer or a notification again after a gateway or connection failure."""
_GATEWAY_FAILURES = frozenset({502, 503, 504})


@dataclass
class _Cursor:
    """How far an SSE stream got, to resume it: `Last-Event-ID` after the server's `retry` delay (SEP-1699)."""

    last_event_id: str | None = None
    retry_seconds: float = 1.0


async def _sse_data(response: httpx.Response, cursor: _Cursor | None = None) -> AsyncIterator[str]:
    """The data of each `message` event of an SSE body (the WHATWG event-stream rules we need).

    Events without data (a priming event that only carries an id) are not
    messages; their `id` and `retry` fields still move the cursor.
    """
    cursor = cursor or _Cursor()
    data: list[str] = []
    event, size = "", 0
    async for line in response.aiter_lines():
        if not line:
            payload = "\n".join(data)
            if payload.strip() and event in ("", "message"):
                yield payload
            data, event, size = [], "", 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            size += len(value)
            if size > MAX_EVENT_BYTES:
                raise ValueError(f"an SSE event exceeds {MAX_EVENT_BYTES} bytes")
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            cursor.last_event_id = value
        elif name == "retry" and value.isdigit():
            cursor.retry_seconds = int(value) / 1000


def _is_modern(message: Mapping[str, Any]) -> bool:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


class HttpPipe:
    """One client's conversation with one MCP endpoint."""

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient | BorrowedClient,
        group: anyio.abc.TaskGroup,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.url = url
        self.session_id: str | None = None
        self.protocol_version: str | None = None  # handshake era, once negotiated
        self._http = http
        self._group = group
        self._headers = dict(headers or {})
        self._inbox_send, self._inbox = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        self._tool_headers: dict[str, dict[tuple[str, ...], str]] = {}
        self._initialize: dict[str, Any] | None = None
        self._reopening = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        if message.get("method") == "initialize":
            self._initialize = message  # replayed if the server ends the session
        headers = self._headers_for(message)
        if "method" in message and "id" in message:
            self._group.start_soon(self._exchange, message, headers)
            return
        response = await self._post_again_on_failure(message, headers)
        if response is None:
            return
        if response.status_code >= 300:
            logger.warning(
                "the server refused %s: HTTP %d", message.get("method", "a response"), response.status_code
            )
        elif message.get("method") == "notifications/initialized" and self.session_id is not None:
            self._group.start_soon(self._listen)

    async def _post_again_on_failure(
        self, message: dict[str, Any], headers: dict[str, str]
    ) -> httpx.Response | None:
        """POST an answer or a notification, again after a gateway or connection failure.

        Losing one would strand the server's call: a question whose answer
        never arrives keeps the call waiting until the caller gives up. A
        proxy in front of several workers answers 502 when the worker it
        picked died (it does not retry a POST it already sent), and another
        worker would take it. Sending either again is harmless: the server
        delivers an answer to the question waiting for it once and drops a
        second copy, and the notifications a client sends (`initialized`,
        `cancelled`, roots changed) mean the same the second time.
        """
        what = message.get("method", "a response")
        for delay in (*_RESEND_DELAYS, None):
            try:
                response = await self._http.post(self.url, content=encode(message), headers=headers)
            except AuthorizationError as exc:
                logger.warning("POST of %s failed: %s", what, exc)
                return None
            except httpx.HTTPError as exc:
                if delay is None or not isinstance(exc, httpx.TransportError):
                    logger.warning("POST of %s failed: %s", what, exc)
                    return None
            else:
                if delay is None or response.status_code not in _GATEWAY_FAILURES:
                    return response
            logger.info("POST of %s failed; sending it again in %.2f s", what, delay)
            await anyio.sleep(delay)
        return None  # pragma: no cover - the loop returns on its last pass

    async def receive(self) -> dict[str, Any]:
        return await self._inbox.receive()

    async def aclose(self) -> None:
        """End the handshake-era session on the server (best effort), then stop receiving."""
        session_id, self.session_id = self.session_id, None
        if session_id is not None:
            headers = {**self._headers, SESSION_HEADER: session_id}
            if self.protocol_version is not None:
                headers[PROTOCOL_VERSION_HEADER] = self.protocol_version
            with anyio.move_on_after(5, shield=True):
                try:
                    await self._http.delete(self.url, headers=headers)
                except (httpx.HTTPError, AuthorizationError) as exc:
                    logger.debug("DELETE of the session failed: %s", exc)
        self._inbox_send.close()

    # -- one request -------------------------------------------------------------------------
    def _headers_for(self, message: dict[str, Any]) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        headers.update(self._headers)
        method, params = message.get("method"), message.get("params") or {}
        if _is_modern(message):
            headers[PROTOCOL_VERSION_HEADER] = str(params["_meta"][PROTOCOL_VERSION_META_KEY])
            headers[METHOD_HEADER] = str(method)
            name = params.get(NAME_FIELDS.get(str(method), ""))
            if isinstance(name, str):
                headers[NAME_HEADER] = encode_header_value(name)
            if method == "tools/call" and isinstance(name, str) and name in self._tool_headers:
                arguments = params.get("arguments")
                headers.update(
                    param_headers(
                        self._tool_headers[name], arguments if isinstance(arguments, dict) else None
                    )
                )
            return headers
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None and method != "initialize":
            headers[PROTOCOL_VERSION_HEADER] = self.protocol_version
        return headers

    async def _exchange(
        self, message: dict[str, Any], headers: dict[str, str], *, may_reopen: bool = True
    ) -> None:
        request_id, method = message["id"], str(message["method"])
        answered = reopened = False
        try:
            async with self._http.stream(
                "POST", self.url, content=encode(message), headers=headers
            ) as response:
                ended = response.status_code == 404 and SESSION_HEADER in headers
                if ended and may_reopen and await self._reopen_session(headers[SESSION_HEADER]):
                    answered = reopened = True  # answered by the retry below, on the new session
                elif response.status_code >= 400 or response.status_code == 202:
                    self._deliver(await self._refused(response, request_id), method)
                    return
                session_id = response.headers.get(SESSION_HEADER)
                if method == "initialize" and session_id is not None:
                    self.session_id = session_id
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type == "text/event-stream":
                    cursor = _Cursor()
                    answered = await self._pump(_sse_data(response, cursor), request_id, method)
                    if not answered and not _is_modern(message):
                        answered = await self._resume(cursor, request_id, method)
                elif content_type == "application/json":
                    reply = pydantic_core.from_json(await response.aread())
                    answered = isinstance(reply, dict)
                    if answered:
                        self._deliver(reply, method)
        except AuthorizationError as exc:  # the OAuth flow gave up: say why, with the reason's code in data
            self._deliver(error_message(request_id, exc.code, exc.message, exc.data), method)
            return
        except (httpx.HTTPError, ValueError) as exc:
            logger.debug("POST of %s failed", method, exc_info=True)
            unanswered = {UNDELIVERED: type(exc).__name__} if isinstance(exc, httpx.TransportError) else None
            self._deliver(
                error_message(request_id, INTERNAL_ERROR, f"HTTP request failed: {exc}", unanswered), method
            )
            return
        if not answered:
            self._deliver(error_message(request_id, INTERNAL_ERROR, "the server sent no response"), method)
        elif reopened:
            await self._exchange(message, self._headers_for(message), may_reopen=False)

    async def _reopen_session(self, ended: str) -> bool:
        """The server ended our session (HTTP 404): start a new one, as the 2025-11-25 spec requires.

        Replays the `initialize` that opened the first session (its answer is
        ours, not the caller's) and `notifications/initialized`; concurrent
        requests that hit the same 404 share one reopening.
        """
        async with self._reopening:
            if self.session_id != ended:
                return self.session_id is not None  # another request already reopened it
            self.session_id = None
            if self._initialize is None:
                return False
            headers = self._headers_for(self._initialize)
            try:
                response = await self._http.post(self.url, content=encode(self._initialize), headers=headers)
                session_id = response.headers.get(SESSION_HEADER)
                if response.status_code != 200 or session_id is None:
                    return False
                self.session_id = session_id
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await self._http.post(
                    self.url, content=encode(initialized), headers=self._headers_for(initialized)
                )
            except (httpx.HTTPError, AuthorizationError) as exc:
                logger.warning("could not reopen the session: %s", exc)
                return False
            self._group.start_soon(self._listen)
            logger.info("the server ended our session; continuing on a new one")
            return True

    async def _pump(self, events: AsyncIterator[str], request_id: Any, method: str) -> bool:
        """Deliver each message of an SSE stream; True once the response to `request_id` came."""
        async for data in events:
            reply = pydantic_core.from_json(data)
            if isinstance(reply, dict):
                self._deliver(reply, method)
                if reply.get("id") == request_id and "method" not in reply:
                    return True
        return False

    def _stream_headers(self, cursor: _Cursor) -> dict[str, str]:
        headers = {**self._headers, "accept": "text/event-stream"}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[PROTOCOL_VERSION_HEADER] = self.protocol_version
        if cursor.last_event_id is not None:
            headers["last-event-id"] = cursor.last_event_id
        return headers

    async def _resume(self, cursor: _Cursor, request_id: Any, method: str) -> bool:
        """Follow a response stream the server closed before answering: GET it back from its last event id.

        The server asked for this by giving its events ids; it chose the delay
        (`retry`). A server without resumption (no ids, or no GET) leaves the
        request unanswered, as before.
        """
        for _attempt in range(_RESUME_ATTEMPTS):
            if cursor.last_event_id is None or self.session_id is None:
                return False
            await anyio.sleep(cursor.retry_seconds)
            async with self._http.stream("GET", self.url, headers=self._stream_headers(cursor)) as response:
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or content_type != "text/event-stream":
                    return False
                if await self._pump(_sse_data(response, cursor), request_id, method):
                    return True
        return False

    async def _listen(self) -> None:
        """The handshake era's GET stream: server requests and notifications that belong to no call.

        A server that offers none answers 405; that is fine, it then only
        speaks on the streams of our POSTs.
        """
        try:
            async with self._http.stream(
                "GET", self.url, headers=self._stream_headers(_Cursor())
            ) as response:
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code == 200 and content_type == "text/event-stream":
                    await self._pump(_sse_data(response), None, "")
        except (httpx.HTTPError, ValueError, AuthorizationError) as exc:
            logger.debug("the server-to-client stream ended: %s", exc)

    async def _refused(self, response: httpx.Response, request_id: Any) -> dict[str, Any]:
        """The JSON-RPC error for a POST the server turned down, ours or the one it sent."""
        try:
            body = pydantic_core.from_json(await response.aread())
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return {**body, "id": request_id}  # a refusal before the id was read carries none
        status = response.status_code
        if status == 202:
            return error_message(
                request_id, INVALID_REQUEST, "the server accepted a request but sent no response"
            )
        if status == 404 and SESSION_HEADER in {k.lower() for k in response.request.headers}:
            return error_message(request_id, INVALID_REQUEST, "HTTP 404: the session has ended; reconnect")
        code = (
            METHOD_NOT_FOUND if status in (404, 405) else INVALID_REQUEST if status < 500 else INTERNAL_ERROR
        )
        return error_message(request_id, code, f"HTTP {status} {response.reason_phrase}".strip())

    def _deliver(self, message: dict[str, Any], method: str) -> None:
        result = message.get("result")
        if isinstance(result, dict) and "method" not in message:
            if method == "initialize" and isinstance(result.get("protocolVersion"), str):
                self.protocol_version = result["protocolVersion"]
            elif method == "tools/list":
                self._learn_tools(result)
        try:
            self._inbox_send.send_nowait(message)
        except anyio.ClosedResourceError:
            pass

    def _learn_tools(self, result: dict[str, Any]) -> None:
        """Record each tool's `x-mcp-header` params; drop tools whose annotations are invalid (the spec's MUST)."""
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        kept = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            schema = tool.get("inputSchema") if isinstance(tool, dict) else None
            try:
                params = header_declarations(schema if isinstance(schema, dict) else {})
            except InvalidHeaderDeclaration as exc:
                logger.warning("ignoring tool %r: %s", name, exc)
                continue
            if isinstance(name, str):
                self._tool_headers[name] = params
            kept.append(tool)
        result["tools"] = kept


class BorrowedClient:
    """The caller's `httpx.AsyncClient`, signing each request with `auth=` (it is theirs: never closed here)."""

    def __init__(self, http: httpx.AsyncClient, auth: httpx.Auth | None) -> None:
        self._http = http
        self._auth: dict[str, Any] = {} if auth is None else {"auth": auth}

    async def post(self, url: str, **options: Any) -> httpx.Response:
        return await self._http.post(url, **options, **self._auth)

    async def delete(self, url: str, **options: Any) -> httpx.Response:
        return await self._http.delete(url, **options, **self._auth)

    def stream(self, method: str, url: str, **options: Any) -> AbstractAsyncContextManager[httpx.Response]:
        return self._http.stream(method, url, **options, **self._auth)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """Built once: loading the CA bundle costs a few hundred milliseconds per client otherwise."""
    return httpx.create_ssl_context()


def _tls(url: str, verify: ssl.SSLContext | bool | str | None) -> ssl.SSLContext | bool:
    """`verify` as httpx takes it: a CA bundle path becomes a context trusting that bundle."""
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    if verify is None:
        return _tls_context() if url.lower().startswith("https://") else False
    return _tls_context() if verify is True else verify


@asynccontextmanager
async def open_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    auth: httpx.Auth | None = None,
    verify: ssl.SSLContext | bool | str | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> AsyncIterator[HttpPipe]:
    """Talk to the MCP endpoint at `url`; `headers` go on every request, `auth` signs each (and may log in).

    Requests go through `http_client` when given (the caller's, left open),
    else through a client built here with `verify` (None: the system's CAs).
    """
    async with AsyncExitStack() as stack:
        http: httpx.AsyncClient | BorrowedClient
        if http_client is not None:
            http = BorrowedClient(http_client, auth)
        else:
            http = await stack.enter_async_context(
                httpx.AsyncClient(timeout=_TIMEOUT, verify=_tls(url, verify), auth=auth)
            )
        group = await stack.enter_async_context(anyio.create_task_group())
        pipe = HttpPipe(url, http, group, headers)
        try:
            yield pipe
        finally:
            await pipe.aclose()
            group.cancel_scope.cancel()
            # The reading end too (`aclose` ends the writing one, so a reader still waiting sees the
            # end): an unclosed memory stream is a ResourceWarning when collected.
            pipe._inbox.close()
