"""What a transport needs of the server it serves: `ServedServer`, a `Protocol` owned below the server.

A transport moves bytes for a server it does not know the class of: it
runs the server's lifespan around serving, asks its deployment whether
serving can work (shared keys for several workers, claims kept in one
process) and where sessions and events live, reaches the change
notifications for long-lived streams, and, over HTTP, checks bearer
tokens. Answering requests is the protocol layer's (`ServesRequests`).
`MCPServer` satisfies all of it by its public attributes; nothing under
`transports/` imports `mcp_resolve.server`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.serves import ServesRequests

if TYPE_CHECKING:
    from ..auth.provider import OAuthAuthorizationServerProvider
    from ..auth.tokens import AuthSettings, TokenVerifier
    from ..prompts import Prompt
    from ..protocol.listen import Notifications
    from ..replay import ReplayStore
    from ..resources import Resource, ResourceTemplate
    from ..sealing import RequestStateSecurity
    from ..stores import RedisConnection
    from ..stores.events import EventStore
    from ..stores.sessions import SessionStore
    from ..tools import Tool

__all__ = ["DeploymentChecks", "ServedServer"]


class DeploymentChecks(Protocol):
    """What a transport asks of a server's deployment (`MCPServer.deployment`) before and while it serves."""

    @property
    def request_state_security(self) -> RequestStateSecurity: ...

    @property
    def replay_store(self) -> ReplayStore:
        """Where single-use claims are recorded (requestState rounds, DPoP proof ids)."""
        ...

    @property
    def session_store(self) -> SessionStore | None: ...

    @property
    def event_store(self) -> EventStore | None: ...

    @property
    def redis(self) -> RedisConnection | None: ...

    def check(self, workers: int) -> None:
        """Refuse to serve with `workers` processes when that cannot work; warn once when it may not."""
        ...

    def warn_local_claims(self) -> None:
        """Warn once that single-use claims stay in this process although the keys are shared."""
        ...

    def process_local_stores(self) -> list[str]:
        """What stays in this process that several workers would each need to see."""
        ...


class ServedServer(ServesRequests, Protocol):
    """A server as a transport serves it: requests (`ServesRequests`), lifespan, deployment, protection."""

    @property
    def deployment(self) -> DeploymentChecks: ...

    @property
    def notifications(self) -> Notifications:
        """The fan-out of change notifications, whose long-lived streams a transport ends at shutdown."""
        ...

    @property
    def auth(self) -> AuthSettings | None: ...

    @property
    def token_verifier(self) -> TokenVerifier | None: ...

    @property
    def auth_server_provider(self) -> OAuthAuthorizationServerProvider[Any, Any, Any] | None:
        """This server's own authorization server, whose endpoints HTTP serves beside the MCP endpoint."""
        ...

    def running(self) -> AbstractAsyncContextManager[Any]:
        """The server's lifespan, entered once however many transports share it."""
        ...

    def required_scopes(self, method: str, params: dict[str, Any]) -> tuple[str, ...]:
        """The OAuth scopes a request's target declares; () when none."""
        ...

    def components(self) -> Sequence[Tool | Prompt | Resource | ResourceTemplate]: ...
