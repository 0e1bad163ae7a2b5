"""MCP_RESOLVE_REDIS_URL is checked with the other settings: a bad one stops `mcp-resolve` with one line.

Before, `localhost:6379` (no scheme) passed the settings and `run` and
`check` died building the server's Redis stores, with a traceback that
repeated the value. docs/configuration.md promises one line naming the
variable, the value not shown: these run the real command to hold it to that.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import PYTHON, REFUND_DESK
from mcp_resolve.settings import InvalidSetting, load_settings

CLI = [PYTHON, "-m", "mcp_resolve"]

BAD = {
    "localhost:6379": "must start with redis://, rediss:// or unix://",
    "cache.internal:6379/0": "must start with redis://, rediss:// or unix://",
    "https://cache.internal:6379": "must start with redis://, rediss:// or unix://",
    "redis://:sekrit-PASSWORD@/0": "names no host",
    "redis://cache.internal:sixty": "does not parse as a URL with a host and a port",
    "redis://cache.internal:70000/0": "does not parse as a URL with a host and a port",
    "redis://cache.internal:0/0": "has port 0",
    "redis://cache.internal:6379/sessions": "has a path that is not a database number",
    "unix://?db=0": "names no socket path",
    "redis://cache.internal :6379": "holds spaces or control characters",
}
GOOD = (
    "redis://127.0.0.1:6379/0",
    "redis://:pass%40word@cache.internal:6380/3",
    "rediss://user:pw@cache.internal",
    "redis://[::1]:6379",
    "unix:///run/redis/redis.sock",
    "unix:///run/redis/redis.sock?db=2",
)


@pytest.mark.parametrize("url", list(BAD))
def test_a_bad_redis_url_is_refused_by_the_settings_without_showing_it(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_RESOLVE_REDIS_URL", url)
    with pytest.raises(InvalidSetting) as refused:
        load_settings()
    message = str(refused.value)
    assert message.startswith(f"MCP_RESOLVE_REDIS_URL: {BAD[url]}"), message
    assert message.endswith("(value not shown)")
    assert url not in message and "sekrit" not in message and "cache.internal" not in message


@pytest.mark.parametrize("url", GOOD)
def test_redis_urls_of_every_scheme_pass(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RESOLVE_REDIS_URL", url)
    assert load_settings().redis() == url


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [("check",), ("run",), ("run", "--http"), ("graph",)],
    ids=["check", "run-stdio", "run-http", "graph"],
)
@pytest.mark.parametrize("url", ["localhost:6379", "redis://:sekrit-PASSWORD@/0"])
def test_the_cli_stops_on_a_bad_redis_url_with_one_line(command: tuple[str, ...], url: str) -> None:
    environment = {**os.environ, "MCP_RESOLVE_REDIS_URL": url, "MCP_RESOLVE_STATE_KEYS": "k" * 48}
    done = subprocess.run(
        [*CLI, command[0], str(REFUND_DESK), *command[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()  # one line, no traceback
    assert line.startswith("mcp-resolve: MCP_RESOLVE_REDIS_URL: "), line
    assert line.endswith("(value not shown)"), line
    assert url not in line and "sekrit" not in line and "localhost" not in line
