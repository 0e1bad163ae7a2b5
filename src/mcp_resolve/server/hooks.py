"""The hooks the core offers the extensions built into every server; the core never imports them.

The tasks extension (`mcp_resolve.tasks`) is the one built in. It registers an
installer here when its package loads (`import mcp_resolve` loads it), and
every `MCPServer` runs the installers as it is built, after its own methods
and before `extensions=` apply. An installer works on the server as
`extensions=` does, through its public surface (`add_method` for methods of
its own), and plugs into the places the core leaves open for it:

- `MCPServer.task_support`, a `TaskSupport`: it takes over `tools/call` of
  every tool registered with `task_support` (a task, or the plain call when
  the request asks for none), and stops its background work when the
  server's last user leaves;
- `tools.BodyGate`: a Context whose call's body waits, once its resolvers are
  done, for the extension to let it run (`resolve_before_task=True`);
- `round_questioner`, handed to the installer: how a round of a call that runs
  outside any request asks its questions, so the extension needs no
  protocol era of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..context import Context
    from ..resolve.run import Questioner
    from ..tools import Tool
    from ._facade import MCPServer

__all__ = ["Installer", "RoundQuestioner", "TaskSupport", "install_builtins", "register_builtin"]


class TaskSupport(Protocol):
    """What runs the calls of tools registered with `task_support` (`MCPServer.task_support`)."""

    async def call_tool(
        self, tool: Tool, arguments: dict[str, Any] | None, context: Context[Any, Any]
    ) -> dict[str, Any]:
        """`tools/call` of `tool`, once the core checked its name, arguments' shape and headers: the result dict."""
        ...

    async def shutdown(self) -> None:
        """The server's last user left: stop what runs in the background here, and record that it stopped."""
        ...


RoundQuestioner = Callable[[str | None, dict[str, Any]], "Questioner"]
"""`(request_state, input_responses) -> Questioner` for one round of a call that runs outside any request.

`request_state` is the plaintext state the previous round left (None for a
first round), never a sealed one; `input_responses` the answers gathered
since, by question key.
"""

Installer = Callable[["MCPServer", RoundQuestioner], None]
"""Installs a built-in extension on a server being built."""

_BUILT_IN: list[Installer] = []


def register_builtin(install: Installer) -> None:
    """Install `install`'s extension on every server built from now on (once per installer)."""
    if install not in _BUILT_IN:
        _BUILT_IN.append(install)


def install_builtins(server: MCPServer) -> None:
    """Run every registered installer on `server` (`MCPServer.__init__` calls this once)."""
    for install in _BUILT_IN:
        install(server, round_questioner)


def round_questioner(request_state: str | None, input_responses: dict[str, Any]) -> Questioner:
    """The 2026-07-28 questioner, which already runs a call as rounds: answers count only for questions
    `request_state` records as asked, with exactly that wording (`BatchQuestioner`)."""
    from ..protocol.modern import BatchQuestioner  # loaded by the first round, as by the first request

    if request_state is None:
        return BatchQuestioner({})
    return BatchQuestioner({"requestState": request_state, "inputResponses": input_responses})
