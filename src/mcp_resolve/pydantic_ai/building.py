"""From `MCPToolset(...)`'s arguments to the Client it talks through, refusing combinations that cannot work.

The first argument says where the server is, as our Client understands it:
an `MCPServer` (in memory), an `http(s)://` URL (Streamable HTTP), a script
path or command line (stdio; a `pathlib.Path` works too), or a pre-built
`Client`, which brings its own configuration, so connection and handler
arguments next to it are an error, as in pydantic-ai.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import httpx
import mcp_types
from pydantic import AnyUrl
from pydantic_ai import models

from ..client import Client
from .connection import ToolsetClient
from .handlers import (
    ElicitationHandler,
    HandlerContext,
    LogHandler,
    MessageHandler,
    ProgressHandler,
    RootsHandler,
    RootsList,
    SamplingHandler,
    elicitation_adapter,
    progress_adapter,
    roots_adapter,
    sampling_adapter,
)
from .sampling import sampling_handler_for

if TYPE_CHECKING:
    from ..server import MCPServer

__all__ = ["UNSET", "ClientOptions", "MCPToolsetClient", "Mode", "client_for", "is_url"]

MCPToolsetClient: TypeAlias = "Client | MCPServer | AnyUrl | Path | str | Sequence[str]"
"""What `MCPToolset` connects to: a pre-built Client, an in-process server, a URL, a script path or a command."""
Mode = Literal["auto", "legacy", "2026-07-28"]
UNSET: Any = object()
"""`init_timeout` / `read_timeout` not passed (so a pre-built Client is not said to conflict with a default)."""
DEFAULT_INIT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 5 * 60.0


@dataclass(kw_only=True)
class ClientOptions:
    """The constructor arguments that configure the Client (all None, or UNSET, when not passed)."""

    mode: Mode | None
    sampling_model: models.Model | None
    sampling_handler: SamplingHandler | None
    elicitation_handler: ElicitationHandler | None
    log_handler: LogHandler | None
    progress_handler: ProgressHandler | None
    message_handler: MessageHandler | None
    client_info: mcp_types.Implementation | None
    init_timeout: float | None
    read_timeout: float | None
    roots: RootsList | RootsHandler | None
    auth: httpx.Auth | str | None
    verify: ssl.SSLContext | bool | str | None
    headers: dict[str, str] | None
    http_client: httpx.AsyncClient | None
    log_level: mcp_types.LoggingLevel | None
    """Not a Client setting as far as a pre-built Client is concerned: the toolset applies it."""


def client_for(target: Any, options: ClientOptions, toolset: object) -> Client:
    """The Client to talk through: `target` itself when it is one, else one built from `options`."""
    if isinstance(target, Client):
        passed = [
            f.name
            for f in fields(options)
            if f.name != "log_level" and getattr(options, f.name) not in (None, UNSET)
        ]
        if passed:
            names = ", ".join(repr(name) for name in passed)
            raise ValueError(
                f"Cannot pass {names} alongside a pre-built `Client`; configure these on the Client itself instead."
            )
        return target
    _check(target, options)
    sampling = options.sampling_handler
    if options.sampling_model is not None:
        sampling = sampling_handler_for(options.sampling_model)
    return _build(target, options, sampling, toolset)


def is_url(target: object) -> bool:
    return isinstance(target, AnyUrl) or (
        isinstance(target, str) and target.startswith(("http://", "https://"))
    )


def _check(target: object, options: ClientOptions) -> None:
    if options.sampling_handler is not None and options.sampling_model is not None:
        raise ValueError("Pass either `sampling_model` or `sampling_handler`, not both.")
    if options.headers is not None and options.http_client is not None:
        raise ValueError(
            "`headers` and `http_client` are mutually exclusive; set headers on the `http_client` instead."
        )
    http_only = {
        "headers": options.headers,
        "http_client": options.http_client,
        "auth": options.auth,
        "verify": options.verify,
    }
    given = [name for name, value in http_only.items() if value is not None]
    if given and not is_url(target):
        names = ", ".join(f"`{name}`" for name in given)
        raise ValueError(
            f"{names} only apply to an http(s):// URL; a stdio server takes credentials from its env."
        )


def _build(
    target: Any, options: ClientOptions, sampling: SamplingHandler | None, toolset: object
) -> ToolsetClient:
    """The Client for `target`, with the pydantic-ai-shaped handlers adapted to its own."""
    if isinstance(target, AnyUrl | Path):
        target = str(target)
    return ToolsetClient(
        target,
        mode=options.mode or "auto",
        elicitation_handler=(
            None
            if options.elicitation_handler is None
            else elicitation_adapter(
                options.elicitation_handler, HandlerContext(toolset, "elicitation/create")
            )
        ),
        sampling_handler=(
            None
            if sampling is None
            else sampling_adapter(sampling, HandlerContext(toolset, "sampling/createMessage"))
        ),
        roots=None
        if options.roots is None
        else roots_adapter(options.roots, HandlerContext(toolset, "roots/list")),
        log_handler=options.log_handler,
        log_level=options.log_level,
        progress_handler=None
        if options.progress_handler is None
        else progress_adapter(options.progress_handler),
        client_info=(
            None
            if options.client_info is None
            else options.client_info.model_dump(by_alias=True, exclude_none=True, mode="json")
        ),
        headers=options.headers,
        auth=options.auth,
        verify=None if options.http_client is not None else options.verify,  # the borrowed client's own
        http_client=options.http_client,
        init_timeout=DEFAULT_INIT_TIMEOUT if options.init_timeout is UNSET else options.init_timeout,
        read_timeout=DEFAULT_READ_TIMEOUT if options.read_timeout is UNSET else options.read_timeout,
    )
