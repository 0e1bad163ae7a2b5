"""Shared fixtures: the asyncio backend for anyio tests, paths to the example servers, a raw handshake, Node 22.

Also what keeps the `slow` marker true: a test that starts a process or listens on a socket (a
stdio server, uvicorn, redis-server, nginx, Node) is `@pytest.mark.slow`, and `make test-fast`
runs the others. One that does either unmarked fails, naming what it started.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from node_helpers import INSPECTOR, MERMAID, NODE_BIN, NODE_DIR, TS_CLIENT

TESTS = Path(__file__).resolve().parent
"""tests/: the shared helpers and tests/servers, wherever in its folders a test module sits."""
SERVERS = TESTS / "servers"
ROOT = TESTS.parent
EXAMPLES = ROOT / "examples"
REFUND_DESK = EXAMPLES / "refund_desk" / "server.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Import a file as a fresh module (each call re-runs it: a new server, new counters)."""
    module_name = name or f"_example_{path.parent.name}_{path.stem}_{id(path)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def refund_desk() -> ModuleType:
    """A fresh import of examples/refund_desk/server.py."""
    return load_module(REFUND_DESK)


PYTHON = sys.executable


def initialize_request(capabilities: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    """A handshake-era `initialize`, for tests that speak raw JSON-RPC to a server."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    """An environment whose PATH starts with the repo-local Node 22, installing it first if needed."""
    if shutil.which("node") is None and not (NODE_BIN / "node").exists():
        pytest.skip("node is not installed: the Node client tests need Node.js and npm on PATH")
    if not (INSPECTOR.exists() and TS_CLIENT.exists() and MERMAID.exists() and (NODE_BIN / "node").exists()):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: cannot install tests/node (npm ci)")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True, timeout=300
        )
    return {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


# -- the slow marker, kept true ------------------------------------------------------------------
_started: list[str] = []
_watching = False
_popen_init = subprocess.Popen.__init__
_listen = socket.socket.listen


def _watched_popen_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
    if _watching:
        program = args if isinstance(args, (str, bytes, os.PathLike)) else args[0]
        _started.append(f"a process ({Path(os.fsdecode(program)).name.split()[0]})")
    _popen_init(self, args, *rest, **options)


def _watched_listen(self: socket.socket, *backlog: int) -> None:
    if _watching:
        _started.append("a listening socket (a server)")
    _listen(self, *backlog)


# Collects tests/official_server_tests/ (the official SDK's own tests) with their imports rewritten.
pytest_plugins = ["official_tests_helpers"]


def pytest_configure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _watched_popen_init  # type: ignore[method-assign]
    socket.socket.listen = _watched_listen  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    subprocess.Popen.__init__ = _popen_init  # type: ignore[method-assign]
    socket.socket.listen = _listen  # type: ignore[method-assign]


def _watch(item: pytest.Item) -> Generator[None, object, object]:
    """Run a phase of `item` watching for processes and servers, if it is not marked slow."""
    global _watching
    _started.clear()
    _watching = item.get_closest_marker("slow") is None
    try:
        outcome = yield
    finally:
        _watching = False
    if _started:
        what = ", ".join(sorted(set(_started)))
        pytest.fail(f"{item.nodeid} started {what} but is not marked slow: add @pytest.mark.slow", pytrace=False)
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watch(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _watch(item))
