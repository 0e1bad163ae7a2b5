"""One connection's dispatch: requests in flight, answers to our own requests, cancellation.

A connection is whatever a transport holds open: a stdio process, an
in-memory pair, or one HTTP session (handshake era). A 2026-07-28 request
carries all its context, so a connection hands it to `modern.respond` (and
an HTTP POST of one needs no connection at all). Messages toward the client
go through a `Sink` chosen per request, which is how an HTTP response stream
carries exactly its own request's notifications and questions.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from mcp_types import PROTOCOL_VERSION_META_KEY

from .._concurrency import cancel_scope
from ..context import Context, RequestScope
from ..errors import INTERNAL_ERROR, INVALID_REQUEST, MCPError
from . import handshake, modern
from .jsonrpc import (
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    MalformedMessage,
    Sink,
    decode,
    failure_message,
    is_request_id,
    notifier,
    result_message,
)
from .middleware import ClientView, ServerRequestContext, dump_result, run_chain

if TYPE_CHECKING:
    from ..resolve.run import Questioner
    from .hooks import RequestWatch
    from .serves import ServesRequests

__all__ = ["Connection", "Sink"]

logger = logging.getLogger("mcp_resolve.protocol")


class _Waiter:
    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.response: IncomingResponse | None = None


class Connection:
    """Dispatch for one client connection, on either era."""

    def __init__(
        self,
        server: ServesRequests,
        *,
        headers: Mapping[str, str] | None = None,
        principal: str | None = None,
        peer: str | None = None,
    ) -> None:
        self.server = server
        self.headers = headers
        self.principal = principal
        self.peer = peer or f"connection {secrets.token_hex(8)}"
        """The client of this connection, for per-client bounds (`RequestScope.peer`)."""
        self.handshake: handshake.HandshakeState | None = None
        self._waiting: dict[int | str, _Waiter] = {}
        self._in_flight: dict[int | str, anyio.CancelScope] = {}

    # The rest starts out the same on every connection (a 2026-07-28 POST makes one per request).
    standalone: Sink | None = None
    """Where messages that belong to no request go (stdout, an HTTP session's GET stream), while one is open."""
    question_timeout: float | None = None
    """Seconds a question to the client (`send_request`) waits for its answer; None: as long as the call runs.
    HTTP sessions set it (`HttpOptions.question_timeout`): an answer lost on the way must not hold a call forever."""
    _last_request_id = 0  # of our own requests to the client
    _running = 0  # requests started by `receive` and not yet answered
    _initialized_bare = False  # `notifications/initialized` came with no `initialize` before it
    _idle: anyio.Event | None = None  # only while `serve` waits for the last answers
    # The ids of open subscriptions/listen requests (a set once there is one).
    _listening: frozenset[int | str] | set[int | str] = frozenset()
    _session_started: float | None = None  # monotonic, from the handshake until `session_ended`

    def _session_opened(self) -> None:
        self.server.connections.add(self)
        if self._session_started is None:
            self._session_started = time.monotonic()

    def session_ended(self, *, http: bool = False) -> None:
        """The handshake-era session is over (stdin closed, DELETE, expiry): telemetry records its length once."""
        started, self._session_started = self._session_started, None
        telemetry = self.server.telemetry
        if started is None or telemetry is None or not telemetry.active:
            return
        version = None if self.handshake is None else self.handshake.protocol_version
        telemetry.session_ended(time.monotonic() - started, version, http=http)

    # -- stream transports -----------------------------------------------------------------
    async def serve(
        self, incoming: anyio.abc.ObjectReceiveStream[Any], sink: Sink, *, drain_seconds: float = 0.0
    ) -> None:
        """Serve until `incoming` ends; requests run concurrently, each answered through `sink`.

        When the input ends, requests still running get `drain_seconds` to
        answer (a client that writes its requests and closes stdin still
        hears back); whatever is left then is cancelled.
        """
        self.standalone = sink
        try:
            async with anyio.create_task_group() as group:
                async with incoming:
                    async for raw in incoming:
                        await self.receive(raw, sink, group)
                self.fail_questions("the client closed the connection")
                self._end_listening()
                if self._running and drain_seconds > 0:
                    self._idle = anyio.Event()
                    with anyio.move_on_after(drain_seconds):
                        await self._idle.wait()
                group.cancel_scope.cancel()
        finally:
            self.standalone = None
            self.session_ended()

    async def receive(self, raw: Any, sink: Sink, group: anyio.abc.TaskGroup) -> None:
        """Take one raw message; a request is started in `group`, everything else handled now."""
        try:
            message = decode(raw)
        except MalformedMessage as exc:
            await sink(exc.answer())
            return
        if isinstance(message, IncomingRequest):
            self._running += 1
            group.start_soon(self._run_request, message, sink)
        elif isinstance(message, IncomingResponse):
            self.deliver_response(message)
        else:
            await self.handle_notification(message)

    # -- messages ------------------------------------------------------------------------
    def deliver_response(self, response: IncomingResponse) -> bool:
        waiter = self._waiting.pop(response.id, None)
        if waiter is None:
            logger.debug("dropping a response to unknown request id %r", response.id)
            return False
        waiter.response = response
        waiter.event.set()
        return True

    async def handle_notification(self, notification: IncomingNotification) -> None:
        """Act on a notification; nothing it carries can fail the connection (JSON-RPC answers none)."""
        if self.server.middleware:
            await self._notify_through_middleware(notification)
        else:
            await self._act_on(notification)

    async def _notify_through_middleware(self, notification: IncomingNotification) -> None:
        """A notification through the middleware chain (its return ignored, its failure only logged).

        A cancellation takes effect before the chain runs, as in the official
        SDK: a middleware observes it but cannot stop it.
        """
        method = notification.method
        if method == "notifications/cancelled":
            await self._act_on(notification)

        async def inner(ctx: ServerRequestContext[Any, Any]) -> None:
            if ctx.method != "notifications/cancelled":
                await self._act_on(IncomingNotification(ctx.method, dict(ctx.params or {})))

        try:
            await run_chain(self.server.middleware, self._context(method, notification.params, None), inner)
        except Exception:  # nobody to answer: the author reads it in the log
            logger.exception("middleware failed on the notification %s", method)

    def _context(
        self, method: str, params: dict[str, Any], request: IncomingRequest | None
    ) -> ServerRequestContext[Any, Any]:
        """The middleware's view of one handshake-era message (or a notification on a stream transport)."""
        meta = params.get("_meta")
        state = self.handshake
        if isinstance(meta, dict) and isinstance(meta.get(PROTOCOL_VERSION_META_KEY), str):
            version, era = meta[PROTOCOL_VERSION_META_KEY], "modern"
        else:
            version, era = ("" if state is None else state.protocol_version), "handshake"
        headers = self.headers if request is None or request.headers is None else request.headers
        return ServerRequestContext(
            method=method,
            params=params,
            request_id=None if request is None else request.id,
            meta=meta if isinstance(meta, dict) else None,
            protocol_version=version,
            lifespan_context=self.server.lifespan_context,
            session=ClientView(
                None if state is None else state.client_capabilities,
                None if state is None else state.client_info,
                version,
            ),
            headers=headers,
            era=era,
        )

    async def _act_on(self, notification: IncomingNotification) -> None:
        method, params = notification.method, notification.params
        if method == "notifications/initialized":
            if self.handshake is not None:
                self.handshake.initialized = True
            else:
                # No `initialize` came first. The session opens on the next handshake-era
                # request (see `_dispatch`), not here: a 2026-07-28 client never gets one.
                self._initialized_bare = True
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            if not is_request_id(request_id):
                logger.warning("ignored notifications/cancelled: requestId is not a string or an integer")
                return
            self.cancel_request(request_id)
        elif method == "notifications/roots/list_changed":
            try:
                await self.server.roots_changed()
            except Exception:  # the author's handler: its failure is theirs to read, not the client's
                logger.exception("the roots-changed handler failed")
        # Unknown notifications get no reply, by JSON-RPC's rules.

    def cancel_request(self, request_id: int | str) -> bool:
        """Cancel the client's request `request_id` if it is running here (it then gets no response); True if so."""
        scope = self._in_flight.get(request_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    def fail_questions(self, message: str) -> None:
        """Fail every question to the client still waiting for its answer, with a -32603 saying `message`.

        For when the answers cannot come: the client is gone, or (in a fleet)
        the channel that would carry them from another worker dropped.
        """
        for request_id in list(self._waiting):
            self.deliver_response(
                IncomingResponse(request_id, None, {"code": INTERNAL_ERROR, "message": message})
            )

    def _end_listening(self) -> None:
        """The input ended: `subscriptions/listen` streams, which only a client ends, end with it.

        Nobody is left to read them, and the drain that gives other requests
        time to answer would otherwise wait its whole length for them.
        """
        for request_id in self._listening:
            scope = self._in_flight.get(request_id)
            if scope is not None:
                scope.cancel()

    async def _run_request(self, request: IncomingRequest, sink: Sink) -> None:
        try:
            await self.handle_request(request, sink)
        finally:
            self._running -= 1
            if self._running == 0 and self._idle is not None:
                self._idle.set()

    async def handle_request(self, request: IncomingRequest, sink: Sink) -> None:
        with cancel_scope() as scope:
            self._in_flight[request.id] = scope
            if request.method == "subscriptions/listen":
                self._listening = {*self._listening, request.id}
            try:
                response = await self.respond(request, sink)
            finally:
                self._in_flight.pop(request.id, None)
                if self._listening:
                    self._listening = self._listening - {request.id}
        if scope.cancel_called:
            return  # a cancelled request gets no response
        await sink(response)

    async def respond(
        self, request: IncomingRequest, sink: Sink, watch: RequestWatch | None = None
    ) -> dict[str, Any]:
        """The response message for `request` (a result or an error); never raises for bad input.

        On an instrumented server the telemetry serves a handshake-era request,
        calling this again with its `watch` (`modern.respond` does the same for
        its own); without it, the cost is one check.
        """
        meta = request.params.get("_meta")
        if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
            headers = request.headers if request.headers is not None else self.headers
            if request.peer is None:
                request.peer = self.peer
            return await modern.respond(self.server, request, meta, sink, self.principal, headers)
        telemetry = self.server.telemetry
        if watch is None and telemetry is not None and telemetry.active:
            headers = request.headers if request.headers is not None else self.headers
            version = None if self.handshake is None else self.handshake.protocol_version
            return await telemetry.observe(
                request,
                meta,
                headers,
                partial(self.respond, request, sink),
                modern=False,
                protocol_version=version,
            )
        if self.server.middleware:
            return await self._respond_through_middleware(request, sink, watch)
        try:
            return result_message(request.id, await self._dispatch(request, meta, sink, watch))
        except Exception as exc:
            return failure_message(request, exc)

    async def _respond_through_middleware(
        self, request: IncomingRequest, sink: Sink, watch: RequestWatch | None
    ) -> dict[str, Any]:
        """`respond` on a server with middleware: the chain wraps all of `_dispatch`, `initialize` included.

        An `initialize` commits the session only once the whole chain has
        succeeded, so a middleware that refuses after `call_next` leaves no
        session behind. A middleware that answers `initialize` itself still
        opens the session the client asked for.
        """
        settled: list[handshake.HandshakeState] = []

        async def inner(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
            params = ctx.params if isinstance(ctx.params, dict) else dict(ctx.params or {})
            if ctx.method == "initialize":
                state, result = handshake.initialize(self.server, params)
                settled.append(state)
                return result
            to = request
            if ctx.method != request.method or params is not request.params:
                to = IncomingRequest(request.id, ctx.method, params, request.headers, request.access_token)
            return await self._dispatch(to, to.params.get("_meta"), sink, watch)

        try:
            ctx = self._context(request.method, request.params, request)
            result = dump_result(await run_chain(self.server.middleware, ctx, inner))
            if request.method == "initialize":
                self.handshake = (
                    settled[-1] if settled else handshake.initialize(self.server, request.params)[0]
                )
                self._session_opened()
            return result_message(request.id, handshake.finish_result(result))
        except Exception as exc:
            return failure_message(request, exc)

    def spread_request_ids(self) -> None:
        """Number our own requests from a random point: a session several workers serve (a fleet)
        must not have two of them send a question under the same id."""
        if self._last_request_id < 1 << 20:
            self._last_request_id = secrets.randbelow(1 << 40) << 12

    async def send_request(self, method: str, params: dict[str, Any], sink: Sink) -> dict[str, Any]:
        """Ask the client something mid-call (handshake era) and wait for its answer."""
        self._last_request_id = request_id = self._last_request_id + 1
        waiter = _Waiter()
        self._waiting[request_id] = waiter
        timeout = self.question_timeout
        try:
            await sink({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            with anyio.move_on_after(timeout if timeout is not None else math.inf):
                await waiter.event.wait()
            if waiter.response is None:  # the deadline passed; the question is withdrawn like a cancelled one
                await self._withdraw(request_id, sink)
        except anyio.get_cancelled_exc_class():
            await self._withdraw(request_id, sink)
            raise
        finally:
            self._waiting.pop(request_id, None)
        response = waiter.response
        if response is None:
            raise MCPError(
                INTERNAL_ERROR, f"the client did not answer {method} within {timeout:g} s (question_timeout)"
            )
        if response.error is not None:
            # The client's error object is its own: anything but an integer code or a string message
            # is read as a plain internal error rather than trusted.
            error = response.error
            code, text = error.get("code"), error.get("message")
            raise MCPError(
                code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
                text if isinstance(text, str) else "",
                error.get("data"),
            )
        return response.result or {}

    async def _withdraw(self, request_id: int, sink: Sink) -> None:
        """Tell the client a question is moot (its call failed or was cancelled), so no form lingers."""
        with anyio.move_on_after(1, shield=True):  # best effort: never hold up the cancellation for long
            try:
                await sink(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": request_id, "reason": "the request that asked was abandoned"},
                    }
                )
            except Exception:  # the channel may be gone already; there is no one left to tell
                logger.debug("could not withdraw request %r", request_id)

    async def resource_updated(self, uri: str) -> bool:
        """Tell this session's client `uri` changed, if it subscribed; True if told."""
        if self.handshake is None or uri not in self.handshake.subscriptions:
            return False
        return await self.notify("notifications/resources/updated", {"uri": uri})

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """Send a notification outside any request (handshake era), if a channel is open; True if sent."""
        send = self.standalone
        if self.handshake is None or send is None:
            return False
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            await send(message)
        except Exception:  # the channel closed under us: the client hears nothing, the server carries on
            logger.debug("could not send %s", method, exc_info=True)
            return False
        return True

    # -- dispatch ------------------------------------------------------------------------
    async def _dispatch(
        self, request: IncomingRequest, meta: Any, sink: Sink, watch: RequestWatch | None = None
    ) -> dict[str, Any]:
        method, params = request.method, request.params
        if method == "initialize":
            self.handshake, result = handshake.initialize(self.server, params)
            self._session_opened()
            return result
        if self.handshake is None:
            if method == "ping":
                return {}
            if self._initialized_bare:
                # The client declared the handshake complete without one. The official SDK then
                # serves it as a session that declared nothing, so so do we: a tool that needs no
                # capability works, and one whose resolver asks gets the specific -32021 naming
                # the missing capability rather than a generic refusal. Until the client says
                # `initialized` (or `initialize`s), every method but ping is refused below.
                self.handshake = handshake.undeclared_session()
                self._session_opened()
                return await self._dispatch_handshake(
                    request, meta if isinstance(meta, dict) else {}, sink, watch
                )
            raise MCPError(
                INVALID_REQUEST,
                f"Invalid Request: {method} before initialization; send 'initialize' first "
                f"(or, on protocol 2026-07-28, put {PROTOCOL_VERSION_META_KEY!r} in params._meta)",
            )
        return await self._dispatch_handshake(request, meta if isinstance(meta, dict) else {}, sink, watch)

    async def _dispatch_handshake(
        self, request: IncomingRequest, meta: dict[str, Any], sink: Sink, watch: RequestWatch | None = None
    ) -> dict[str, Any]:
        state = self.handshake
        assert state is not None
        method = request.method
        if method == "logging/setLevel":
            return handshake.set_level(state, request.params)
        forwarded_subscription = False
        if method in ("resources/subscribe", "resources/unsubscribe"):
            uri, held = request.params.get("uri"), set(state.subscriptions)
            answer = handshake.subscribe(state, method, request.params)
            try:  # a server serving the method itself (a proxy forwards it) runs it too, below
                self.server.handler(method)
            except MCPError:
                return answer
            forwarded_subscription = method == "resources/subscribe" and uri not in held
        if method == "ping":
            return {}

        async def send_request(m: str, p: dict[str, Any]) -> dict[str, Any]:
            return await self.send_request(m, p, sink)

        handler = self.server.handler(method)
        questioner: Questioner = handshake.LiveQuestioner(send_request)
        scope = RequestScope(
            request_id=request.id,
            method=method,
            era="handshake",
            protocol_version=state.protocol_version,
            client_capabilities=state.client_capabilities,
            client_info=state.client_info,
            log_level=state.log_level,
            progress_token=meta.get("progressToken"),
            meta=meta,
            send_notification=notifier(sink),
            send_request=send_request,
            lifespan_context=self.server.lifespan_context,
            server=self.server,
            headers=request.headers if request.headers is not None else self.headers,
            principal=self.principal,
            access_token=request.access_token,
            questioner=questioner if watch is None else watch.questioner(questioner),
            peer=request.peer or self.peer,
            close_sse_stream=request.close_stream,
        )
        try:
            result = await handler(request.params, Context(scope, watch))
        except BaseException:
            if forwarded_subscription:  # the server refused it: the session does not hold it either
                state.subscriptions.discard(request.params["uri"])
            raise
        return handshake.finish_result(result)
