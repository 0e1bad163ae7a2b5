"""The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): long-running tool calls as pollable tasks.

`@mcp.tool(task_support="optional" | "required")` makes a tool's calls tasks
when the request declares the extension; a resolver's question inside a task
becomes the task's `input_required` status. `records` holds what a task is,
`runner` runs its rounds, `methods` serves the wire. Stores live in
`mcp_resolve.stores`. Only `records` loads with this package: a server whose
tools never run as tasks never loads the rest.
"""

from .records import TASKS_EXTENSION, TaskLimits, TaskOptions, TaskRecord, TaskStoreFull

__all__ = ["TASKS_EXTENSION", "TaskLimits", "TaskOptions", "TaskRecord", "TaskStoreFull"]
