"""docs/deploy's Dockerfile and compose file agree with the nginx configuration the fleet test serves.

Docker cannot run here, so these files are checked for what would break a
`docker compose up`: the worker names and port nginx proxies to, the
environment that puts every store on Redis, the Redis settings that keep
claims (AOF, noeviction), and a Dockerfile whose command serves a file that
exists, on that port, with the Redis extra installed.
"""

from __future__ import annotations

import re
import shlex

from conftest import ROOT

DEPLOY = ROOT / "docs" / "deploy"


def test_compose_runs_three_workers_on_redis_behind_the_tested_nginx_config() -> None:
    compose = (DEPLOY / "compose.yaml").read_text()
    nginx = (DEPLOY / "nginx.conf").read_text()
    upstream = re.findall(r"^\s*server (worker\d):(\d+)", nginx, re.MULTILINE)
    assert upstream == [("worker1", "8000"), ("worker2", "8000"), ("worker3", "8000")]
    for name, _ in upstream:
        assert re.search(rf"^  {name}: \*worker$", compose, re.MULTILINE), name
    assert "MCP_RESOLVE_REDIS_URL: redis://redis:6379/0" in compose
    assert "MCP_RESOLVE_STATE_KEYS: ${MCP_RESOLVE_STATE_KEYS:?" in compose
    assert '"--appendonly", "yes"' in compose and '"--maxmemory-policy", "noeviction"' in compose
    assert "./nginx.conf:/etc/nginx/conf.d/default.conf:ro" in compose
    assert re.search(r"^\s*listen 8080;", nginx, re.MULTILINE) and '"8080:8080"' in compose
    assert "dockerfile: docs/deploy/Dockerfile" in compose and "context: ../.." in compose


def test_the_dockerfile_serves_the_refund_desk_on_the_port_nginx_uses() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "pip install --no-cache-dir '.[redis,auth]'" in dockerfile
    command = re.search(r"^CMD (\[.*?\])\s*$", dockerfile.replace("\\\n", ""), re.MULTILINE | re.DOTALL)
    assert command is not None
    argv = [part.strip().strip('"') for part in command.group(1).strip("[]").split(",")]
    assert argv[:3] == ["mcp-resolve", "run", "examples/refund_desk/server.py"]
    assert (ROOT / argv[2]).is_file()
    assert argv[argv.index("--port") + 1] == "8000" and argv[argv.index("--host") + 1] == "0.0.0.0"
    assert "EXPOSE 8000" in dockerfile and "/health" in dockerfile
    assert shlex.split(" ".join(argv))  # plain words, nothing a shell would have to interpret


def _directives(text: str) -> list[str]:
    """An nginx configuration's lines without comments, indentation or blank lines."""
    return [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]


def test_the_pages_whole_nginx_conf_is_deploy_nginx_conf_on_loopback_inside_its_wrapper() -> None:
    """docs/deploy.md's nginx.conf for one machine holds deploy/nginx.conf as it is, but for the addresses."""
    page = (ROOT / "docs" / "deploy.md").read_text()
    blocks = re.findall(r"^```text\n(# save as nginx/nginx\.conf\n.*?)^```$", page, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1
    whole = _directives(blocks[0])
    site = (DEPLOY / "nginx.conf").read_text()
    for index in (1, 2, 3):
        site = site.replace(f"worker{index}:8000", f"127.0.0.1:800{index}")
    site = site.replace("listen 8080;", "listen 127.0.0.1:8080;")
    part = _directives(site)
    starts = [i for i in range(len(whole)) if whole[i : i + len(part)] == part]
    assert len(starts) == 1, "the page's nginx.conf no longer holds docs/deploy/nginx.conf"
    wrapper, after = whole[: starts[0]], whole[starts[0] + len(part) :]
    assert after == ["}"]  # the http block's end, nothing more
    assert "http {" in wrapper and "events {" in wrapper and any(line.startswith("pid ") for line in wrapper)
    for temp in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        assert any(line.startswith(f"{temp}_temp_path ") for line in wrapper), temp
