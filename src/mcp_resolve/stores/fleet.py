"""Every store of a server on one Redis: what MCP_RESOLVE_REDIS_URL (or `MCPServer(redis_url=...)`) selects.

One connection serves them all, under a key prefix derived from the server's
name, so two services sharing a Redis never see each other's claims,
sessions or events (the requestState audience keeps their tokens apart too).
Imported only when a Redis URL is configured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ._redis.bus import RedisSubscriptionBus
from ._redis.connection import RedisConnection
from ._redis.events import RedisEventStore
from ._redis.replay import RedisReplayStore
from .sessions import RedisSessionStore

if TYPE_CHECKING:
    from ..sealing import RequestStateSecurity

__all__ = ["Named", "RedisStores", "namespace_for", "redis_stores"]


class Named(Protocol):
    """What names a server's keys: its requestState audience, else its name (an `MCPServer` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def request_state_security(self) -> RequestStateSecurity: ...


@dataclass
class RedisStores:
    connection: RedisConnection
    replay: RedisReplayStore
    bus: RedisSubscriptionBus
    events: RedisEventStore
    sessions: RedisSessionStore
    tasks: Any


def namespace_for(server: Named) -> str:
    """`mcp-resolve:<audience or name>`, with anything but letters, digits, dot, dash and underscore as `-`."""
    name = server.request_state_security.audience or server.name
    return "mcp-resolve:" + re.sub(r"[^A-Za-z0-9._-]", "-", name)[:64]


def redis_stores(url: str, server: Named) -> RedisStores:
    connection = RedisConnection(url, prefix=namespace_for(server))
    tasks = None
    try:
        from ._redis.tasks import RedisTaskStore
    except ImportError:  # the tasks extension's store interface is not there
        pass
    else:
        tasks = RedisTaskStore(connection)
    return RedisStores(
        connection=connection,
        replay=RedisReplayStore(connection),
        bus=RedisSubscriptionBus(connection),
        events=RedisEventStore(connection),
        sessions=RedisSessionStore(connection),
        tasks=tasks,
    )
