"""Handshake-era sessions shared by a fleet: any worker serves any request of any session.

Why sessions survive rather than stick: everything `initialize` settles is
data (version, capabilities, client info, log level, subscriptions, the
principal), so it lives in the session store and a worker that never saw
the session loads it on its first request (each request re-reads it: a
session deleted or expired anywhere is gone everywhere at once). A worker
that dies takes with it only the calls it was running: their clients get an
error (or, resuming with Last-Event-ID, an error answer to the call), and
every later request of the session goes to a live worker with its session
intact. No routing by session is needed, so plain round-robin works for
both eras and losing a worker does not end anyone's session.

The one thing a worker holds that another cannot: a call waiting for the
client's answer to a question it asked mid-call. The answer is a POST that
may reach any worker; one that does not hold the waiting call broadcasts it
on the session channel, and the worker that does delivers it. Question ids
start at a random offset per worker and session, so two workers asking the
same client at once never reuse an id. A cancellation is forwarded the same
way, and a change to the session (a new log level, a subscription) is saved
and announced so other workers reload it.

The store failing fails the request: 503 with a JSON-RPC -32603 naming the
session store, never "session not found" (that would make clients start
over) and never a guess.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from typing import TYPE_CHECKING, Any

from ....errors import INTERNAL_ERROR, MCPError
from ....protocol.handshake import HandshakeState
from ....protocol.jsonrpc import (
    IncomingNotification,
    IncomingRequest,
    IncomingResponse,
    Sink,
    error_message,
    is_request_id,
)

if TYPE_CHECKING:
    from ....stores.sessions import SessionStore
    from ..._serves import ServedServer
    from .._exchange.sessions import Session, Sessions

__all__ = ["SessionFleet", "plausible_session_id"]

logger = logging.getLogger("mcp_resolve.http")

_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{16,128}")
STATEFUL_METHODS = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})


def plausible_session_id(session_id: str) -> bool:
    """Whether `session_id` could be one we issued: anything else is "not found" without a store lookup."""
    return _SESSION_ID.fullmatch(session_id) is not None


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def record_of(session: Session) -> dict[str, Any]:
    state = session.connection.handshake
    assert state is not None
    return {
        "principal": session.principal,
        "client": session.client,
        "version": state.protocol_version,
        "capabilities": state.client_capabilities,
        "info": state.client_info,
        "log": state.log_level,
        "initialized": state.initialized,
        "subscriptions": sorted(state.subscriptions),
    }


def _apply(session: Session, record: dict[str, Any]) -> None:
    state = session.connection.handshake
    if state is None:
        state = session.connection.handshake = HandshakeState(
            str(record["version"]), dict(record.get("capabilities") or {}), record.get("info")
        )
    state.log_level = record.get("log")
    state.initialized = bool(record.get("initialized"))
    state.subscriptions = set(record.get("subscriptions") or ())


class SessionFleet:
    """The bridge between this worker's `Sessions` table and the fleet's `SessionStore`."""

    def __init__(self, server: ServedServer, sessions: Sessions, store: SessionStore) -> None:
        self.server = server
        self.sessions = sessions
        self.store = store
        self.ttl = sessions.idle_timeout
        self._by_digest: dict[str, Session] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        sessions.on_evicted = self._evicted

    async def run(self) -> None:
        """Listen to the session channel, and to the bus for other workers' change notifications (lifespan)."""
        self.store.on_message(self._message)
        self.store.on_lost(self._lost)
        notifications = self.server.notifications  # its bus listener reaches this worker's GET streams
        start = getattr(notifications.bus, "start", None)
        try:
            if start is not None:
                await start()
        except Exception:  # Redis down at startup: the subscriber keeps trying by itself
            logger.warning("the subscription bus is not reachable yet; it keeps trying")
        await asyncio.Event().wait()

    def _track(self, session: Session) -> None:
        if len(self._by_digest) > 2 * len(self.sessions) + 64:  # forget sessions closed locally (idle sweeps)
            self._by_digest = {d: s for d, s in self._by_digest.items() if not s.closed.is_set()}
        self._by_digest[_digest(session.id)] = session
        session.connection.spread_request_ids()  # questions get ids no other worker uses for this session

    async def opened(self, session: Session) -> None:
        """A new session: saved before its id is sent, so its next request may go to any worker."""
        self._track(session)
        await self.store.save(session.id, record_of(session), self.ttl, self.sessions.limit)

    async def changed(self, session: Session) -> None:
        """Save what a request changed (log level, subscriptions) and have other workers reload it."""
        await self.store.save(session.id, record_of(session), self.ttl, self.sessions.limit)
        await self.store.broadcast({"t": "reload", "s": _digest(session.id)})

    async def find(self, session_id: str, principal: str | None) -> Session | None:
        """The session, adopted from the store if this worker never saw it; None if it is not (or no longer) there."""
        if not plausible_session_id(session_id):
            return None
        record = await self.store.load(session_id, self.ttl)
        local = self.sessions.peek(session_id)
        if record is None:
            if local is not None:
                self.forget(local)
            return None
        if record.get("principal") != principal:
            return None
        if local is None:
            local = self.sessions.new(self.server, principal, str(record.get("client")))
            local.id = session_id
            _apply(local, record)
            self.server.connections.add(local.connection)
            self.sessions.add(local)
            self._track(local)
        else:
            _apply(local, record)
            local.last_seen = self.sessions.clock()
        return local

    async def alive(self, session: Session) -> bool:
        """Whether the session still exists fleet-wide (checked by long-lived GET streams between pings)."""
        try:
            return await self.store.load(session.id, self.ttl) is not None
        except Exception:
            return True  # the store being down says nothing about the session; the next request will tell

    async def delete(self, session: Session) -> None:
        await self.store.delete(session.id)
        self.forget(session)
        await self.store.broadcast({"t": "close", "s": _digest(session.id)})

    def _evicted(self, session: Session) -> None:
        """Closed here to make room for its client's new session: its record goes too, unless another
        worker served it since (then it is in use, and stays)."""
        self._by_digest.pop(_digest(session.id), None)
        idle = self.sessions.clock() - session.last_seen
        task = asyncio.get_running_loop().create_task(self._delete_idle(session.id, idle))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _delete_idle(self, session_id: str, idle: float) -> None:
        try:
            await self.store.delete_idle(session_id, idle, self.ttl)
        except Exception:  # the record then expires when idle, as before
            logger.warning("could not delete the record of a session closed for its client's new one")

    def forget(self, session: Session) -> None:
        self._by_digest.pop(_digest(session.id), None)
        self.sessions.close(session)

    async def answer(self, session: Session, response: IncomingResponse) -> None:
        """An answer to a question: to the local call waiting for it, else to the worker that asked."""
        if session.connection.deliver_response(response):
            return
        message: dict[str, Any] = {"t": "answer", "s": _digest(session.id), "id": response.id}
        message.update({"result": response.result, "error": response.error})
        await self.store.broadcast(message)

    async def cancel(self, session: Session, notification: IncomingNotification) -> None:
        """`notifications/cancelled`: acted on here, and on whichever worker runs the request."""
        await session.connection.handle_notification(notification)
        request_id = notification.params.get("requestId")
        if is_request_id(request_id):
            await self.store.broadcast({"t": "cancel", "s": _digest(session.id), "id": request_id})

    async def route(self, session: Session, message: IncomingResponse | IncomingNotification) -> None:
        """A message of a shared session that is not a request: routed to whichever worker needs it."""
        if isinstance(message, IncomingResponse):
            await self.answer(session, message)
        elif message.method == "notifications/cancelled":
            await self.cancel(session, message)
        else:
            await session.connection.handle_notification(message)
            if message.method == "notifications/initialized":
                await self.changed(session)

    def sink_for(self, session: Session, message: IncomingRequest, fresh: bool, sink: Sink) -> Sink:
        """A request's sink, saving the session to the store before the request's answer leaves.

        A new session is saved before its id reaches the client, so its next
        request may land on any worker; a change (log level, subscriptions)
        before the client hears it took effect. A store that fails turns the
        answer into the store's error (and a new session is then never
        opened). A question goes out only while answers can be routed back.
        """
        saving = fresh or message.method in STATEFUL_METHODS

        async def fleet_sink(outgoing: dict[str, Any]) -> None:
            if "method" in outgoing and "id" in outgoing:
                self.check_can_ask()
            if (
                saving
                and outgoing.get("id") == message.id
                and "result" in outgoing
                and "method" not in outgoing
            ):
                try:
                    await (self.opened(session) if fresh else self.changed(session))
                except MCPError as exc:
                    outgoing = error_message(message.id, exc.code, exc.message)
            await sink(outgoing)

        return fleet_sink

    def _lost(self) -> None:
        """The session channel dropped: answers broadcast meanwhile are gone, so the questions waiting fail now."""
        for session in list(self._by_digest.values()):
            session.connection.fail_questions("session store unavailable: the answer could not be routed")

    def check_can_ask(self) -> None:
        """Before a question goes out: its answer may reach another worker, so the channel must be up."""
        if not self.store.connected:
            raise MCPError(
                INTERNAL_ERROR, "session store unavailable: a question's answer could not be routed"
            )

    def healthy(self) -> bool:
        return self.store.connected

    def _message(self, message: dict[str, Any]) -> None:
        session = self._by_digest.get(str(message.get("s")))
        if session is None or session.closed.is_set():
            return
        kind, request_id = message.get("t"), message.get("id")
        if kind == "answer" and is_request_id(request_id):
            result, error = message.get("result"), message.get("error")
            if (result is None or isinstance(result, dict)) and (error is None or isinstance(error, dict)):
                session.connection.deliver_response(IncomingResponse(request_id, result, error))
        elif kind == "cancel" and is_request_id(request_id):
            session.connection.cancel_request(request_id)
        elif kind == "close":
            self.forget(session)
        elif kind == "reload":
            task = asyncio.get_running_loop().create_task(self._reload(session))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _reload(self, session: Session) -> None:
        try:
            record = await self.store.load(session.id, self.ttl)
        except Exception:
            return
        if record is None:
            self.forget(session)
        else:
            _apply(session, record)
