"""Handshake-era HTTP sessions: one `Connection` per `Mcp-Session-Id`, from `initialize` to DELETE.

A session is what ties the POSTs of one 2025-era client together: its
negotiated version and capabilities, and the server-to-client questions whose
answers arrive as separate POSTs. Session ids are unguessable (they are the
only thing standing between a caller and someone else's session) and a session
is bound to the principal that opened it. Sessions are capped in all and per
client, and idle ones are swept on a timer, so clients that vanish without
DELETE do not accumulate and one client cannot take every session.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from ...._concurrency import cancel_scope
from ....protocol.session import Connection

if TYPE_CHECKING:
    from ..._serves import ServedServer

__all__ = ["Session", "Sessions"]


class Session:
    def __init__(
        self, server: ServedServer, principal: str | None, client: str, clock: Callable[[], float]
    ) -> None:
        self.id = secrets.token_urlsafe(32)
        self.principal = principal
        self.client = client
        self.connection = Connection(server, principal=principal, peer=client)
        self.closed = anyio.Event()
        self.clock = clock
        self.last_seen = clock()
        self._active: set[anyio.CancelScope] = set()

    @property
    def busy(self) -> bool:
        return bool(self._active)

    @contextmanager
    def activity(self) -> Iterator[anyio.CancelScope]:
        """Mark a request's work or a GET stream as in progress: the session is busy (never idle-expired)
        while it runs, and closing the session cancels it (the HTTP response itself still ends cleanly).

        Yields the scope closing cancels (a GET stream cancels it too when the server stops)."""
        with cancel_scope() as scope:
            self._active.add(scope)
            try:
                yield scope
            finally:
                self._active.discard(scope)
                self.last_seen = self.clock()

    def close(self) -> None:
        self.closed.set()
        self.connection.session_ended(http=True)
        for scope in list(self._active):
            scope.cancel()


class Sessions:
    """The live sessions, bounded in all and per client, and swept of idle ones.

    A client is its principal when authenticated, else its address (the
    address uvicorn reports, which is the proxy's unless uvicorn is told to
    trust its forwarding headers). A client at its own cap loses its least
    recently used idle session to the new one, so a client that never says
    DELETE keeps working while it cannot crowd anyone else out.
    """

    def __init__(
        self,
        idle_timeout: float | None,
        limit: int | None,
        per_client: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        question_timeout: float | None = None,
    ) -> None:
        self.idle_timeout = idle_timeout
        self.question_timeout = question_timeout
        self.limit = limit
        self.per_client = per_client
        self.clock = clock
        self._by_id: dict[str, Session] = {}
        self._by_client: dict[str, dict[str, Session]] = {}
        self.on_evicted: Callable[[Session], None] | None = None
        """Told of each session closed to make room for its client's new one (a fleet deletes its record)."""

    def __len__(self) -> int:
        return len(self._by_id)

    def full(self) -> bool:
        """Whether a new session must wait until others end (idle ones are dropped first)."""
        if self.limit is None:
            return False
        self.sweep()
        return len(self._by_id) >= self.limit

    def room_for(self, client: str) -> bool:
        """Whether `client` may open one more session, after closing its oldest idle one if at its cap."""
        if self.per_client is None:
            return True
        own = self._by_client.get(client)
        if own is None or len(own) < self.per_client:
            return True
        idle = [session for session in own.values() if not session.busy]
        if not idle:
            return False
        evicted = min(idle, key=lambda session: session.last_seen)
        self.close(evicted)
        if self.on_evicted is not None:
            self.on_evicted(evicted)
        return True

    def new(self, server: ServedServer, principal: str | None, client: str) -> Session:
        """A session that exists only once `add`ed (after its `initialize` succeeded)."""
        session = Session(server, principal, client, self.clock)
        session.connection.question_timeout = self.question_timeout
        return session

    def add(self, session: Session) -> None:
        self.sweep()
        self._by_id[session.id] = session
        self._by_client.setdefault(session.client, {})[session.id] = session

    def get(self, session_id: str, principal: str | None) -> Session | None:
        """The live session, or None; another principal's session is "not found", never "forbidden"."""
        session = self._by_id.get(session_id)
        if session is not None and self._expired(session):
            self.close(session)
            return None
        if session is None or session.principal != principal:
            return None
        session.last_seen = self.clock()
        return session

    def peek(self, session_id: str) -> Session | None:
        """This worker's copy of a session, as it is (no expiry check, no principal check)."""
        return self._by_id.get(session_id)

    def close(self, session: Session) -> None:
        self._by_id.pop(session.id, None)
        own = self._by_client.get(session.client)
        if own is not None:
            own.pop(session.id, None)
            if not own:
                del self._by_client[session.client]
        session.close()

    def close_all(self) -> None:
        for session in list(self._by_id.values()):
            self.close(session)

    def sweep(self) -> None:
        """Close every idle-expired session (on a timer, and before counting)."""
        for session in [s for s in self._by_id.values() if self._expired(s)]:
            self.close(session)

    async def sweep_every(self, seconds: float) -> None:
        """Sweep until cancelled: sessions of clients that vanished are closed even when nobody initializes."""
        while True:
            await anyio.sleep(seconds)
            self.sweep()

    def _expired(self, session: Session) -> bool:
        return (
            self.idle_timeout is not None
            and not session.busy
            and self.clock() - session.last_seen > self.idle_timeout
        )
