"""Shared fixtures: the asyncio backend for anyio tests, paths to the example servers, a raw handshake, Node 22."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from node_helpers import INSPECTOR, NODE_BIN, NODE_DIR, TS_CLIENT

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
    if not (INSPECTOR.exists() and TS_CLIENT.exists() and (NODE_BIN / "node").exists()):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: cannot install tests/node (npm ci)")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True, timeout=300
        )
    return {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
