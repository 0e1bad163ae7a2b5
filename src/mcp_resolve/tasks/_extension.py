"""The tasks extension on one server: what it plugs into the core's hooks, and nothing it does yet.

`install` runs as every `MCPServer` is built (`server/hooks.py`): it adds
`tasks/get`, `tasks/update` and `tasks/cancel` with `add_method`, as
`extensions=` adds an extension's methods, and sets `server.task_support`,
which the core hands `tools/call` of every tool registered with
`task_support`. What runs tasks (`runner`) and serves them (`methods`) loads
the first time a task-supporting call or a `tasks/*` request needs it, so a
server whose tools never run as tasks never loads it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..context import Context
    from ..server import MCPServer
    from ..server.hooks import RoundQuestioner
    from ..tools import Tool
    from .runner import TaskRunner

__all__ = ["TASK_METHODS", "ServerTasks", "install"]

TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
"""The request methods of the tasks extension (2026-07-28), served on every server and era."""


class ServerTasks:
    """The tasks of one server: the core's `TaskSupport`, and the runner it makes when first needed."""

    __slots__ = ("_runner", "round_questioner", "server")

    def __init__(self, server: MCPServer, round_questioner: RoundQuestioner) -> None:
        self.server = server
        self.round_questioner = round_questioner
        """How a round asks its questions (the core's; the extension speaks no protocol era of its own)."""
        self._runner: TaskRunner | None = None

    @property
    def runner(self) -> TaskRunner:
        """The server's runner, made when the first task-supporting call or tasks/* request needs it."""
        runner = self._runner
        if runner is None:
            from .runner import TaskRunner

            runner = self._runner = TaskRunner(self.server, self.round_questioner)
        return runner

    async def call_tool(
        self, tool: Tool, arguments: dict[str, Any] | None, context: Context[Any, Any]
    ) -> dict[str, Any]:
        """`tools/call` of a task-supporting tool: a task when the request declares the extension, else a plain call."""
        from .methods import call_task_tool

        return await call_task_tool(self, tool, arguments, context)

    async def serve(self, method: str, params: dict[str, Any], context: Context[Any, Any]) -> dict[str, Any]:
        """`tasks/get`, `tasks/update`, `tasks/cancel`."""
        from .methods import serve_task_method

        return await serve_task_method(self, method, params, context)

    async def shutdown(self) -> None:
        """Stop every round of this process (each records its task failed); nothing when none ever ran."""
        if self._runner is not None:
            await self._runner.shutdown()


def install(server: MCPServer, round_questioner: RoundQuestioner) -> None:
    """Put the tasks extension on `server`: its methods, and the hook task-supporting calls go to."""
    tasks = ServerTasks(server, round_questioner)
    for method in TASK_METHODS:
        server.add_method(method, partial(tasks.serve, method))
    server.task_support = tasks
