"""A real fleet for tests: worker processes of `mcp-resolve run --http`, and nginx in front with docs/deploy/nginx.conf.

nginx is Debian's (`make test` installs it where missing) and runs as this
user in a directory of its own, with the documented config included as it
is except for the addresses: `workerN:8000` becomes a loopback port of ours,
and `listen 8080` a free one.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from http_helpers import free_port

__all__ = ["Nginx", "Worker", "wait_healthy"]

ROOT = Path(__file__).resolve().parent.parent
NGINX_CONF = ROOT / "docs" / "deploy" / "nginx.conf"
PYTHON = os.environ.get("PYTHON_FOR_TESTS") or __import__("sys").executable


def wait_healthy(url: str, process: subprocess.Popen[bytes] | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{url} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} never became healthy")


class Worker:
    """One `mcp-resolve run FILE --http --port P` process (a single uvicorn worker)."""

    def __init__(self, target: Path, env: dict[str, str], log_dir: Path, name: str) -> None:
        self.port = free_port()
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        command = [PYTHON, "-m", "mcp_resolve", "run", str(target), "--http", "--port", str(self.port)]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT / "tests", env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT
            )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def wait(self) -> None:
        """Healthy, and ours: the `worker` tool answers this process's id (not another server's on the port)."""
        wait_healthy(f"http://127.0.0.1:{self.port}/health", self.process)
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "worker",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "worker"}
        answer = httpx.post(self.url, json=call, headers=headers, timeout=5).json()
        if answer.get("result", {}).get("structuredContent") != {"result": self.process.pid}:
            raise RuntimeError(f"{self.name} on port {self.port} is not ours: {answer}\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no goodbye; what a crashed host looks like to the rest."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


class Nginx:
    """nginx serving docs/deploy/nginx.conf in front of `workers`, on a free loopback port (or `port`:
    chosen beforehand when the workers must know their public URL before nginx starts)."""

    def __init__(self, ports: list[int], port: int | None = None) -> None:
        binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
        if binary is None:
            pytest.fail(
                "nginx is not installed: run `make test` (it installs it) or apt-get install nginx-light"
            )
        self.binary = binary
        self.port = port or free_port()
        self.prefix = Path(tempfile.mkdtemp(prefix="mcp-resolve-nginx-"))
        site = NGINX_CONF.read_text()
        for index, worker_port in enumerate(ports, start=1):
            site = site.replace(f"worker{index}:8000", f"127.0.0.1:{worker_port}")
        site = re.sub(r"\n *server worker\d+:8000[^\n]*;", "", site)  # a fleet smaller than the file's
        site, listens = re.subn(r"listen 8080;", f"listen 127.0.0.1:{self.port};", site)
        assert listens == 1 and "worker" not in re.sub(r"#.*", "", site).replace("mcp_workers", ""), site
        (self.prefix / "site.conf").write_text(site)
        (self.prefix / "nginx.conf").write_text(
            f"""daemon off;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {self.prefix}/body;
    proxy_temp_path {self.prefix}/proxy;
    fastcgi_temp_path {self.prefix}/fastcgi;
    uwsgi_temp_path {self.prefix}/uwsgi;
    scgi_temp_path {self.prefix}/scgi;
    include {self.prefix}/site.conf;
}}
"""
        )
        self.process = subprocess.Popen(
            [binary, "-p", str(self.prefix), "-c", str(self.prefix / "nginx.conf")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        wait_healthy(f"http://127.0.0.1:{self.port}/health", self.process)
        time.sleep(0.1)
        if self.process.poll() is not None:  # another nginx or server answered on the port
            raise RuntimeError(
                f"nginx exited: {self.process.stdout.read() if self.process.stdout else b''!r}"
            )

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)
