"""A DPoP-protected desk as one worker of the DPoP fleet test (`mcp-resolve run ... --http`).

Tokens are JWTs signed with the key whose PEM is in DPOP_ISSUER_PEM, for the
resource DPOP_RESOURCE (the fleet's public URL, nginx's); DPoP is required.
Proof ids are claimed in the replay store every worker shares: Redis,
through MCP_RESOLVE_REDIS_URL (nothing here configures one).
"""

from __future__ import annotations

import os

from mcp_resolve import MCPServer
from mcp_resolve.auth import AuthSettings, JWTVerifier
from mcp_resolve.auth.tokens import DPoPOptions

mcp = MCPServer(
    "DPoP fleet desk",
    token_verifier=JWTVerifier(public_key=os.environ["DPOP_ISSUER_PEM"]),
    auth=AuthSettings(
        issuer_url="https://issuer.example",
        resource_server_url=os.environ["DPOP_RESOURCE"],
        dpop=DPoPOptions(required=True),
    ),
)


@mcp.tool()
def worker() -> int:
    """The process id of the worker that answered."""
    return os.getpid()
