"""Old module paths, kept importing for one release with a `DeprecationWarning`.

The package was reorganised (the server's parts into `mcp_resolve.server`, Streamable HTTP into
`mcp_resolve.transports.http`, internals behind a leading underscore). Code that imported an old
path, say `mcp_resolve.stores.redis_replay`, still works: the import finds a stand-in module that
warns once and hands every attribute over to the module's new home. Import from the public
packages instead (`mcp_resolve`, `mcp_resolve.stores`, `mcp_resolve.transports.http`, ...).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from typing import Any

MOVED: dict[str, str] = {
    "mcp_resolve.registration": "mcp_resolve.server._registration",
    "mcp_resolve.serving": "mcp_resolve.server._serving",
    "mcp_resolve.deployment": "mcp_resolve.server._deployment",
    "mcp_resolve.methods": "mcp_resolve.server._methods",
    "mcp_resolve.direct": "mcp_resolve.server._direct",
    "mcp_resolve.completion": "mcp_resolve.server._completion",
    "mcp_resolve.caching": "mcp_resolve._caching",
    "mcp_resolve.concurrency": "mcp_resolve._concurrency",
    "mcp_resolve.environment": "mcp_resolve._environment",
    "mcp_resolve.logs": "mcp_resolve._logs",
    "mcp_resolve.signature": "mcp_resolve._signature",
    "mcp_resolve.output": "mcp_resolve._output",
    "mcp_resolve.request_session": "mcp_resolve._request_session",
    "mcp_resolve.resource_security": "mcp_resolve._resource_security",
    "mcp_resolve.principal": "mcp_resolve._principal",
    "mcp_resolve.transports.http_headers": "mcp_resolve.transports.http._wire.headers",
    "mcp_resolve.transports.http_body": "mcp_resolve.transports.http._wire.body",
    "mcp_resolve.transports.http_media": "mcp_resolve.transports.http._wire.media",
    "mcp_resolve.transports.http_hosts": "mcp_resolve.transports.http._wire.hosts",
    "mcp_resolve.transports.http_responses": "mcp_resolve.transports.http._wire.responses",
    "mcp_resolve.transports.http_endpoint": "mcp_resolve.transports.http._exchange.endpoint",
    "mcp_resolve.transports.http_exchange": "mcp_resolve.transports.http._exchange.exchange",
    "mcp_resolve.transports.http_sessions": "mcp_resolve.transports.http._exchange.sessions",
    "mcp_resolve.transports.http_standalone": "mcp_resolve.transports.http._streams.standalone",
    "mcp_resolve.transports.http_resume": "mcp_resolve.transports.http._streams.resume",
    "mcp_resolve.transports.http_streams": "mcp_resolve.transports.http._streams.caps",
    "mcp_resolve.transports.http_bearer": "mcp_resolve.transports.http._auth.bearer",
    "mcp_resolve.transports.http_prm": "mcp_resolve.transports.http._auth.prm",
    "mcp_resolve.transports.http_protected": "mcp_resolve.transports.http._auth.protected",
    "mcp_resolve.transports.http_fleet": "mcp_resolve.transports.http._fleet.sessions",
    "mcp_resolve.transports.http_workers": "mcp_resolve.transports.http._fleet.workers",
    "mcp_resolve.transports.http_lifespan": "mcp_resolve.transports.http._fleet.lifespan",
    "mcp_resolve.transports.uvicorn_limits": "mcp_resolve.transports.http._fleet.limits",
    "mcp_resolve.transports.http_options": "mcp_resolve.transports.http.options",
    "mcp_resolve.stores.redis_bus": "mcp_resolve.stores._redis.bus",
    "mcp_resolve.stores.redis_conn": "mcp_resolve.stores._redis.connection",
    "mcp_resolve.stores.redis_events": "mcp_resolve.stores._redis.events",
    "mcp_resolve.stores.redis_replay": "mcp_resolve.stores._redis.replay",
    "mcp_resolve.stores.redis_tasks": "mcp_resolve.stores._redis.tasks",
    "mcp_resolve.stores.sqlite_file": "mcp_resolve.stores._sqlite.file",
    "mcp_resolve.stores.sqlite_tasks": "mcp_resolve.stores._sqlite.tasks",
}


def public_home(module: str) -> str:
    """The public package a private module belongs to: its name up to the first private part."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_"):
            return ".".join(parts[:index])
    return module


class _Forwarding(types.ModuleType):
    """A stand-in for a moved module: every attribute is read from its new home."""

    def __init__(self, name: str, target: str) -> None:
        super().__init__(name)
        self.__target = target

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self.__target), name)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__target))


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        warnings.warn(
            f"{spec.name} is deprecated and stops importing in the next release: import from "
            f"{public_home(self.target)} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return _Forwarding(spec.name, self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        importlib.import_module(self.target)  # fail here, at the import, if the new home is broken


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedLoader(new))


def install() -> None:
    """Put the finder on `sys.meta_path` once; called by `mcp_resolve/__init__.py`."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
