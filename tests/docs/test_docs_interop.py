"""docs/interop.md's Node examples, run as the page tells a reader to run them.

tests/docs/test_docs.py runs the page's Python; the TypeScript client and the
Inspector CLI are Node, so here the page's `refund_desk.mjs` is saved into a
folder of its own (with the repo-local tests/node install as its
node_modules, as `npm install` would give a reader) and run against the
page's own `refund_desk.py` and `notes.py` served over HTTP and stdio; what
they print must be what the page says the reader sees.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT, load_module
from http_helpers import http_server
from node_helpers import INSPECTOR, NODE_BIN
from test_docs import blocks, saved_files

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

PAGE = ROOT / "docs" / "interop.md"
INSPECTOR_NPX = "npx @modelcontextprotocol/inspector@2.12.0"


def shown(page: Path) -> list[tuple[str, str]]:
    return [(language, code) for language, code, _line in blocks(page)]


def block_after(page: Path, language: str, containing: str) -> str:
    """The code of the first block after the `language` block that contains `containing`."""
    found = shown(page)
    (index,) = [i for i, (lang, code) in enumerate(found) if lang == language and containing in code]
    return found[index + 1][1]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The reader's folder: the page's saved files, its refund_desk.mjs, and node_modules."""
    for name, code in saved_files(PAGE).items():
        (tmp_path / name).write_text(code)
    (script,) = [code for lang, code in shown(PAGE) if lang == "text" and code.startswith("// save as")]
    name = re.match(r"// save as (\S+)\n", script)
    assert name is not None
    (tmp_path / name.group(1)).write_text(script)
    (tmp_path / "node_modules").symlink_to(NODE_BIN.parent)
    return tmp_path


async def test_the_typescript_client_prints_what_the_page_shows(
    folder: Path,
    node_env: dict[str, str],
) -> None:
    (commands,) = [code for lang, code in shown(PAGE) if lang == "sh" and "node refund_desk.mjs" in code]
    assert "mcp-resolve run refund_desk.py --http --port 8000 &" in commands
    expected = block_after(PAGE, "sh", "node refund_desk.mjs")
    async with http_server(load_module(folder / "refund_desk.py").mcp.streamable_http_app()) as base:
        done = subprocess.run(
            [str(NODE_BIN / "node"), "refund_desk.mjs", f"{base}/mcp"],
            cwd=folder,
            env=node_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_the_inspector_commands_on_the_page_run(folder: Path, node_env: dict[str, str]) -> None:
    commands = next(code for lang, code in shown(PAGE) if lang == "sh" and INSPECTOR_NPX in code)
    stdio = [
        line for line in commands.replace("\\\n", " ").splitlines() if "mcp-resolve run notes.py" in line
    ]
    assert len(stdio) == 2
    outputs = []
    for line in stdio:
        argv = shlex.split(line.replace(INSPECTOR_NPX, "INSPECTOR"))
        argv[argv.index("mcp-resolve") : argv.index("mcp-resolve") + 1] = [PYTHON, "-m", "mcp_resolve"]
        argv[argv.index("INSPECTOR")] = str(INSPECTOR)
        done = subprocess.run(
            [str(NODE_BIN / "node"), *argv],
            cwd=folder,
            env={**node_env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert '"name": "summarize"' in outputs[0] and '"name": "add"' in outputs[0]
    assert '"text": "5"' in outputs[1]
