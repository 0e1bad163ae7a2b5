"""Shared state behind an interface each, with an embedded default and a Redis implementation.

One interface per piece of state: tasks (`TaskStore`), SSE events for resumable streams
(`EventStore`), change notifications (`SubscriptionBus`); single-use claims are
`mcp_resolve.ReplayStore`; short-lived opaque values (the OAuth proxy's sealed state) are a
`KeyValueStore`. The embedded defaults (`MemoryTaskStore`, `MemoryEventStore`,
`InMemorySubscriptionBus`) serve one process; `SqliteTaskStore` keeps tasks across a restart (one
file per host); the `Redis*` classes (extra `[redis]`) share state across a fleet.

Everything loads on first use: `mcp_resolve.replay` imports a sibling here, and a server without
tasks or Redis must not pay for them.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._redis.bus import RedisSubscriptionBus
    from ._redis.connection import RedisConnection, StoreUnavailable
    from ._redis.events import RedisEventStore
    from ._redis.keyvalue import RedisKeyValueStore
    from ._redis.replay import RedisReplayStore
    from ._redis.tasks import RedisTaskStore
    from ._sqlite.keyvalue import SqliteKeyValueStore
    from ._sqlite.tasks import SqliteTaskStore
    from .bus import InMemorySubscriptionBus, SubscriptionBus
    from .events import EventStore, MemoryEventStore
    from .keyvalue import KeyValueStore, KeyValueStoreFull, MemoryKeyValueStore
    from .tasks import MemoryTaskStore, TaskStore, TaskStoreFull

_HOMES = {
    "EventStore": ".events",
    "InMemorySubscriptionBus": ".bus",
    "KeyValueStore": ".keyvalue",
    "KeyValueStoreFull": ".keyvalue",
    "MemoryEventStore": ".events",
    "MemoryKeyValueStore": ".keyvalue",
    "MemoryTaskStore": ".tasks",
    "RedisConnection": "._redis.connection",
    "RedisEventStore": "._redis.events",
    "RedisKeyValueStore": "._redis.keyvalue",
    "RedisReplayStore": "._redis.replay",
    "RedisSubscriptionBus": "._redis.bus",
    "RedisTaskStore": "._redis.tasks",
    "SqliteKeyValueStore": "._sqlite.keyvalue",
    "SqliteTaskStore": "._sqlite.tasks",
    "StoreUnavailable": "._redis.connection",
    "SubscriptionBus": ".bus",
    "TaskStore": ".tasks",
    "TaskStoreFull": ".tasks",
}

__all__ = [
    "EventStore",
    "InMemorySubscriptionBus",
    "KeyValueStore",
    "KeyValueStoreFull",
    "MemoryEventStore",
    "MemoryKeyValueStore",
    "MemoryTaskStore",
    "RedisConnection",
    "RedisEventStore",
    "RedisKeyValueStore",
    "RedisReplayStore",
    "RedisSubscriptionBus",
    "RedisTaskStore",
    "SqliteKeyValueStore",
    "SqliteTaskStore",
    "StoreUnavailable",
    "SubscriptionBus",
    "TaskStore",
    "TaskStoreFull",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home, __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
