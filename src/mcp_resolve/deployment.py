"""Whether a deployment can work at all, checked before it serves: a policy the CLI and the HTTP app share.

A fleet of workers that each seal requestState with a key of their own would
reject most multi-round retries at random, since the rounds of one call land
on any worker. Refusing to start is kinder than failing at random.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

from .sealing import ENV_KEYS

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = ["check_state_keys"]

logger = logging.getLogger("mcp_resolve.http")

_warned_ephemeral: weakref.WeakSet[Any] = weakref.WeakSet()


def check_state_keys(server: MCPServer, workers: int) -> None:
    """Refuse a multi-worker fleet without shared requestState keys; warn once for a lone worker.

    With per-process keys every worker rejects state another worker sealed, so
    most input-required retries would fail at random: better not to start.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if not server.request_state_security.is_ephemeral:
        return
    if workers > 1:
        raise RuntimeError(
            f"refusing to start {workers} workers with a per-process requestState key: each worker would "
            f"reject the state the others sealed. Share keys by setting {ENV_KEYS} (comma-separated secrets "
            'of at least 32 bytes; generate one with: python -c "import secrets; print(secrets.token_urlsafe(48))") '
            "or pass MCPServer(..., request_state_security=RequestStateSecurity(keys=[...]))."
        )
    if server not in _warned_ephemeral:
        _warned_ephemeral.add(server)
        logger.warning(
            "requestState is sealed with a per-process ephemeral key: input-required retries that arrive "
            "after a restart will be rejected; set %s to keep them valid across restarts",
            ENV_KEYS,
        )
