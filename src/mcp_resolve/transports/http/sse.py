"""The legacy HTTP+SSE transport (protocol 2024-11-05), for clients that still speak it: handshake era only.

A client opens a GET stream (`/sse`); its first event, `endpoint`, names
the URL it POSTs its messages to (`/messages/?session_id=...`). Every POST
is answered 202 at once, and everything for the client (responses,
notifications, the server's own questions) goes down the GET stream. The
session *is* that stream: it starts with the GET and ends with it, and a
POST for a session whose stream has closed is 404.

It cannot carry protocol 2026-07-28, whose requests each get their own HTTP
response: a request carrying that version in `_meta` is refused with
-32600, and clients use Streamable HTTP for it (`streamable_http_app`).

Bounds and checks, as on the Streamable HTTP endpoint: Host and Origin
(DNS rebinding), the bearer token of a protected server on the GET and on
every POST (with a tool's `scopes=`), a POST only from the principal that
opened the session, a body size cap (413), the messages waiting for a
session's dispatch and the requests it runs at once (503 past either), a
deadline on every write down the stream (a client that stops reading loses
its session instead of holding the server's writes), and the open streams in all (503) and per
client (429), which bounds the sessions, since each is one stream. Session
ids are unguessable (128 bits).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio
import anyio.abc
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..._logs import configure_logging
from ...errors import INVALID_REQUEST
from ...protocol.jsonrpc import (
    Incoming,
    IncomingNotification,
    IncomingRequest,
    MalformedMessage,
    decode,
    encode,
    error_message,
)
from ...protocol.session import Connection
from ...settings import load_settings
from ._exchange.exchange import SSE_HEADERS
from ._fleet.lifespan import AppLifespan
from ._streams.caps import LongStreams
from ._wire.body import ClientGone, read_body
from ._wire.headers import RequestHeaders
from ._wire.hosts import HostPolicy, OriginPolicy
from .options import DEFAULT_MAX_BODY_BYTES

if TYPE_CHECKING:
    from ...auth.tokens import AccessToken
    from .._serves import ServedServer
    from ._auth.bearer import BearerCheck
    from ._fleet.limits import ServerLimits

__all__ = ["SSEEndpoints", "SSEOptions", "create_sse_app", "serve_sse", "serve_sse_async"]

logger = logging.getLogger("mcp_resolve.http")

MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
_PING = b": ping\n\n"


@dataclass(frozen=True)
class SSEOptions:
    """The knobs of `mcp.sse_app(...)` and `mcp.run(transport="sse", ...)`.

    `allowed_hosts`/`allowed_origins` as for Streamable HTTP (default:
    loopback). `max_streams` bounds the sessions open at once (503 past it)
    and `max_streams_per_client` those of one client, its principal or else
    its address (429). `inbox` bounds the messages of one session waiting to
    be dispatched (a POST past it gets 503), `max_in_flight` the requests
    of one session running at once (a request POSTed past it gets 503).
    `write_timeout`: seconds one write down the stream may wait for a client
    that stopped reading; past it the session ends. `question_timeout`:
    seconds a question to the client waits for its answer.
    """

    sse_path: str = "/sse"
    message_path: str = "/messages/"
    allowed_hosts: Sequence[str] | None = None
    allowed_origins: Sequence[str] | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ping_interval: float = 15.0
    max_streams: int | None = 1000
    max_streams_per_client: int | None = 32
    inbox: int = 64
    max_in_flight: int = 32
    write_timeout: float = 30.0
    question_timeout: float | None = 300.0
    mount_path: str = ""
    """Where a parent app mounts this one, for the `endpoint` event when the parent sets no ASGI
    `root_path` (Starlette's `Mount` does set it, and then this is not needed)."""

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0 or self.ping_interval <= 0 or self.inbox <= 0 or self.max_in_flight <= 0:
            raise ValueError("max_body_bytes, ping_interval, inbox and max_in_flight must be positive")
        if not 0 < self.write_timeout < float("inf"):
            raise ValueError("write_timeout must be positive and finite")
        if not self.message_path.endswith("/"):
            raise ValueError("message_path must end with '/' (it is mounted: '/messages/')")


class _Session:
    """One client's GET stream, its connection, and the messages its POSTs delivered."""

    def __init__(self, server: ServedServer, principal: str | None, client: str, options: SSEOptions) -> None:
        self.id = secrets.token_hex(16)
        self.principal = principal
        self.connection = Connection(server, principal=principal, peer=client)
        self.connection.question_timeout = options.question_timeout
        self.inbox_in, self.inbox = anyio.create_memory_object_stream[Incoming](options.inbox)
        self.lock = anyio.Lock()
        self.send: Send | None = None
        self.gone = False
        self.ended = anyio.Event()
        """Set when a write found the client gone or stalled: the stream then ends the session."""
        self.in_flight = 0
        """Requests POSTed and not yet answered."""
        self.write_timeout = options.write_timeout

    async def write(self, chunk: bytes) -> None:
        """One chunk down the GET stream; once the client is gone or stalled, nothing (the session ends)."""
        async with self.lock:
            if self.gone or self.send is None:
                return
            try:
                with anyio.fail_after(self.write_timeout):
                    await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
            except (OSError, TimeoutError):
                self.gone = True
                self.ended.set()

    async def handle(self, message: IncomingRequest) -> None:
        """Run one request, counted in `in_flight` until it is answered."""
        try:
            await self.connection.handle_request(message, self.sink)
        finally:
            self.in_flight -= 1

    async def sink(self, message: dict[str, Any]) -> None:
        await self.write(b"event: message\ndata: " + encode(message) + b"\n\n")


class SSEEndpoints:
    """The GET stream and the POST endpoint of one app, sharing its live sessions."""

    def __init__(self, server: ServedServer, options: SSEOptions) -> None:
        self.server = server
        self.options = options
        self.hosts = HostPolicy(options.allowed_hosts)
        self.origins = OriginPolicy(options.allowed_origins, self.hosts)
        self.sessions: dict[str, _Session] = {}
        self.streams = LongStreams(options.max_streams, options.max_streams_per_client)
        self.bearer: BearerCheck | None = None
        if server.token_verifier is not None or server.auth is not None:
            from ...auth.tokens import check_protection
            from ._auth.bearer import BearerCheck

            check_protection(server.token_verifier, server.auth)
            self.bearer = BearerCheck(server)
        self.lifespan = AppLifespan(server, self._close_all, None, self.streams.stop)

    def _close_all(self) -> None:
        for session in list(self.sessions.values()):
            session.inbox_in.close()

    # -- checks shared by both endpoints ---------------------------------------------------
    def _screen(self, headers: RequestHeaders) -> Response | None:
        """DNS-rebinding protection: the Host, and the Origin when a browser sends one."""
        if not self.hosts.allows_raw(headers.raw.get(b"host")):
            logger.warning("refused an SSE request for Host %r (allowed_hosts)", headers.value(b"host"))
            return PlainTextResponse("Forbidden: this Host is not allowed", status_code=403)
        origin = headers.value(b"origin")
        if origin is not None and not self.origins.allows(origin):
            return PlainTextResponse("Forbidden: this Origin is not allowed", status_code=403)
        return None

    async def _admit(
        self, scope: Scope, headers: RequestHeaders, receive: Receive, send: Send
    ) -> tuple[bool, AccessToken | None]:
        """Screen and authenticate; (False, None) once the refusal has been sent."""
        refused = self._screen(headers)
        if refused is None and not self.lifespan.running:
            await self.lifespan.ensure()
        if refused is None and self.bearer is not None:
            from ...auth.tokens import AccessToken

            outcome = await self.bearer.authenticate(headers.raw.get(b"authorization"))
            if isinstance(outcome, AccessToken):
                return True, outcome
            await outcome(scope, receive, send)
            return False, None
        if refused is not None:
            await refused(scope, receive, send)
            return False, None
        return True, None

    # -- GET: the session's stream ---------------------------------------------------------
    async def stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":  # HEAD: a stream with no body would hold a session for nothing
            await PlainTextResponse("Method Not Allowed", 405, {"Allow": "GET"})(scope, receive, send)
            return
        headers = RequestHeaders(scope["headers"])
        admitted, token = await self._admit(scope, headers, receive, send)
        if not admitted:
            return
        principal = _principal_of(token)
        client = f"principal {principal}" if principal is not None else _address(scope)
        refused = self.streams.refusal(client)
        if refused is not None:
            await refused(scope, receive, send)
            return
        session = _Session(self.server, principal, client, self.options)
        self.sessions[session.id] = session
        try:
            with self.streams.held(client) as stopped:
                await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
                session.send = send
                prefix = scope.get("root_path") or self.options.mount_path.rstrip("/")
                endpoint = f"{prefix}{self.options.message_path}?session_id={session.id}"
                await session.write(b"event: endpoint\ndata: " + endpoint.encode() + b"\n\n")
                async with anyio.create_task_group() as group:
                    group.start_soon(_until_disconnect, receive, group.cancel_scope)
                    stopped.on_set(group.cancel_scope.cancel)
                    group.start_soon(_until_set, session.ended, group.cancel_scope)
                    group.start_soon(_ping, session, self.options.ping_interval)
                    await self._serve(session)
                    group.cancel_scope.cancel()
        finally:
            del self.sessions[session.id]
            session.inbox_in.close()
            session.connection.fail_questions("the client closed the SSE stream")
            with anyio.CancelScope(shield=True):  # the response ends cleanly even when cancelled
                async with session.lock:
                    stalled, session.gone = session.gone, True
                    if session.send is not None and not stalled:  # a stalled client gets its connection cut
                        with (
                            contextlib.suppress(OSError, TimeoutError),
                            anyio.fail_after(session.write_timeout),
                        ):
                            await send({"type": "http.response.body", "body": b""})

    async def _serve(self, session: _Session) -> None:
        """Dispatch the session's messages until its stream ends; requests run concurrently."""
        connection = session.connection
        connection.standalone = session.sink
        try:
            async with anyio.create_task_group() as group, session.inbox:
                async for message in session.inbox:
                    if isinstance(message, IncomingRequest):
                        group.start_soon(session.handle, message)
                    elif isinstance(message, IncomingNotification):
                        await connection.handle_notification(message)
                    else:
                        connection.deliver_response(message)
                group.cancel_scope.cancel()
        finally:
            connection.standalone = None

    # -- POST: one message for a session ---------------------------------------------------
    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await PlainTextResponse("Method Not Allowed", 405, {"Allow": "POST"})(scope, receive, send)
            return
        headers = RequestHeaders(scope["headers"])
        admitted, token = await self._admit(scope, headers, receive, send)
        if not admitted:
            return
        response = await self._deliver(scope, headers, receive, token)
        await response(scope, receive, send)

    async def _deliver(
        self, scope: Scope, headers: RequestHeaders, receive: Receive, token: AccessToken | None
    ) -> Response:
        ids = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_id")
        if not ids:
            return PlainTextResponse("session_id is required", status_code=400)
        session = self.sessions.get(ids[0])
        if session is None or session.principal != _principal_of(token):  # another's session: as unknown
            return PlainTextResponse("Could not find session", status_code=404)
        try:
            body = await read_body(receive, self.options.max_body_bytes, headers.raw.get(b"content-length"))
        except ClientGone:
            return Response(status_code=400)
        if body is None:
            return PlainTextResponse("Payload Too Large", status_code=413)
        try:
            message = decode(body)
        except MalformedMessage:
            return PlainTextResponse("Could not parse message", status_code=400)
        if isinstance(message, IncomingRequest):
            meta = message.params.get("_meta")
            if isinstance(meta, dict) and MODERN_META_KEY in meta:
                await session.sink(error_message(message.id, INVALID_REQUEST, _NO_MODERN))
                return PlainTextResponse("Accepted", status_code=202)
            if self.bearer is not None and token is not None:
                refused = self.bearer.scope_refusal(token, message)
                if refused is not None:
                    return refused
            message.access_token = token
            message.headers = headers
            if session.in_flight >= self.options.max_in_flight:
                return PlainTextResponse(
                    "Service Unavailable: too many requests in flight", 503, {"Retry-After": "1"}
                )
        counted = isinstance(message, IncomingRequest)
        try:
            session.inbox_in.send_nowait(message)
        except anyio.WouldBlock:
            return PlainTextResponse(
                "Service Unavailable: too many messages waiting", 503, {"Retry-After": "1"}
            )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return PlainTextResponse("Could not find session", status_code=404)
        if counted:
            session.in_flight += 1  # from queued to answered; `_Session.handle` counts it out
        return PlainTextResponse("Accepted", status_code=202)


_NO_MODERN = (
    "Invalid Request: protocol 2026-07-28 is not served over the legacy HTTP+SSE transport; "
    "use this server's Streamable HTTP endpoint"
)


def _principal_of(token: AccessToken | None) -> str | None:
    if token is None:
        return None
    from ...auth.tokens import principal_of

    return principal_of(token)


def _address(scope: Scope) -> str:
    client = scope.get("client")
    return f"address {client[0]}" if client else "address unknown"


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _until_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _ping(session: _Session, interval: float) -> None:
    while not session.gone:
        await anyio.sleep(interval)
        await session.write(_PING)


class _Asgi:
    """A bound endpoint as a bare ASGI app (Starlette routes call it with scope, receive, send)."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


def create_sse_app(server: ServedServer, **options: Any) -> Starlette:
    """A Starlette app serving `server` over HTTP+SSE (`SSEOptions` fields as keywords).

    `allowed_hosts`/`allowed_origins` not given come from MCP_RESOLVE_ALLOWED_HOSTS
    and _ALLOWED_ORIGINS when set. A protected server also serves its Protected
    Resource Metadata (and, as its own authorization server, its endpoints).
    """
    from starlette.routing import Mount

    settings = load_settings()
    for name in ("allowed_hosts", "allowed_origins"):
        if options.get(name) is None and getattr(settings, name) is not None:
            options[name] = getattr(settings, name)
    sse_options = SSEOptions(**options)
    endpoints = SSEEndpoints(server, sse_options)
    routes: list[Any] = [
        Route(sse_options.sse_path, _Asgi(endpoints.stream), methods=["GET"]),
        Mount(sse_options.message_path, app=_Asgi(endpoints.post)),
    ]
    if endpoints.bearer is not None:
        from ._auth.prm import metadata_routes

        routes.extend(metadata_routes(server, sse_options.sse_path))
        if server.auth_server_provider is not None:
            from ._auth.authorization_server import authorization_server_routes
            from .options import HttpOptions

            routes.extend(authorization_server_routes(server, HttpOptions()))
    app = Starlette(routes=routes, lifespan=endpoints.lifespan)
    app.state.mcp_sse = endpoints
    return app


def _prepare(
    server: ServedServer,
    host: str | None,
    port: int | None,
    log_level: str | None,
    limits: ServerLimits | None,
    extra_routes: Sequence[Any],
    options: dict[str, Any],
) -> tuple[Starlette, dict[str, Any]]:
    from ._app import default_allowed_hosts
    from ._fleet.limits import ServerLimits, uvicorn_options

    settings = load_settings(log_level=log_level)
    host = settings.host if host is None else host
    level = configure_logging(settings.log_level)
    server.deployment.check(1)
    limits = limits or ServerLimits()
    if options.get("allowed_hosts") is None:
        options["allowed_hosts"] = settings.allowed_hosts or default_allowed_hosts(host)
    options.setdefault("max_streams", limits.stream_connections)
    app = create_sse_app(server, **options)
    app.router.routes.extend(extra_routes)
    config: dict[str, Any] = {
        "host": host,
        "port": settings.port if port is None else port,
        "log_level": level.lower() if level in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG") else "info",
        "timeout_graceful_shutdown": 5,
        **uvicorn_options(limits, workers=1, trusted_proxies=settings.trusted_proxies),
    }
    return app, config


def serve_sse(
    server: ServedServer,
    *,
    host: str | None = None,
    port: int | None = None,
    log_level: str | None = None,
    limits: ServerLimits | None = None,
    extra_routes: Sequence[Any] = (),
    **options: Any,
) -> None:
    """Serve HTTP+SSE under uvicorn until stopped (one process: sessions live in it)."""
    app, config = _prepare(server, host, port, log_level, limits, extra_routes, options)
    uvicorn.run(app, **config)


async def serve_sse_async(
    server: ServedServer,
    *,
    host: str | None = None,
    port: int | None = None,
    log_level: str | None = None,
    limits: ServerLimits | None = None,
    extra_routes: Sequence[Any] = (),
    **options: Any,
) -> None:
    """`serve_sse` in the running event loop."""
    app, config = _prepare(server, host, port, log_level, limits, extra_routes, options)
    await uvicorn.Server(uvicorn.Config(app, **config)).serve()
