"""The repo-local Node 22 and the Node clients in tests/node, for the tests that run them.

tests/node holds package.json and its lock (`make` runs `npm ci` before pytest;
the `node_env` fixture in conftest.py runs it itself when the install is missing). The Node 22 binary is
the npm package `node`'s, in tests/node/node_modules/.bin, since the Inspector
needs Node >= 22.19.
"""

from __future__ import annotations

from pathlib import Path

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE_BIN = NODE_DIR / "node_modules" / ".bin"
INSPECTOR = (
    NODE_DIR
    / "node_modules"
    / "@modelcontextprotocol"
    / "inspector"
    / "clients"
    / "launcher"
    / "build"
    / "index.js"
)
TS_CLIENT = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"
MERMAID = NODE_DIR / "node_modules" / "mermaid" / "package.json"
