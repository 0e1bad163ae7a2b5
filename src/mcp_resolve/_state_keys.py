"""What a requestState key must be: shared by the code that takes keys and the settings that read them.

`RequestStateSecurity(keys=...)` (`mcp_resolve.sealing`) and `MCP_RESOLVE_STATE_KEYS`
(`mcp_resolve.settings`) refuse the same short keys with the same advice. This module sits below
both, so neither imports the other for it: sealing asks the settings for the operator's keys, and
the settings need nothing of sealing.
"""

from __future__ import annotations

from ._environment import ENV_PREFIX

__all__ = ["ENV_KEYS", "GENERATE_HINT", "MIN_SECRET_BYTES"]

ENV_KEYS = ENV_PREFIX + "STATE_KEYS"
"""The variable holding the operator's key ring: comma-separated secrets, newest first."""
MIN_SECRET_BYTES = 32
GENERATE_HINT = 'generate one with: python -c "import secrets; print(secrets.token_urlsafe(48))"'
"""The advice every refused key ends with."""
