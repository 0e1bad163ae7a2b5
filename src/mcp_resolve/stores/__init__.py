"""Shared state behind an interface each, with an embedded default: here, the task stores.

`MemoryTaskStore` for one process and tests; `SqliteTaskStore` when tasks
must survive a restart (the embedded durable default, one file per host).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .sqlite_tasks import SqliteTaskStore
    from .tasks import MemoryTaskStore, TaskStore, TaskStoreFull

__all__ = ["MemoryTaskStore", "SqliteTaskStore", "TaskStore", "TaskStoreFull"]


def __getattr__(name: str) -> Any:
    """Loaded on first use: `mcp_resolve.replay` imports a sibling here, and a server without tasks
    must not pay for the task stores."""
    if name == "SqliteTaskStore":
        from .sqlite_tasks import SqliteTaskStore

        return SqliteTaskStore
    if name in ("MemoryTaskStore", "TaskStore", "TaskStoreFull"):
        from . import tasks

        return getattr(tasks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
