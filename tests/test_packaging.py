"""The package as a user installs it: a built wheel in a fresh virtualenv, not this editable checkout.

The wheel is built offline (hatchling is in the test extra, no build
isolation) and installed with no index; its dependencies come from the test
environment's site-packages on PYTHONPATH, whose editable `.pth` hook is not
read from there, so `mcp_resolve` can only be the wheel's copy. The README's
first example then runs against it, and `mcp-resolve --version` answers.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh virtualenv holding only the wheel; the environment that runs it."""
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", work, ROOT],
        check=True,
        capture_output=True,
    )
    (wheel,) = work.glob("mcp_resolve-*.whl")
    fresh = work / "venv"
    venv.create(fresh, with_pip=True)
    python = fresh / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel],
        check=True,
        capture_output=True,
    )
    environment = {"PYTHONPATH": sysconfig.get_paths()["purelib"], "PATH": f"{fresh / 'bin'}"}
    return fresh, environment


def test_the_wheel_is_what_runs(installed: tuple[Path, dict[str, str]]) -> None:
    fresh, environment = installed
    where = subprocess.run(
        [fresh / "bin" / "python", "-c", "import mcp_resolve; print(mcp_resolve.__file__)"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(fresh)), where.stdout
    assert (Path(where.stdout.strip()).parent / "py.typed").exists()


def test_version_from_the_installed_command(installed: tuple[Path, dict[str, str]]) -> None:
    fresh, environment = installed
    shown = subprocess.run(
        [fresh / "bin" / "mcp-resolve", "--version"], env=environment, capture_output=True, text=True, check=True
    )
    assert re.fullmatch(r"mcp-resolve \d+\.\d+\.\d+\S*\n", shown.stdout), shown.stdout


def test_the_readme_example_runs_against_the_wheel(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    fresh, environment = installed
    first, second = FENCE.findall((ROOT / "README.md").read_text())[:2]
    script = tmp_path / "readme_example.py"
    script.write_text(first.replace('if __name__ == "__main__":', "if False:") + "\n" + second)
    done = subprocess.run(
        [fresh / "bin" / "python", script], env=environment, capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
