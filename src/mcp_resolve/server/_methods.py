"""The built-in request methods: how a server answers tools/*, resources/*, prompts/*, completion, listen.

Each handler takes the server, the request's params and its Context, and
returns the result as a wire dict (or raises MCPError). Handlers are era-free:
`protocol/` has already chosen the era and finishes what they return. They
live apart from `_facade.py` because they are how a request is served, not
what a server is: the facade only keeps the table (`serves`, `add_method`,
`handler`). `tasks/*` are not here: the tasks extension adds them, and takes
over the calls of task-supporting tools (`server.task_support`, `hooks`).

`method_table` binds each handler to its server as a method, so a request
calls the handler itself, with nothing in between: the per-call cost of a
bound method and no more. What is offered comes from the server's
`registry` (its `Registry`), never from the facade's own state.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Sequence
from types import MethodType
from typing import TYPE_CHECKING, Any

from .._signature import ArgumentError
from ..context import Context
from ..errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MCPError,
    ResourceError,
    ResourceNotFoundError,
    UnexpectedResourceError,
    unknown_name,
)
from ..protocol.param_headers import check_param_headers
from ..protocol.serves import Handler
from ..resources import UnsafeParameter

if TYPE_CHECKING:
    from ..tools import Tool
    from ._facade import MCPServer
    from .hooks import TaskSupport

__all__ = ["Handler", "method_table"]

RESOURCE_NOT_FOUND_HANDSHAKE = -32002  # 2025-11-25 and earlier; 2026-07-28 uses -32602


def method_table(server: MCPServer) -> dict[str, Handler]:
    """The built-in methods of `server`, by method name, each bound to it."""
    return {
        "tools/list": MethodType(list_tools, server),
        "tools/call": MethodType(call_tool, server),
        "resources/list": MethodType(list_resources, server),
        "resources/templates/list": MethodType(list_templates, server),
        "resources/read": MethodType(read_resource, server),
        "prompts/list": MethodType(list_prompts, server),
        "prompts/get": MethodType(get_prompt, server),
        "completion/complete": MethodType(complete, server),
        "subscriptions/listen": MethodType(listen, server),
    }


# -- lists ---------------------------------------------------------------------------------
def _page(
    server: MCPServer, items: Sequence[Any], params: dict[str, Any]
) -> tuple[Sequence[Any], str | None]:
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(str(cursor).encode()).decode())
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise MCPError(INVALID_PARAMS, "Invalid params: unknown cursor") from None
        if start < 0 or start > len(items):
            raise MCPError(INVALID_PARAMS, "Invalid params: unknown cursor")
    end = start + server.page_size
    next_cursor = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else None
    return items[start:end], next_cursor


def _listing(
    server: MCPServer, key: str, definitions: list[dict[str, Any]], params: dict[str, Any]
) -> dict[str, Any]:
    page, next_cursor = _page(server, definitions, params)
    result: dict[str, Any] = {key: list(page)}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def list_tools(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    return _listing(server, "tools", [t.definition() for t in server.registry.tools.values()], params)


async def list_resources(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    definitions = [r.definition() for r in server.registry.resources.values()]
    return _listing(server, "resources", definitions, params)


async def list_templates(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    definitions = [t.definition() for t in server.registry.templates.values()]
    return _listing(server, "resourceTemplates", definitions, params)


async def list_prompts(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    return _listing(server, "prompts", [p.definition() for p in server.registry.prompts.values()], params)


# -- calls, reads, gets --------------------------------------------------------------------
async def call_tool(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise MCPError(INVALID_PARAMS, "Invalid params: tools/call needs a string 'name'")
    tools = server.registry.tools
    tool = tools.get(name)
    if tool is None:
        raise MCPError(INVALID_PARAMS, unknown_name("tool", name, tools))
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise MCPError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
    if tool.param_headers and context.is_modern and context.headers is not None:
        try:
            check_param_headers(tool.param_headers, arguments, context.headers)
        except ValueError as exc:
            raise MCPError(HEADER_MISMATCH, f"Header mismatch: {exc}") from None
    if tool.task_support is not None:
        return await _task_support(server, tool).call_tool(tool, arguments, context)
    return _readable(await tool.call(arguments, context), f"tool {name}", context)


def _readable(result: dict[str, Any], what: str, context: Context) -> dict[str, Any]:
    """`result`, unless it is an InputRequiredResult a handshake-era client cannot read.

    Only 2026-07-28 has `input_required` results. Before it the official server
    answers a handler's InputRequiredResult with -32603 `Handler returned an
    invalid result`: the same error here, with what to do instead.
    """
    # The result first: reading the era builds the request's scope, which a tool's call may never need.
    if "inputRequests" not in result or context.is_modern:
        return result
    raise MCPError(
        INTERNAL_ERROR,
        f"Handler returned an invalid result: {what} returned an InputRequiredResult, which a "
        f"{context.protocol_version} client cannot read; ask through a Resolve(...) resolver, which asks "
        "on either era",
    )


def _task_support(server: MCPServer, tool: Tool) -> TaskSupport:
    """The hook that runs a task-supporting tool's calls (`server/hooks.py`); without one, none run."""
    support = server.task_support
    if support is None:
        raise MCPError(
            INTERNAL_ERROR, f"tool {tool.name} runs as a task, and no tasks extension is installed"
        )
    return support


async def read_resource(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise MCPError(INVALID_PARAMS, "Invalid params: resources/read needs a string 'uri'")
    registry = server.registry
    try:
        resource = registry.resources.get(uri)
        if resource is not None:
            return _readable(await resource.read_result(context), f"resource {uri}", context)
        for template in registry.templates.values():
            variables = template.match(uri)
            if variables is not None:
                return _readable(await template.read(uri, variables, context), f"resource {uri}", context)
    except ArgumentError as exc:
        raise MCPError(INVALID_PARAMS, f"Invalid params for resource {uri}: {exc}") from None
    except UnsafeParameter as exc:
        # Answered exactly as an unknown URI: the client learns nothing of which check failed.
        server.log.info("resource read refused: %s", exc)
        raise _not_found(uri, f"Unknown resource: {uri}", context) from None
    except ResourceError as exc:
        if isinstance(exc, UnexpectedResourceError):
            server.log.error("resource %r raised an unexpected exception", uri, exc_info=exc.__cause__)
        else:
            server.log.info("resource %r failed: %r", uri, str(exc))
        if isinstance(exc, ResourceNotFoundError):
            raise _not_found(uri, str(exc), context) from None
        raise MCPError(INTERNAL_ERROR, str(exc), {"uri": uri}) from None
    raise _not_found(uri, f"Unknown resource: {uri}", context)


def _not_found(uri: str, message: str, context: Context) -> MCPError:
    """-32602 on 2026-07-28; -32002 on the handshake era, as 2025-11-25 asks (the official sends -32602)."""
    code = INVALID_PARAMS if context.is_modern else RESOURCE_NOT_FOUND_HANDSHAKE
    return MCPError(code, message, {"uri": uri})


async def get_prompt(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    name = params.get("name")
    prompts = server.registry.prompts
    prompt = prompts.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise MCPError(INVALID_PARAMS, unknown_name("prompt", name, prompts))
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise MCPError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
    try:
        return await prompt.render(arguments, context)
    except ArgumentError as exc:
        raise MCPError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: {exc}") from None


async def complete(server: MCPServer, params: dict[str, Any], context: Context) -> dict[str, Any]:
    completer, params = server.registry.completer_for(params)
    if completer is None:
        if not isinstance(params.get("ref"), dict) or not isinstance(params.get("argument"), dict):
            raise MCPError(INVALID_PARAMS, "Invalid params: completion/complete needs 'ref' and 'argument'")
        return {"completion": {"values": []}}
    return await completer.complete(params, context)


# -- subscriptions (2026-07-28) --------------------------------------------------------------
def listen(server: MCPServer, params: dict[str, Any], context: Context) -> Awaitable[dict[str, Any]]:
    """`subscriptions/listen` (2026-07-28): a stream of the change notifications the client asked for.

    The listen coroutine itself, not awaited here: an idle stream holds one coroutine frame fewer.
    """
    return server.notifications.listen(params, context)
