"""The proxy benchmark (benchmarks/proxy.py), run for real with a handful of calls: every front answers."""

from __future__ import annotations

import subprocess

import pytest

from conftest import PYTHON, ROOT

pytestmark = pytest.mark.slow


def test_the_proxy_benchmark_runs_every_front() -> None:
    done = subprocess.run(
        [PYTHON, str(ROOT / "benchmarks" / "proxy.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split()[0] for line in done.stdout.splitlines()[2:]]
    assert rows == [
        "direct",
        "mcp-resolve",
        "FastMCP",
    ]  # each answered its echo calls (the driver checks them)
