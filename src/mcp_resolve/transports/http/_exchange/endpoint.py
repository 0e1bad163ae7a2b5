"""The MCP endpoint of Streamable HTTP as a bare ASGI app, serving both eras on one path.

A POST whose `MCP-Protocol-Version` header names anything but a handshake-era
version (or, header-less, whose body carries modern `_meta`) is a
self-contained 2026-07-28 request, answered by `protocol.modern.respond` with
no connection at all. Everything else belongs to a handshake-era session
opened by `initialize` and named by `Mcp-Session-Id`; its mid-call questions
ride the SSE stream of the POST that caused them and their answers come back
as POSTs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from mcp_types import PROTOCOL_VERSION_META_KEY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ....errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    MCPError,
)
from ....protocol import modern
from ....protocol.http_names import PROTOCOL_VERSION_HEADER, SESSION_HEADER
from ....protocol.jsonrpc import (
    Incoming,
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    MalformedMessage,
    decode,
    error_message,
)
from .._fleet.lifespan import AppLifespan
from .._fleet.sessions import SessionFleet
from .._streams.caps import LongStreams
from .._streams.resume import LAST_EVENT_ID, fail_questions, get_stream, make_resumable
from .._wire.body import ClientGone, read_body
from .._wire.headers import RequestHeaders, modern_rejection
from .._wire.hosts import HostPolicy, OriginPolicy, parse_host
from .._wire.media import accepted_media, post_media
from .._wire.responses import json_response, refusal
from ..options import HttpOptions
from .exchange import Exchange
from .sessions import Session, Sessions

if TYPE_CHECKING:
    from ..._serves import ServedServer

__all__ = ["StreamableHTTPEndpoint"]

logger = logging.getLogger("mcp_resolve.http")

_SESSION = SESSION_HEADER.encode()
_VERSION = PROTOCOL_VERSION_HEADER.encode()
_ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
"""HTTP status of a 2026-07-28 JSON-RPC error answered as JSON (the spec names 400s and the 404)."""


def _modern_status(message: dict[str, Any]) -> int:
    if "result" in message:
        return 200
    error = message.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return _ERROR_STATUS.get(code, 200) if isinstance(code, int) else 200


def _carries_modern_meta(message: Incoming) -> bool:
    meta = message.params.get("_meta") if isinstance(message, IncomingRequest) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


def _address(scope: Scope) -> str:
    """The client's address as the ASGI server reports it (a proxy's, unless its forwarding headers are
    trusted: `trusted_proxies`)."""
    client = scope.get("client")
    return f"address {client[0]}" if client else "address unknown"


def _client(principal: str | None, scope: Scope) -> str:
    """Whom per-client caps count: the principal when authenticated, else the address."""
    return f"principal {principal}" if principal is not None else _address(scope)


async def _together(*jobs: Callable[[], Coroutine[Any, Any, None]] | None) -> None:
    async with anyio.create_task_group() as group:
        for job in jobs:
            if job is not None:
                group.start_soon(job)


def _store_down(exc: MCPError) -> Response:
    """A shared store did not answer: 503 and the store's -32603, never "session not found"."""
    return refusal(503, INTERNAL_ERROR, exc.message, {"Retry-After": "2"})


class StreamableHTTPEndpoint:
    """The MCP endpoint as a bare ASGI app; `create_app` routes it and gives it a lifespan."""

    def __init__(self, server: ServedServer, options: HttpOptions) -> None:
        self.server = server
        self.options = options
        self.hosts = HostPolicy(options.allowed_hosts)
        self.origins = OriginPolicy(options.allowed_origins, self.hosts)
        self.sessions = Sessions(
            options.session_idle_timeout,
            options.max_sessions,
            options.max_sessions_per_client,
            question_timeout=options.question_timeout,
        )
        self.streams = LongStreams(options.max_streams, options.max_streams_per_client)
        idle = options.session_idle_timeout
        sweeper = None if idle is None else partial(self.sessions.sweep_every, min(60.0, max(idle / 2, 1.0)))
        self.fleet: SessionFleet | None = None
        session_store = server.deployment.session_store
        if session_store is not None:  # sessions any worker serves (_fleet.sessions)
            self.fleet = SessionFleet(server, self.sessions, session_store)
            sweeper = partial(_together, sweeper, self.fleet.run)
        self.lifespan = AppLifespan(server, self.sessions.close_all, sweeper, self.streams.stop)

    # -- ASGI ------------------------------------------------------------------------------
    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The request's handling, returned (not awaited): no frame of this method's stays parked for a
        long-lived stream's whole life."""
        headers = RequestHeaders(scope["headers"])
        refused = self._screen(headers)
        if refused is not None:
            return refused(scope, receive, send)
        if not self.lifespan.running:
            return self._serve_once_running(scope, headers, receive, send)
        return self._serve(scope, headers, receive, send)

    async def _serve_once_running(
        self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send
    ) -> None:
        await self.lifespan.ensure()
        await self._serve(scope, headers, receive, send)

    def _serve(self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send) -> Awaitable[None]:
        method = scope["method"]
        if method == "POST":
            return self._post(scope, headers, receive, send)
        if method in ("GET", "DELETE"):
            return self._get_or_delete(scope, headers, receive, send)
        refused = refusal(
            405,
            INVALID_REQUEST,
            f"Method Not Allowed: {method}",
            headers={"Allow": "GET, POST, DELETE"},
        )
        return refused(scope, receive, send)

    def _screen(self, headers: RequestHeaders) -> Response | None:
        """DNS-rebinding protection: the Host, and the Origin when a browser sends one."""
        host = headers.raw.get(b"host")
        if not self.hosts.allows_raw(host):
            if host is not None and parse_host(host.decode("latin-1")) is None:
                logger.warning("refused a request for a malformed Host %r", host[:100].decode("latin-1"))
                return refusal(400, INVALID_REQUEST, "Bad Request: malformed Host header (RFC 9110)")
            logger.warning("refused a request for Host %r (allowed_hosts)", headers.value(b"host"))
            return refusal(
                403, INVALID_REQUEST, "Forbidden: this Host is not allowed (DNS rebinding protection)"
            )
        origin = headers.value(b"origin")
        if origin is not None and not self.origins.allows(origin):
            logger.warning("refused a request from Origin %r (allowed_origins)", origin)
            return refusal(
                403, INVALID_REQUEST, "Forbidden: this Origin is not allowed (DNS rebinding protection)"
            )
        return None

    def _principal(self, scope: Scope, receive: Receive) -> str | None:
        if self.options.principal is not None:
            return self.options.principal(Request(scope, receive))
        user = scope.get("user")
        if user is None or not getattr(user, "is_authenticated", False):
            return None
        try:
            return str(user.identity)
        except NotImplementedError:
            return str(user.display_name)

    # -- POST ------------------------------------------------------------------------------
    async def _post(self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send) -> None:
        # What stays parked for a long-lived stream's whole life is this small frame, not the reading's.
        outcome = await self._read_post(scope, headers, receive, send)
        del headers
        if outcome is not None:
            await outcome

    async def _read_post(
        self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send
    ) -> Awaitable[None] | None:
        """Read and serve one POST: None once served, or (2026-07-28) what serves it, not yet awaited."""
        raw = headers.raw
        json_body, json_ok, sse_ok = post_media(raw.get(b"content-type"), raw.get(b"accept"))
        if not json_body:
            await refusal(
                415, INVALID_REQUEST, "Unsupported Media Type: POST a JSON-RPC message as application/json"
            )(scope, receive, send)
            return None
        if not (json_ok or sse_ok):
            await refusal(
                406,
                INVALID_REQUEST,
                "Not Acceptable: Accept must list application/json and text/event-stream",
            )(scope, receive, send)
            return None
        try:
            body = await read_body(receive, self.options.max_body_bytes, raw.get(b"content-length"))
        except ClientGone:
            return None
        if body is None:
            limit = self.options.max_body_bytes
            await refusal(413, INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")(
                scope, receive, send
            )
            return None
        try:
            message = decode(body)
        except MalformedMessage as exc:
            await json_response(400, exc.answer())(scope, receive, send)
            return None
        del body  # decoded: a long-lived stream need not hold the bytes too
        version = headers.value(_VERSION)
        session_id = headers.value(_SESSION)
        modern = (version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS) or (
            session_id is None and _carries_modern_meta(message)
        )
        if isinstance(message, IncomingRequest) and modern:
            exchange = Exchange(
                json_ok, sse_ok, self.options.sse_ping_interval, True, status_of=_modern_status
            )
        else:
            exchange = Exchange(json_ok, sse_ok, self.options.sse_ping_interval, False)
        if modern:
            outcome = self._modern(scope, headers, message, exchange, receive, send)
            return outcome(scope, receive, send) if isinstance(outcome, Response) else outcome
        response = await self._handshake(
            scope, headers, message, session_id, version, exchange, receive, send
        )
        if response is not None:
            await response(scope, receive, send)
        return None

    def _modern(
        self,
        scope: Scope,
        headers: RequestHeaders,
        message: Incoming,
        exchange: Exchange,
        receive: Receive,
        send: Send,
    ) -> Response | Awaitable[None]:
        """A refusal, or the exchange that answers the request (not yet awaited: no frame of this method's
        stays parked for a `subscriptions/listen` stream's whole life)."""
        if isinstance(message, IncomingNotification):
            return Response(status_code=202)  # 2026-07-28 defines none on HTTP; accepted and dropped
        if isinstance(message, IncomingResponse):
            return refusal(
                400, INVALID_REQUEST, "Invalid Request: clients send no responses on protocol 2026-07-28"
            )
        rejection = modern_rejection(message, headers)
        if rejection is None and message.method == "subscriptions/listen" and not exchange.sse_ok:
            body = error_message(
                message.id, INVALID_REQUEST, "subscriptions/listen streams: Accept text/event-stream"
            )
            return json_response(406, body)
        if rejection is not None:
            body = error_message(message.id, rejection.code, rejection.message, rejection.data)
            return json_response(_ERROR_STATUS.get(rejection.code, 400), body)
        meta, principal = message.params["_meta"], self._principal(scope, receive)
        message.peer = _address(scope)
        if message.method == "subscriptions/listen":  # a long-lived stream: counted, and capped per client
            client = _client(principal, scope)
            refused = self.streams.refusal(client, message.id)
            if refused is not None:
                return refused
            exchange.held = self.streams.held(client, self.server.notifications.end_streams)
        answer = modern.respond(self.server, message, meta, exchange.sink, principal, headers)
        return exchange.run(answer, receive, send)

    async def _handshake(
        self,
        scope: Scope,
        headers: RequestHeaders,
        message: Incoming,
        session_id: str | None,
        version: str | None,
        exchange: Exchange,
        receive: Receive,
        send: Send,
    ) -> Response | None:
        principal = self._principal(scope, receive)
        if session_id is None:
            if not (isinstance(message, IncomingRequest) and message.method == "initialize"):
                return refusal(
                    400,
                    INVALID_REQUEST,
                    "Bad Request: the Mcp-Session-Id header is required; send initialize first",
                )
            client = _client(principal, scope)
            if not self.sessions.room_for(client):
                return refusal(
                    429,
                    INVALID_REQUEST,
                    "Too Many Requests: this client's sessions are all busy; end one (DELETE) first",
                    {"Retry-After": "60"},
                )
            if self.sessions.full():
                return refusal(
                    503, INTERNAL_ERROR, "Service Unavailable: too many open sessions", {"Retry-After": "60"}
                )
            session, fresh = self.sessions.new(self.server, principal, client), True
        else:
            try:
                if self.fleet is None:  # the common case, without a coroutine of its own
                    found = self.sessions.get(session_id, principal)
                else:
                    found = await self.fleet.find(session_id, principal)
            except MCPError as exc:
                return _store_down(exc)
            if found is None:
                return refusal(
                    404, INVALID_REQUEST, "Session not found: it ended or never existed; initialize again"
                )
            session, fresh = found, False
            state = session.connection.handshake
            if version is not None and state is not None and version != state.protocol_version:
                return refusal(
                    400,
                    INVALID_REQUEST,
                    f"Bad Request: MCP-Protocol-Version {version!r} is not this session's ({state.protocol_version!r})",
                )
        if self.fleet is not None and not fresh and not isinstance(message, IncomingRequest):
            try:  # answers and cancellations reach the worker running the call; changes are saved
                await self.fleet.route(session, message)
            except MCPError as exc:
                return _store_down(exc)
            return Response(status_code=202)
        if isinstance(message, IncomingNotification):
            await session.connection.handle_notification(message)
            return Response(status_code=202)
        if isinstance(message, IncomingResponse):
            session.connection.deliver_response(message)
            return Response(status_code=202)
        await self._session_request(headers, session, message, fresh, exchange, receive, send)
        return None

    async def _find(self, session_id: str, principal: str | None) -> Session | None:
        if self.fleet is not None:
            return await self.fleet.find(session_id, principal)
        return self.sessions.get(session_id, principal)

    async def _session_request(
        self,
        headers: RequestHeaders,
        session: Session,
        message: IncomingRequest,
        fresh: bool,
        exchange: Exchange,
        receive: Receive,
        send: Send,
    ) -> None:

        def commit_headers(first: dict[str, Any] | None) -> dict[str, str]:
            # A new session exists from the moment its id is sent: registered here, just before that.
            if fresh and not (first is not None and "result" in first):
                return {}
            if fresh:
                self.sessions.add(session)
            return {SESSION_HEADER: session.id}

        sink = (
            exchange.sink
            if self.fleet is None
            else self.fleet.sink_for(session, message, fresh, exchange.sink)
        )

        async def answer() -> None:  # the connection sends the answer itself, through the sink
            with session.activity():
                # Built directly: dataclasses.replace() re-reads the fields on every call.
                request = IncomingRequest(
                    message.id, message.method, message.params, headers, message.access_token
                )
                if exchange.recorder is not None:  # resumable: the call may end its stream (SEP-1699)
                    request.close_stream = exchange.close_stream
                await session.connection.handle_request(request, sink)

        exchange.headers_of = commit_headers
        exchange.on_disconnect = lambda asked: fail_questions(session.connection, asked)
        events = self.server.deployment.event_store
        if events is not None and not fresh:
            make_resumable(exchange, events, session, message.id, self.options)
        await exchange.run(answer(), receive, send)

    # -- GET and DELETE ----------------------------------------------------------------------
    async def _get_or_delete(
        self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send
    ) -> None:
        session_id = headers.value(_SESSION)
        version = headers.value(_VERSION)
        if session_id is None:
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                refused = refusal(
                    405,
                    INVALID_REQUEST,
                    "Method Not Allowed on protocol 2026-07-28",
                    headers={"Allow": "POST"},
                )
            else:
                refused = refusal(400, INVALID_REQUEST, "Bad Request: the Mcp-Session-Id header is required")
            await refused(scope, receive, send)
            return
        try:
            session = await self._find(session_id, self._principal(scope, receive))
            if session is not None and scope["method"] == "DELETE" and self.fleet is not None:
                await self.fleet.delete(session)
        except MCPError as exc:
            await _store_down(exc)(scope, receive, send)
            return
        if session is None:
            refused = refusal(
                404, INVALID_REQUEST, "Session not found: it ended or never existed; initialize again"
            )
            await refused(scope, receive, send)
        elif scope["method"] == "DELETE":
            self.sessions.close(session)
            await Response(status_code=204)(scope, receive, send)
        elif not accepted_media(headers.value(b"accept"))[1]:
            await refusal(406, INVALID_REQUEST, "Not Acceptable: the GET stream is text/event-stream")(
                scope, receive, send
            )
        else:
            crowded = self.streams.refusal(session.client)
            if crowded is not None:
                await crowded(scope, receive, send)
                return
            with self.streams.held(session.client) as stopping:
                await get_stream(self, session, headers.value(LAST_EVENT_ID), scope, receive, send, stopping)
