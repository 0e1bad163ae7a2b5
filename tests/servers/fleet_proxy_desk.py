"""The proxied desk as one worker of a fleet (`mcp-resolve run tests/servers/fleet_proxy_desk.py --http`).

`proxy_helpers.desk` behind an `OIDCProxy`, configured the way an operator
configures every worker of a fleet: from the environment. The upstream's
discovery URL and the proxy's client at it, the public origin (`base_url`:
nginx's, never this worker's own port), the shared store (a Redis URL) and the
key that seals what the proxy keeps there. Every worker started with the same
environment serves any step of a sign-in and accepts any worker's tokens.
One more tool says which worker answered (its process id).

    FLEET_PROXY_DISCOVERY_URL, FLEET_PROXY_CLIENT_ID, FLEET_PROXY_CLIENT_SECRET,
    FLEET_PROXY_BASE_URL, FLEET_PROXY_STORE, FLEET_PROXY_ENCRYPTION_KEY, FLEET_PROXY_USERINFO_URL
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_resolve.auth.proxy import OIDCProxy
from proxy_helpers import READ, WRITE, desk

proxy = OIDCProxy(
    discovery_url=os.environ["FLEET_PROXY_DISCOVERY_URL"],
    client_id=os.environ["FLEET_PROXY_CLIENT_ID"],
    client_secret=os.environ["FLEET_PROXY_CLIENT_SECRET"],
    base_url=os.environ["FLEET_PROXY_BASE_URL"],
    store=os.environ["FLEET_PROXY_STORE"],
    encryption_key=os.environ["FLEET_PROXY_ENCRYPTION_KEY"],
    upstream_name="google",
    upstream_options={"allow_http_loopback": True},
    scopes=[READ, WRITE],
    required_scopes=[READ],
)
mcp = desk(proxy, os.environ["FLEET_PROXY_USERINFO_URL"])


@mcp.tool()
def worker() -> int:
    """The process id of the worker that answered."""
    return os.getpid()
