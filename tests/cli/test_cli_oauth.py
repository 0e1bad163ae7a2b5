"""`mcp-resolve call URL --oauth`: our Client's browser sign-in, with the tokens cached per server.

The protected server and its Authlib authorization server run on loopback (tests/oauth_helpers.py).
The "system browser" is a script named by $BROWSER, which Python's `webbrowser` runs: it follows
the authorization redirects to the CLI's loopback callback and records that it was opened. The
second call must not open it again: the token is read from the per-server cache file.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import anyio
import pytest

from oauth_helpers import deployment

BROWSER = """\
import sys
import httpx

with open(sys.argv[1], "a") as log:
    log.write("opened\\n")
httpx.get(sys.argv[2], follow_redirects=True, timeout=30)
"""

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_oauth_signs_in_once_and_caches_the_tokens_per_server(tmp_path: Path) -> None:
    script = tmp_path / "browser.py"
    script.write_text(BROWSER)
    opened = tmp_path / "opened.txt"
    env = {
        **os.environ,
        "BROWSER": f"{sys.executable} {script} {opened} %s",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    async with deployment() as (_, url):
        for _ in range(2):
            with anyio.fail_after(60):
                done = await anyio.run_process(
                    [sys.executable, "-m", "mcp_resolve", "call", url, "whoami", "--oauth"],
                    env=env,
                    check=False,
                )
            out, err = done.stdout.decode(), done.stderr.decode()
            assert done.returncode == 0, err
            assert out.strip().startswith("alice with mcp:read")
        # signed in once; the second call rode the cached token
        assert opened.read_text().splitlines() == ["opened"]
        files = list((tmp_path / "cache" / "mcp-resolve" / "oauth").iterdir())
        assert len(files) == 1 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
        assert "access_token" in files[0].read_text()
        # a token never reaches the terminal
        assert "eyJ" not in out + err
