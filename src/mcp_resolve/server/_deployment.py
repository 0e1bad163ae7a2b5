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
import weakref
from typing import TYPE_CHECKING, Any

from ..replay import MemoryReplayStore
from ..sealing import ENV_KEYS, RequestStateSecurity

if TYPE_CHECKING:
    from ..replay import ReplayStore
    from ..stores.bus import SubscriptionBus
    from ..stores.events import EventStore
    from ._facade import MCPServer

__all__ = [
    "REDIS_URL_ENV",
    "check_state_keys",
    "choose_keys_and_stores",
    "choose_stores",
    "describe_stores",
    "log_stores",
    "process_local_stores",
    "warn_local_claims",
]

REDIS_URL_ENV = "MCP_RESOLVE_REDIS_URL"
"""One switch for a fleet: every store of every server in the process on this Redis."""

logger = logging.getLogger("mcp_resolve.http")

_warned_ephemeral: weakref.WeakSet[Any] = weakref.WeakSet()

_UNNAMED_SHARED_KEYS = (
    "this server has no name but seals requestState with shared keys (request_state_security or "
    "MCP_RESOLVE_STATE_KEYS): sealed state carries the server name as its audience, so that state "
    "minted by another service holding the same keys is refused, and unnamed servers would all "
    "stamp {name!r}. Name the server (MCPServer('my-service')) or set "
    "RequestStateSecurity(audience=...)."
)


def check_state_keys(server: MCPServer, workers: int) -> None:
    """Refuse a multi-worker fleet without shared requestState keys; warn once for a lone worker.

    With per-process keys every worker rejects state another worker sealed, so
    most input-required retries would fail at random: better not to start.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    log_stores(server)
    if workers > 1 and not server.request_state_security.is_ephemeral:
        _check_shared_stores(server, workers)
        return
    if not server.request_state_security.is_ephemeral:
        warn_local_claims(server)
        return
    if workers > 1:
        raise RuntimeError(
            f"refusing to start {workers} workers with a per-process requestState key: each worker would "
            f"reject the state the others sealed. Share keys by setting {ENV_KEYS} (comma-separated secrets "
            'of at least 32 bytes; generate one with: python -c "import secrets; print(secrets.token_urlsafe(48))") '
            "or pass MCPServer(..., request_state_security=RequestStateSecurity(keys=[...]))."
        )
    if server not in _warned_ephemeral:
        _warned_ephemeral.add(server)
        logger.warning(
            "requestState is sealed with a per-process ephemeral key: input-required retries that arrive "
            "after a restart will be rejected; set %s to keep them valid across restarts",
            ENV_KEYS,
        )


def choose_keys_and_stores(
    server: MCPServer,
    *,
    named: bool,
    request_state_security: RequestStateSecurity | None,
    redis_url: str | None,
    replay_store: ReplayStore | None,
    subscription_bus: SubscriptionBus | None,
    event_store: EventStore | None,
) -> None:
    """Give `server` its requestState security and its stores: the arguments, else the operator's settings.

    The settings are read only when an argument leaves a choice to them. An
    unnamed server sealing with shared keys is refused: every unnamed server
    would stamp the same audience, so state one minted would open on another.
    """
    from .._environment import settings_in_environment

    settings = None
    if (request_state_security is None or redis_url is None) and settings_in_environment():
        from ..settings import load_settings

        settings = load_settings()
    if settings is not None and redis_url is None:
        redis_url = settings.redis()
    server.request_state_security = request_state_security or RequestStateSecurity.from_keys(
        None if settings is None else settings.state_key_ring()
    )
    security = server.request_state_security
    if not named and not security.is_ephemeral and security.audience is None:
        raise ValueError(_UNNAMED_SHARED_KEYS.format(name=server.name))
    choose_stores(
        server,
        redis_url=redis_url,
        replay_store=replay_store,
        subscription_bus=subscription_bus,
        event_store=event_store,
    )


def choose_stores(
    server: MCPServer,
    *,
    redis_url: str | None,
    replay_store: ReplayStore | None,
    subscription_bus: SubscriptionBus | None,
    event_store: EventStore | None,
) -> None:
    """Give `server` its stores, once: those passed, else Redis ones when a URL is set, else in-process ones.

    `redis_url` is already resolved (the argument, else MCP_RESOLVE_REDIS_URL:
    `choose_keys_and_stores` reads the settings); without one, nothing of redis-py (nor of
    the shared-store code) is imported. Stores passed explicitly always win, so
    one can stay embedded on purpose.
    """
    url = redis_url or None
    server.redis = None
    server.session_store = None
    if url:
        import importlib.util

        if importlib.util.find_spec("redis") is None:
            raise RuntimeError(
                f"a Redis URL is set ({REDIS_URL_ENV} or redis_url=) but redis-py is not installed: "
                "pip install 'mcp-resolve[redis]'"
            )
        from ..stores.fleet import redis_stores

        shared = redis_stores(url, server)
        server.redis, server.session_store = shared.connection, shared.sessions
        replay_store = shared.replay if replay_store is None else replay_store  # an empty store is falsy
        subscription_bus = subscription_bus or shared.bus
        event_store = event_store or shared.events
        if server.task_store is None and shared.tasks is not None:
            server.task_store = shared.tasks
    server.replay_store = MemoryReplayStore() if replay_store is None else replay_store
    server.subscription_bus = subscription_bus
    server.event_store = event_store


def describe_stores(server: MCPServer) -> str:
    """Where each store of `server` keeps its data, in one line: the backend's class, and the Redis address.

    The address is only `scheme://host:port/db`: never a password, a user
    name or a query (which may carry one).
    """
    tasks = server.task_store
    if tasks is None:
        task_backend = "MemoryTaskStore"
    elif isinstance(tasks, (str, os.PathLike)):
        task_backend = "SqliteTaskStore"
    else:
        task_backend = type(tasks).__name__
    session_store = server.session_store
    bus = server.subscription_bus
    described = (
        f"replay {type(server.replay_store).__name__}, "
        f"sessions {'in this process' if session_store is None else type(session_store).__name__}, "
        f"events {'none' if server.event_store is None else type(server.event_store).__name__}, "
        f"subscriptions {'InMemorySubscriptionBus' if bus is None else type(bus).__name__}, "
        f"tasks {task_backend}"
    )
    if server.redis is not None:
        described += f" (Redis at {_redis_address(server.redis.safe_url)})"
    return described


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


_logged_stores: weakref.WeakSet[Any] = weakref.WeakSet()
stores_logger = logging.getLogger("mcp_resolve.stores")


def log_stores(server: MCPServer) -> None:
    """Say once per server, at INFO, which backend each store uses (Redis or this process).

    Called when HTTP serving starts (`check_state_keys`: the CLI, `serve_http`,
    each worker's lifespan), where a fleet's operator looks for it. A stdio
    server says nothing: its stderr is its client's to show.
    """
    if server in _logged_stores:
        return
    _logged_stores.add(server)
    stores_logger.info("%s", describe_stores(server))


def process_local_stores(server: MCPServer) -> list[str]:
    """What this server keeps in one process although several workers would each need to see it."""
    local = []
    if isinstance(server.replay_store, MemoryReplayStore) and any(
        getattr(tool, "single_use", False) for tool in server.components()
    ):
        local.append("the replay store of its single_use tools (MemoryReplayStore)")
    return local


_warned_sessions: weakref.WeakSet[Any] = weakref.WeakSet()
_warned_claims: weakref.WeakSet[Any] = weakref.WeakSet()
fleet_logger = logging.getLogger("mcp_resolve.fleet")


def warn_local_claims(server: MCPServer) -> None:
    """Warn once when shared keys meet single-use claims kept in this process: the guard that cannot see.

    `check_state_keys` refuses several workers started by one launcher, but
    two processes started apart (or one restarted) that share the keys each
    accept the same final requestState once, so a single_use tool can run
    twice. Serving starts anyway (one process, restarts aside, is sound); the
    operator is told which variable to set. Only names are logged, never keys.
    """
    if server.request_state_security.is_ephemeral or server in _warned_claims:
        return
    local = process_local_stores(server)
    if not local:
        return
    _warned_claims.add(server)
    fleet_logger.warning(
        "requestState is sealed with shared keys (%s or request_state_security) but %s is in this process: "
        "another process holding the same keys, or this one after a restart, would accept a final "
        "requestState this one already took, so a single_use call could run twice. Set %s (every store "
        "on Redis) or pass replay_store=SqliteReplayStore(path) shared by the processes of one host",
        ENV_KEYS,
        local[0],
        REDIS_URL_ENV,
    )


def _check_shared_stores(server: MCPServer, workers: int) -> None:
    """Refuse a fleet whose workers would each keep their own single-use claims; warn about local sessions."""
    local = process_local_stores(server)
    if local:
        raise RuntimeError(
            f"refusing to start {workers} workers with {', '.join(local)}: each worker would accept the same "
            f"final requestState once, so a single-use call could run once per worker. Set {REDIS_URL_ENV} "
            "(every store on Redis) or pass replay_store=SqliteReplayStore(path) shared by the workers of one host."
        )
    if server.session_store is None and server not in _warned_sessions:
        _warned_sessions.add(server)
        fleet_logger.warning(
            "%d workers without %s: handshake-era (2025) sessions live in the worker that opened them, so route "
            "each Mcp-Session-Id to one worker (docs/deploy.md) or set %s; 2026-07-28 clients need nothing",
            workers,
            REDIS_URL_ENV,
            REDIS_URL_ENV,
        )
