"""`mcp-resolve run`: serve a server file over stdio, or Streamable HTTP with one or several workers.

Options given on the command line win, then the server's own arguments, then the environment
(`MCP_RESOLVE_*`, `mcp_resolve.settings`). With `--workers N`, uvicorn starts each worker by
importing `worker_app`, which loads the same file: the parent hands the workers what it was given
in `MCP_RESOLVE_WORKER_APP`. With `--reload`, `_reload` serves instead: a new process per version
of the file.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from .._logs import configure_logging
from ..settings import load_settings
from ._target import CLIError, absolute_target, load_server

if TYPE_CHECKING:
    from ..server import MCPServer

__all__ = ["LEVELS", "WORKER_APP_ENV", "serve", "worker_app"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
WORKER_APP_ENV = "MCP_RESOLVE_WORKER_APP"


def serve(
    server: MCPServer,
    target: str,
    *,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
    path: str | None = None,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    log_level: str | None = None,
    workers: int = 1,
    reload: bool = False,
) -> int:
    """Serve `server` (loaded from `target`) until stopped; the command's exit status."""
    # Options given on the command line win, then the server's own arguments, then the environment.
    level = log_level or server.log_level
    settings = load_settings(log_level=level)
    configure_logging(settings.log_level)  # before the first warning (the key check below) is logged
    if reload and workers != 1:
        raise CLIError("--reload serves one worker at a time: leave out --workers")
    if not http:
        if workers != 1:
            raise CLIError("--workers needs --http (stdio is one process talking to one client)")
        if reload:
            from ._reload import reload_stdio

            return reload_stdio(target, log_level=log_level)
        server.run(log_level=level)
        return 0
    try:
        server.deployment.check(workers)
    except (RuntimeError, ValueError) as exc:
        raise CLIError(str(exc)) from None
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    path = settings.path if path is None else path
    hosts = allowed_hosts or settings.allowed_hosts
    origins = allowed_origins or settings.allowed_origins
    shown_host = f"[{host}]" if ":" in host else host
    print(f"MCP endpoint: http://{shown_host}:{port}{path}", file=sys.stderr, flush=True)
    if reload:
        from ._reload import reload_http

        return reload_http(
            target,
            host=host,
            port=port,
            path=path,
            hosts=hosts,
            origins=origins,
            log_level=settings.log_level,
            trusted_proxies=settings.trusted_proxies,
        )
    if workers == 1:
        server.run(
            transport="streamable-http",
            host=host,
            port=port,
            path=path,
            allowed_hosts=hosts,
            allowed_origins=origins,
            log_level=level,
        )
        return 0
    # Here, not at the top: `check`, `graph` and stdio never load uvicorn and its httptools protocol.
    import uvicorn

    from ..transports.http import ServerLimits, uvicorn_options

    effective = configure_logging(settings.log_level)
    # uvicorn starts each worker by importing the app: hand it a factory that loads the same file.
    worker = {
        "target": absolute_target(target),
        "path": path,
        "host": host,
        "hosts": hosts,
        "origins": origins,
        "log_level": settings.log_level,
    }
    os.environ[WORKER_APP_ENV] = json.dumps(worker)
    uvicorn.run(
        f"{__name__}:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=effective.lower() if effective in LEVELS else "info",
        **uvicorn_options(ServerLimits(), workers=workers, trusted_proxies=settings.trusted_proxies),
    )
    return 0


def worker_app() -> Any:
    """The ASGI app of one `run --http --workers N` worker: the server file the parent was given."""
    # Here, not at the top: only a worker serves HTTP (`check` and `graph` never load Starlette).
    from ..transports.http import default_allowed_hosts

    worker = json.loads(os.environ[WORKER_APP_ENV])
    configure_logging(worker.get("log_level"))
    allowed = worker["hosts"] or default_allowed_hosts(worker["host"])  # as `serve_http` does for one worker
    return load_server(worker["target"]).streamable_http_app(
        path=worker["path"], allowed_hosts=allowed, allowed_origins=worker.get("origins")
    )
