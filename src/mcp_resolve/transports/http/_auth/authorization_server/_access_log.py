"""Keep one-time secrets out of the access log: the query of the sign-in pages is not logged.

A web server's access log records every request line, query included. On
`/auth/callback` that query carries the upstream's authorization code (and the
sign-in's `state`); on `/consent` and `/authorize` it names a sign-in in
progress. Each is single-use and short-lived, but a log outlives them and is
read by more people than the server. This filter, on uvicorn's access logger,
cuts those queries to `?…`; every other line is left as uvicorn wrote it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

__all__ = ["hide_sign_in_queries"]

_ACCESS_LOGGER = "uvicorn.access"


class _HiddenQueries(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.paths: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn's access line: (client address, method, path with query, HTTP version, status)
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            path, _, _query = args[2].partition("?")
            if path in self.paths:
                record.args = (*args[:2], f"{path}?…", *args[3:])
        return True


_FILTER = _HiddenQueries()


def hide_sign_in_queries(paths: Iterable[str]) -> None:
    """Hide the queries of `paths` in uvicorn's access log (in this process, from now on)."""
    _FILTER.paths.update(paths)
    logger = logging.getLogger(_ACCESS_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
