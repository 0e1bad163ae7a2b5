"""Handshake-era HTTP sessions: one `Connection` per `Mcp-Session-Id`, from `initialize` to DELETE.

A session is what ties the POSTs of one 2025-era client together: its
negotiated version and capabilities, and the server-to-client questions whose
answers arrive as separate POSTs. Session ids are unguessable (they are the
only thing standing between a caller and someone else's session) and a session
is bound to the principal that opened it. Idle sessions are dropped lazily so
clients that vanish without DELETE do not accumulate.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from ..protocol.session import Connection
from ..resolve.tasks import cancel_scope

if TYPE_CHECKING:
    from ..server import MCPServer

__all__ = ["Session", "Sessions"]


class Session:
    def __init__(self, server: MCPServer, principal: str | None, clock: Callable[[], float]) -> None:
        self.id = secrets.token_urlsafe(32)
        self.principal = principal
        self.connection = Connection(server, principal=principal)
        self.closed = anyio.Event()
        self.clock = clock
        self.last_seen = clock()
        self._active: set[anyio.CancelScope] = set()

    @property
    def busy(self) -> bool:
        return bool(self._active)

    @contextmanager
    def activity(self) -> Iterator[None]:
        """Mark a request's work or a GET stream as in progress: the session is busy (never idle-expired)
        while it runs, and closing the session cancels it (the HTTP response itself still ends cleanly)."""
        with cancel_scope() as scope:
            self._active.add(scope)
            try:
                yield
            finally:
                self._active.discard(scope)
                self.last_seen = self.clock()

    def close(self) -> None:
        self.closed.set()
        for scope in list(self._active):
            scope.cancel()


class Sessions:
    def __init__(
        self, idle_timeout: float | None, limit: int | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.idle_timeout = idle_timeout
        self.limit = limit
        self.clock = clock
        self._by_id: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def full(self) -> bool:
        """Whether a new session must wait until others end (idle ones are dropped first)."""
        if self.limit is None:
            return False
        self._sweep()
        return len(self._by_id) >= self.limit

    def new(self, server: MCPServer, principal: str | None) -> Session:
        """A session that exists only once `add`ed (after its `initialize` succeeded)."""
        return Session(server, principal, self.clock)

    def add(self, session: Session) -> None:
        self._sweep()
        self._by_id[session.id] = session

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

    def close(self, session: Session) -> None:
        self._by_id.pop(session.id, None)
        session.close()

    def close_all(self) -> None:
        for session in list(self._by_id.values()):
            self.close(session)

    def _expired(self, session: Session) -> bool:
        return (
            self.idle_timeout is not None
            and not session.busy
            and self.clock() - session.last_seen > self.idle_timeout
        )

    def _sweep(self) -> None:
        for session in [s for s in self._by_id.values() if self._expired(s)]:
            self.close(session)
