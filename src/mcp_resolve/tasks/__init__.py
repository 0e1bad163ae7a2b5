"""The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): long-running tool calls as pollable tasks.

`@mcp.tool(task_support="optional" | "required")` makes a tool's calls tasks
when the request declares the extension; a resolver's question inside a task
becomes the task's `input_required` status. `records` holds what a task is,
`runner` runs its rounds, `methods` serves the wire. Stores live in
`mcp_resolve.stores`.

The extension sits on the core's hooks (`mcp_resolve.server.hooks`), which
the core offers without importing it: loading this package registers it there
(`import mcp_resolve` does), and every server then carries it. Only that
registration loads with the package; the names below load on first use, and a
server whose tools never run as tasks never loads the rest.
"""

from typing import TYPE_CHECKING, Any

from ..server.hooks import register_builtin
from ._extension import install

register_builtin(install)

if TYPE_CHECKING:
    from .records import TASKS_EXTENSION, TaskLimits, TaskOptions, TaskRecord, TaskStoreFull

__all__ = ["TASKS_EXTENSION", "TaskLimits", "TaskOptions", "TaskRecord", "TaskStoreFull"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import records

        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
