"""The package as a user installs it: a built wheel in a fresh virtualenv, not this editable checkout.

The wheel is built offline (hatchling and hatch-fancy-pypi-readme are in the
test extra, no build isolation) and installed with no index; its dependencies come from the test
environment's site-packages on PYTHONPATH, whose editable `.pth` hook is not
read from there, so `mcp_resolve` can only be the wheel's copy. The README's
first example then runs against it, and `mcp-resolve --version` answers. The
wheel's metadata is what PyPI shows: project URLs, and the README as the long
description with every link absolute (a relative one is dead there).
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest

from conftest import ROOT

REPOSITORY = "https://github.com/mcp-resolve/mcp-resolve"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            work,
            ROOT,
        ],
        check=True,
        capture_output=True,
    )
    (built,) = work.glob("mcp_resolve-*.whl")
    return built


@pytest.fixture(scope="module")
def metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode())


@pytest.fixture(scope="module")
def installed(wheel: Path) -> tuple[Path, dict[str, str]]:
    """A fresh virtualenv holding only the wheel; the environment that runs it."""
    work = wheel.parent
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
        [fresh / "bin" / "mcp-resolve", "--version"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
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


def test_the_metadata_names_the_project_urls(metadata: Message) -> None:
    urls = dict(entry.split(", ", 1) for entry in metadata.get_all("Project-URL", []))
    assert urls == {
        "Homepage": REPOSITORY,
        "Documentation": f"{REPOSITORY}/tree/main/docs",
        "Repository": REPOSITORY,
        "Issues": f"{REPOSITORY}/issues",
        "Changelog": f"{REPOSITORY}/blob/main/CHANGELOG.md",
    }


def test_the_long_description_has_no_relative_links(metadata: Message) -> None:
    assert metadata["Description-Content-Type"] == "text/markdown"
    description = metadata.get_payload()
    assert isinstance(description, str)
    targets = re.findall(r"\]\(([^)\s]+)\)", description)
    assert f"{REPOSITORY}/blob/main/docs/dependencies.md" in targets  # the README's links, rewritten
    assert f"{REPOSITORY}/blob/main/docs/dependencies.md#per-request-per-round-per-call" in targets
    relative = [t for t in targets if not (t.startswith("#") or re.match(r"[a-z][a-z0-9+.-]*:", t))]
    assert relative == [], relative
    # Only links changed: the README's text and code are all there.
    readme = (ROOT / "README.md").read_text()
    assert (
        re.sub(r"\]\([^)\s]+\)", "]()", description).strip()
        == re.sub(r"\]\([^)\s]+\)", "]()", readme).strip()
    )
