"""`make demo` on a fresh clone: the first thing a new user runs must work with nothing set up.

The repository's committed HEAD is cloned into a temporary folder and `make
demo` runs there: it creates its own virtualenv, installs the package from
the package index, and plays the refund desk over stdio, HTTP and HTTP legacy, then
protected by bearer tokens, then behind an OAuth proxy, signed in at a headless
identity provider that `npm ci` installs into tests/node.
Skipped only when pip cannot install anything at all (no package index
reachable); CI has one, so CI runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

pytestmark = pytest.mark.slow

# What make and an outer virtualenv leave in the environment must not leak into the clone's own.
INHERITED = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")


def clean_environment() -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in INHERITED}
    venv_bin = str(Path(PYTHON).parent)
    environment["PATH"] = os.pathsep.join(
        p for p in environment.get("PATH", "").split(os.pathsep) if p != venv_bin
    )
    return environment


def pip_can_install(scratch: Path) -> bool:
    """Whether pip, as configured on this machine, can fetch a package (the cheapest honest probe)."""
    probe = subprocess.run(
        [PYTHON, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--dest", str(scratch), "hatchling"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return probe.returncode == 0


@pytest.mark.timeout(1200)
def test_make_demo_on_a_fresh_clone(tmp_path: Path) -> None:
    if shutil.which("make") is None or shutil.which("git") is None or shutil.which("npm") is None:
        pytest.fail("make, git and npm are needed to run the demo as a user would")
    if not pip_can_install(tmp_path / "probe"):
        pytest.skip("pip cannot reach a package index here, so `make demo` cannot install")
    clone = tmp_path / "mcp-resolve"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    assert not (clone / ".venv").exists()

    done = subprocess.run(
        ["make", "demo"], cwd=clone, env=clean_environment(), capture_output=True, text=True, timeout=1100
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert (clone / ".venv" / "bin" / "python").exists()
    for transport, protocol in (("stdio", "2026-07-28"), ("HTTP", "2026-07-28"), ("HTTP", "2025-11-25")):
        assert f"All checks passed ({transport}, protocol {protocol})." in done.stdout
    assert "All checks passed (HTTP with a bearer token, protocol 2026-07-28)." in done.stdout
    assert "Without a token the desk refuses: Unauthorized" in done.stdout
    assert "Without signing in the desk refuses: Unauthorized" in done.stdout  # behind the OAuth proxy
    assert done.stdout.count("): alice signs in") == 1
    assert "Sign-ins over the whole story: 1 (consent pages: 1)" in done.stdout
    assert "All checks passed (HTTP, signed in through the OAuth proxy, protocol 2026-07-28)." in done.stdout
    assert done.stdout.count("error: Error executing tool refund_order: unknown order 'ORD-8001'") == 2
    assert done.stdout.count("receipt: refunded 4800 cents for ORD-7002, restocked") == 5
    assert "FAILED" not in done.stdout
    view = "receipt view (MCP Apps): run 'make view', then open http://127.0.0.1:8000/host/?tool=refund_order"
    assert view in done.stdout
