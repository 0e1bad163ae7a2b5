"""Logging for a served process: one stderr handler when none exists, and the `mcp_resolve` level.

Every logger of the package is a child of `mcp_resolve` (`mcp_resolve.http`,
`mcp_resolve.server.<name>`, ...), so one level on that logger governs them
all. Logging an application already configured is kept: only the level of
`mcp_resolve` changes, and only when a level was asked for.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["FORMAT", "PACKAGE_LOGGER", "configure_logging"]

PACKAGE_LOGGER = "mcp_resolve"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: str | None) -> str:
    """Set up logging for `run`; returns the level the `mcp_resolve` loggers now use.

    With no handler on the root logger yet (a bare `python server.py`), add one
    writing to stderr (never stdout, which stdio's protocol owns) at `level`,
    default INFO. `level` also becomes the level of the `mcp_resolve` logger.
    """
    root = logging.getLogger()
    package = logging.getLogger(PACKAGE_LOGGER)
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        root.setLevel(level or "INFO")
    if level is not None:
        package.setLevel(level)
    return logging.getLevelName(package.getEffectiveLevel())
