"""docs/deploy.md's commands run as written on loopback: four workers on one host, and the whole fleet on one machine.

The page marks what is run here with `<!-- tested: NAME -->` before a ```sh
block: `one-host` and `fleet` start a set-up, `one-host call` and `fleet call`
make the page's client call through it, and the ```text block right after a
call is what it must print. The files the page saves (a block whose first line
is `# save as PATH`: server.py, call.py, nginx/nginx.conf) are written to a
fresh folder, which is where the commands run, as a reader's shell would.

The only change is the ports: every port the page names (Redis's, the
workers', nginx's) becomes a free loopback one, in the commands, the saved
files and the expected lines alike. The one-host set-up finds a Redis already
running, as the page says; here it is redis-server on a free port. The fleet
starts its own Redis, workers and nginx, as the page's commands do. Each set-up
runs under bash in a session of its own, and the whole session is stopped at
the end. The workers' log must carry the line the page shows: which store is
on Redis, and where.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT
from fleet_helpers import wait_healthy
from http_helpers import free_port
from redis_helpers import RedisServer

pytestmark = pytest.mark.slow

PAGE = ROOT / "docs" / "deploy.md"
PAGE_PORTS = ("6379", "8000", "8001", "8002", "8003", "8080")
BLOCK = re.compile(
    r"(?:^<!-- tested: ([\w -]+) -->\n)?^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
)
SAVE_AS = re.compile(r"\A# save as ([\w./-]+)\n")


def page_blocks() -> list[tuple[str | None, str, str]]:
    """(tested name or None, language, code) of every fenced block of the page, in order."""
    return [(match.group(1), match.group(2), match.group(3)) for match in BLOCK.finditer(PAGE.read_text())]


def marked(name: str) -> str:
    found = [code for marker, language, code in page_blocks() if marker == name and language == "sh"]
    assert len(found) == 1, f"docs/deploy.md has {len(found)} ```sh blocks marked <!-- tested: {name} -->"
    return found[0]


def printed_by(name: str) -> list[str]:
    """The ```text block right after the `name` block: what its command prints."""
    blocks = page_blocks()
    index = next(i for i, (marker, _, _) in enumerate(blocks) if marker == name)
    language, code = blocks[index + 1][1:]
    assert language == "text", f"no ```text block after <!-- tested: {name} -->"
    return code.splitlines()


def stores_line() -> str:
    """The log line the page shows for a worker on Redis."""
    lines = [
        code.strip()
        for _, language, code in page_blocks()
        if language == "text" and code.startswith("INFO mcp_resolve.stores: ")
    ]
    assert len(lines) == 1, "docs/deploy.md shows no (or several) store lines"
    return lines[0]


class Folder:
    """A reader's folder: the page's saved files, with every port of the page mapped to a free one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ports = {port: str(free_port()) for port in PAGE_PORTS}
        for _, _, code in page_blocks():
            saved = SAVE_AS.match(code)
            if saved:
                target = path / saved.group(1)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(self.local(code))
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_RESOLVE_")}
        # The reader's PATH: this Python's console scripts (python, mcp-resolve), and nginx where
        # Debian installs it.
        self.env["PATH"] = os.pathsep.join(
            [str(Path(PYTHON).parent), os.environ["PATH"], "/usr/sbin", "/sbin"]
        )

    def local(self, text: str) -> str:
        return re.sub(r"(?<!\d)(" + "|".join(PAGE_PORTS) + r")(?!\d)", lambda m: self.ports[m.group(1)], text)

    def port(self, page_port: str) -> str:
        return self.ports[page_port]

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-c", self.local(command)],
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    @contextmanager
    def started(self, commands: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
        """`commands` run by bash in a session of their own, stopped (with all they started) on the way out."""
        with open(log, "wb") as out:
            shell = subprocess.Popen(
                ["bash", "-e", "-c", self.local(commands)],
                cwd=self.path,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            yield shell
        finally:
            _stop_session(shell)


def _stop_session(shell: subprocess.Popen[bytes]) -> None:
    """SIGTERM to every process of the session the shell leads, then SIGKILL to what is left after 15 s."""
    for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(shell.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            shell.poll()  # reap the shell itself, or the group never looks empty
            try:
                os.killpg(shell.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def wait_for_lines(log: Path, line: str, count: int, timeout: float = 30.0) -> int:
    """How many log lines end with `line`, once there are `count` of them (or the deadline passed)."""
    deadline = time.monotonic() + timeout
    while True:
        found = sum(1 for text in log.read_text(errors="replace").splitlines() if text.endswith(line))
        if found >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_one_host_four_workers_answer_local_clients(tmp_path: Path) -> None:
    """The page's one-host command, then its call through `localhost`: the Host the old command refused."""
    folder = Folder(tmp_path)
    redis = RedisServer(int(folder.port("6379")))
    redis.start()
    log = tmp_path / "workers.log"
    try:
        with folder.started(marked("one-host"), log) as shell:
            wait_healthy(f"http://127.0.0.1:{folder.port('8000')}/health", shell)
            call = folder.run(marked("one-host call"))
            assert call.returncode == 0, call.stdout + call.stderr + log.read_text()
            assert call.stdout.splitlines() == printed_by("one-host call"), call.stderr
            # The CLI before it starts them, then each of the four workers as it starts.
            expected = folder.local(stores_line().removeprefix("INFO "))
            assert wait_for_lines(log, expected, 5) == 5, log.read_text()
    finally:
        redis.close()


def test_the_fleet_on_one_machine_answers_through_nginx(tmp_path: Path) -> None:
    """Redis, three workers and nginx from the page's commands and nginx.conf, and the page's call through nginx."""
    folder = Folder(tmp_path)
    assert (tmp_path / "nginx" / "nginx.conf").is_file()
    log = tmp_path / "fleet.log"
    with folder.started(marked("fleet"), log):
        for page_port in ("8001", "8002", "8003", "8080"):
            wait_healthy(f"http://127.0.0.1:{folder.port(page_port)}/health")
        call = folder.run(marked("fleet call"))
        assert call.returncode == 0, call.stdout + call.stderr + log.read_text()
        assert call.stdout.splitlines() == printed_by("fleet call"), call.stderr
        expected = folder.local(
            stores_line().removeprefix("INFO ").replace("redis://localhost:", "redis://127.0.0.1:")
        )
        assert wait_for_lines(log, expected, 3) == 3, log.read_text()
        assert (tmp_path / "redis" / "appendonlydir").is_dir()  # Redis kept claims as the page asks
