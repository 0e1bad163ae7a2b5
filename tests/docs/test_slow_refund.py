"""examples/slow_refund: the client script plays the story over stdio and HTTP, and every check in it holds."""

from __future__ import annotations

import subprocess

import pytest

from conftest import EXAMPLES, PYTHON

CLIENT = EXAMPLES / "slow_refund" / "client.py"


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["--http"]], ids=["stdio", "http"])
def test_the_slow_refund_story(args: list[str]) -> None:
    done = subprocess.run([PYTHON, str(CLIENT), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1. a refund as a task" and lines[-1] == "all checks passed"
    assert "  asked: ['Refund 9.99 for ORD-7001?']" in lines
    assert "  cancelled: no refund" in lines
    assert sum("payment provider" in line for line in lines) >= 4
