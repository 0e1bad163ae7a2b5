"""What `list` and `call` connect to: SERVER as a file, a URL, or `-- command args`, through our Client.

A server file is run the way a client would run it, as a stdio child (`mcp-resolve run FILE` on
this interpreter), so what `call` shows is what Claude or Cursor would get. A URL is Streamable HTTP; with
`--oauth` the Client's browser sign-in runs, and its tokens are cached per server in a file of
their own (mode 0600) under the user's cache folder, so the next call does not sign in again.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..client import Client
from ._target import CLIError, absolute_target, split_target
from ._terminal import Terminal

__all__ = ["Connection", "is_url", "token_cache"]

PROTOCOLS = ("auto", "legacy", "2026-07-28")
SHIELDED = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "from mcp_resolve.cli import main; sys.exit(main(sys.argv[1:]))"
)
"""`mcp-resolve ARGS` for the server child, deaf to the terminal's Ctrl-C: the person's Ctrl-C is for
`call`, which then closes the child's stdin, and the child ends as a stdio server does."""


def is_url(server: str) -> bool:
    return server.startswith(("http://", "https://"))


def token_cache(url: str) -> Path:
    """The file the OAuth tokens of one server are kept in: one per server URL."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-resolve" / "oauth"
    digest = hashlib.sha256(url.encode()).hexdigest()[:24]
    return base / f"{digest}.json"


@dataclass
class Connection:
    """SERVER and the options that shape the Client for it."""

    server: str | None
    command: list[str] | None = None
    protocol: str = "auto"
    headers: dict[str, str] = field(default_factory=dict)
    oauth: bool = False
    roots: list[str] = field(default_factory=list)
    sampling_model: str | None = None
    timeout: float = 60.0

    def target(self) -> str | list[str]:
        if self.command:
            if self.server is not None:
                raise CLIError("give SERVER or `-- command args`, not both")
            return self.command
        if self.server is None:
            raise CLIError("give SERVER: a server file, a URL, or `-- command args`")
        if is_url(self.server):
            return self.server
        path, _ = split_target(self.server)
        if not path.is_file():
            raise CLIError(f"no such file: {path} (SERVER is a file, a URL, or `-- command args`)")
        return [sys.executable, "-c", SHIELDED, "run", absolute_target(self.server)]

    def client(self, terminal: Terminal) -> Client:
        target = self.target()
        if self.protocol not in PROTOCOLS:
            raise CLIError(f"--protocol is one of {', '.join(PROTOCOLS)}")
        http = isinstance(target, str)
        if (self.headers or self.oauth) and not http:
            raise CLIError("--header and --oauth are for a server at a URL")
        auth: Any = None
        if self.oauth:
            assert isinstance(target, str)
            try:
                from ..client.auth import FileTokenStorage, OAuth
            except ImportError:
                raise CLIError("--oauth needs the auth extra: pip install 'mcp-resolve[auth]'") from None
            auth = OAuth(client_name="mcp-resolve CLI", storage=FileTokenStorage(token_cache(target)))
        roots = [Path(root).resolve().as_uri() for root in self.roots]
        for root in self.roots:
            if not Path(root).is_dir():
                raise CLIError(f"--root {root}: not a directory")
        return Client(
            target,
            mode=self.protocol,  # type: ignore[arg-type]
            elicitation_handler=terminal.elicit,
            sampling_handler=terminal.sample,
            roots=roots or None,
            headers=self.headers or None,
            auth=auth,
            client_info={"name": "mcp-resolve-cli", "version": _version()},
            init_timeout=self.timeout,
        )


def _version() -> str:
    from .. import __version__

    return __version__
