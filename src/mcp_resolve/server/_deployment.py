"""What a deployment gives a server, and whether it can work at all: a policy the server, CLI and HTTP app share.

A server's requestState keys and stores are chosen once, when it is built:
what the arguments say, else the operator's settings (MCP_RESOLVE_STATE_KEYS,
MCP_RESOLVE_REDIS_URL), else per-process ones. A fleet of workers that each seal requestState with a key of their own would
reject most multi-round retries at random, since the rounds of one call land
on any worker. Refusing to start is kinder than failing at random.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ..replay import MemoryReplayStore
from ..sealing import ENV_KEYS, RequestStateSecurity

if TYPE_CHECKING:
    from ..replay import ReplayStore
    from ..stores import RedisConnection
    from ..stores.bus import SubscriptionBus
    from ..stores.events import EventStore
    from ..stores.sessions import SessionStore
    from ..stores.tasks import TaskStore

__all__ = [
    "REDIS_URL_ENV",
    "Deployment",
    "check_state_keys",
    "choose_deployment",
    "describe_stores",
    "log_stores",
    "process_local_stores",
    "warn_local_claims",
]

REDIS_URL_ENV = "MCP_RESOLVE_REDIS_URL"
"""One switch for a fleet: every store of every server in the process on this Redis."""

logger = logging.getLogger("mcp_resolve.http")
stores_logger = logging.getLogger("mcp_resolve.stores")
fleet_logger = logging.getLogger("mcp_resolve.fleet")

_UNNAMED_SHARED_KEYS = (
    "this server has no name but seals requestState with shared keys (request_state_security or "
    "MCP_RESOLVE_STATE_KEYS): sealed state carries the server name as its audience, so that state "
    "minted by another service holding the same keys is refused, and unnamed servers would all "
    "stamp {name!r}. Name the server (MCPServer('my-service')) or set "
    "RequestStateSecurity(audience=...)."
)


class Deployment:
    """What a deployment gives one server, chosen when it is built: requestState keys and where state lives.

    The facade owns it (`MCPServer.deployment`) and its attributes of the same
    names (`mcp.replay_store`, `mcp.redis`, ...) read and set these. The
    checks below are what the CLI and the transports call before serving;
    each warning is logged once per server.
    """

    def __init__(
        self,
        *,
        request_state_security: RequestStateSecurity,
        replay_store: ReplayStore,
        subscription_bus: SubscriptionBus | None,
        event_store: EventStore | None,
        task_store: TaskStore | str | os.PathLike[str] | None,
        session_store: SessionStore | None = None,
        redis: RedisConnection | None = None,
        offers_single_use: Callable[[], bool] = lambda: False,
    ) -> None:
        self.request_state_security = request_state_security
        """Seals and opens 2026-07-28 requestState (keys, audience, lifetime)."""
        self.replay_store = replay_store
        """Where single-use tools claim each sealed requestState once."""
        self.subscription_bus = subscription_bus
        """Carries list changes and resource updates to every worker (None: in process, made on first use)."""
        self.event_store = event_store
        """Keeps handshake-era SSE events so a client can resume with Last-Event-ID (None: not resumable)."""
        self.task_store = task_store
        """Where tasks live: a TaskStore, a SQLite file path, or None for in memory (made on first use)."""
        self.session_store = session_store
        """Handshake-era sessions any worker serves (None: each lives in the process that opened it)."""
        self.redis = redis
        """The one Redis connection the shared stores use (None: no Redis URL was set)."""
        self.offers_single_use = offers_single_use
        """Whether the server has a single-use tool, asked when serving starts (tools come after the deployment)."""
        self._said: set[str] = set()  # the warnings and log lines already given, each once per server

    def _once(self, what: str) -> bool:
        if what in self._said:
            return False
        self._said.add(what)
        return True

    def check(self, workers: int) -> None:
        """Refuse a multi-worker fleet without shared requestState keys; warn once for a lone worker.

        With per-process keys every worker rejects state another worker sealed, so
        most input-required retries would fail at random: better not to start.
        """
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.log()
        if workers > 1 and not self.request_state_security.is_ephemeral:
            self._check_shared_stores(workers)
            return
        if not self.request_state_security.is_ephemeral:
            self.warn_local_claims()
            return
        if workers > 1:
            raise RuntimeError(
                f"refusing to start {workers} workers with a per-process requestState key: each worker would "
                f"reject the state the others sealed. Share keys by setting {ENV_KEYS} (comma-separated secrets "
                'of at least 32 bytes; generate one with: python -c "import secrets; print(secrets.token_urlsafe(48))") '
                "or pass MCPServer(..., request_state_security=RequestStateSecurity(keys=[...]))."
            )
        if self._once("ephemeral"):
            logger.warning(
                "requestState is sealed with a per-process ephemeral key: input-required retries that arrive "
                "after a restart will be rejected; set %s to keep them valid across restarts",
                ENV_KEYS,
            )

    def describe(self) -> str:
        """Where each store keeps its data, in one line: the backend's class, and the Redis address.

        The address is only `scheme://host:port/db`: never a password, a user
        name or a query (which may carry one).
        """
        tasks = self.task_store
        if tasks is None:
            task_backend = "MemoryTaskStore"
        elif isinstance(tasks, (str, os.PathLike)):
            task_backend = "SqliteTaskStore"
        else:
            task_backend = type(tasks).__name__
        session_store = self.session_store
        bus = self.subscription_bus
        described = (
            f"replay {type(self.replay_store).__name__}, "
            f"sessions {'in this process' if session_store is None else type(session_store).__name__}, "
            f"events {'none' if self.event_store is None else type(self.event_store).__name__}, "
            f"subscriptions {'InMemorySubscriptionBus' if bus is None else type(bus).__name__}, "
            f"tasks {task_backend}"
        )
        if self.redis is not None:
            described += f" (Redis at {_redis_address(self.redis.safe_url)})"
        return described

    def log(self) -> None:
        """Say once, at INFO, which backend each store uses (Redis or this process).

        Called when HTTP serving starts (`check`: the CLI, `serve_http`, each
        worker's lifespan), where a fleet's operator looks for it. A stdio
        server says nothing: its stderr is its client's to show.
        """
        if self._once("stores"):
            stores_logger.info("%s", self.describe())

    def process_local_stores(self) -> list[str]:
        """What this server keeps in one process although several workers would each need to see it."""
        local = []
        if isinstance(self.replay_store, MemoryReplayStore) and self.offers_single_use():
            local.append("the replay store of its single_use tools (MemoryReplayStore)")
        return local

    def warn_local_claims(self) -> None:
        """Warn once when shared keys meet single-use claims kept in this process: the guard that cannot see.

        `check` refuses several workers started by one launcher, but two
        processes started apart (or one restarted) that share the keys each
        accept the same final requestState once, so a single_use tool can run
        twice. Serving starts anyway (one process, restarts aside, is sound); the
        operator is told which variable to set. Only names are logged, never keys.
        """
        if self.request_state_security.is_ephemeral or "claims" in self._said:
            return
        local = self.process_local_stores()
        if not local:
            return
        self._said.add("claims")
        fleet_logger.warning(
            "requestState is sealed with shared keys (%s or request_state_security) but %s is in this process: "
            "another process holding the same keys, or this one after a restart, would accept a final "
            "requestState this one already took, so a single_use call could run twice. Set %s (every store "
            "on Redis) or pass replay_store=SqliteReplayStore(path) shared by the processes of one host",
            ENV_KEYS,
            local[0],
            REDIS_URL_ENV,
        )

    def _check_shared_stores(self, workers: int) -> None:
        """Refuse a fleet whose workers would each keep their own single-use claims; warn about local sessions."""
        local = self.process_local_stores()
        if local:
            raise RuntimeError(
                f"refusing to start {workers} workers with {', '.join(local)}: each worker would accept the same "
                f"final requestState once, so a single-use call could run once per worker. Set {REDIS_URL_ENV} "
                "(every store on Redis) or pass replay_store=SqliteReplayStore(path) shared by the workers of one host."
            )
        if self.session_store is None and self._once("sessions"):
            fleet_logger.warning(
                "%d workers without %s: handshake-era (2025) sessions live in the worker that opened them, so route "
                "each Mcp-Session-Id to one worker (docs/deploy.md) or set %s; 2026-07-28 clients need nothing",
                workers,
                REDIS_URL_ENV,
                REDIS_URL_ENV,
            )


class _Audience(NamedTuple):
    """What names a server's Redis keys (`stores.fleet.namespace_for`), before the server is whole."""

    name: str
    request_state_security: RequestStateSecurity


def choose_deployment(
    *,
    name: str,
    named: bool,
    request_state_security: RequestStateSecurity | None,
    redis_url: str | None,
    replay_store: ReplayStore | None,
    subscription_bus: SubscriptionBus | None,
    event_store: EventStore | None,
    task_store: TaskStore | str | os.PathLike[str] | None,
    offers_single_use: Callable[[], bool],
) -> Deployment:
    """A server's requestState security and stores: the arguments, else the operator's settings.

    The settings (MCP_RESOLVE_STATE_KEYS, MCP_RESOLVE_REDIS_URL) are read only
    when an argument leaves a choice to them. An unnamed server sealing with
    shared keys is refused: every unnamed server would stamp the same
    audience, so state one minted would open on another.

    Stores: those passed, else Redis ones when a URL is set, else in-process
    ones. Without a URL nothing of redis-py (nor of the shared-store code) is
    imported. Stores passed explicitly always win, so one can stay embedded on
    purpose.
    """
    from .._environment import settings_in_environment

    settings = None
    if (request_state_security is None or redis_url is None) and settings_in_environment():
        from ..settings import load_settings

        settings = load_settings()
    if settings is not None and redis_url is None:
        redis_url = settings.redis()
    security = request_state_security or RequestStateSecurity.from_keys(
        None if settings is None else settings.state_key_ring()
    )
    if not named and not security.is_ephemeral and security.audience is None:
        raise ValueError(_UNNAMED_SHARED_KEYS.format(name=name))
    redis = session_store = None
    if redis_url:
        import importlib.util

        if importlib.util.find_spec("redis") is None:
            raise RuntimeError(
                f"a Redis URL is set ({REDIS_URL_ENV} or redis_url=) but redis-py is not installed: "
                "pip install 'mcp-resolve[redis]'"
            )
        from ..stores.fleet import redis_stores

        shared = redis_stores(redis_url, _Audience(name, security))
        redis, session_store = shared.connection, shared.sessions
        replay_store = shared.replay if replay_store is None else replay_store  # an empty store is falsy
        subscription_bus = subscription_bus or shared.bus
        event_store = event_store or shared.events
        if task_store is None and shared.tasks is not None:
            task_store = shared.tasks
    return Deployment(
        request_state_security=security,
        replay_store=MemoryReplayStore() if replay_store is None else replay_store,
        subscription_bus=subscription_bus,
        event_store=event_store,
        task_store=task_store,
        session_store=session_store,
        redis=redis,
        offers_single_use=offers_single_use,
    )


def _redis_address(safe_url: str) -> str:
    """`scheme://host:port/db` of an already redacted Redis URL: the user name goes too."""
    try:
        parts = urllib.parse.urlsplit(safe_url)
        if parts.scheme == "unix":
            return f"unix://{parts.path}"
        host = parts.hostname or "localhost"
        host = f"[{host}]" if ":" in host else host
        return f"{parts.scheme}://{host}:{parts.port or 6379}{parts.path or '/0'}"
    except ValueError:
        return "<unparsable redis url>"


# -- the same checks by server, as the CLI, the tests and the old `mcp_resolve.deployment` call them --
class Deployed(Protocol):
    """A server with a deployment (`MCPServer`)."""

    @property
    def deployment(self) -> Deployment: ...


def check_state_keys(server: Deployed, workers: int) -> None:
    """`server.deployment.check(workers)`: refuse a fleet that cannot work, warn once for a lone worker."""
    server.deployment.check(workers)


def describe_stores(server: Deployed) -> str:
    """`server.deployment.describe()`: where each store of `server` keeps its data, in one line."""
    return server.deployment.describe()


def log_stores(server: Deployed) -> None:
    """`server.deployment.log()`: say once, at INFO, which backend each store uses."""
    server.deployment.log()


def process_local_stores(server: Deployed) -> list[str]:
    """`server.deployment.process_local_stores()`: what stays in this process that a fleet would share."""
    return server.deployment.process_local_stores()


def warn_local_claims(server: Deployed) -> None:
    """`server.deployment.warn_local_claims()`: warn once that single-use claims are kept in this process."""
    server.deployment.warn_local_claims()
