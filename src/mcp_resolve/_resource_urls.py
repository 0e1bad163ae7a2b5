"""What an http(s) resource URL is, once normalised: one rule for both sides of OAuth.

A protected server compares a token's audience with its own URL, and a client
compares the `resource` a server's metadata publishes with the endpoint it
talks to (RFC 8707, RFC 9728). Both must normalise the same way and refuse the
same spellings, or a URL one side rejects would be accepted by the other. The
rule lives here, with nothing but the standard library, so the server's
`auth/` and the client's `client/auth/` share it without either importing
the other.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["CanonicalURL", "canonical_url", "is_web_url"]

_PRINTABLE_URL = re.compile(r"[!-~]+")
"""Printable ASCII without spaces: `urlsplit` silently drops tabs and newlines, so they are refused first."""
_HOST = re.compile(r"[a-z0-9._-]+|\[[0-9a-f:.]+\]")
_PORT = re.compile(r":(?:[1-9][0-9]{0,4})?")
_DEFAULT_PORTS = {"https": 443, "http": 80}


class CanonicalURL(NamedTuple):
    """An http(s) URL with the parts that do not change what it names taken out."""

    scheme: str
    host: str
    port: int | None
    """None for the scheme's default port."""
    path: str
    """Without a trailing slash (the root is "")."""
    query: str


def is_web_url(value: str) -> bool:
    """Whether `value` is spelled as an http(s) URL at all (however malformed the rest)."""
    return value[:8].lower().startswith(("https://", "http://"))


def canonical_url(url: str) -> CanonicalURL | None:
    """The normalised form of an http(s) URL, or None for one that cannot name a resource.

    Case of scheme and host, a default port, an empty port and a trailing
    slash do not matter (RFC 3986 §6.2.3). Anything else is compared as
    written; a user name or password, a fragment, a backslash, whitespace,
    a malformed host or port never name a resource (RFC 8707 §2), so they
    give None.
    """
    if not isinstance(url, str) or not _PRINTABLE_URL.fullmatch(url) or "#" in url or "\\" in url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    scheme, netloc = parts.scheme.lower(), parts.netloc.lower()
    if scheme not in _DEFAULT_PORTS or "@" in netloc:
        return None
    if netloc.startswith("["):
        end = netloc.find("]") + 1
        host, port_text = netloc[:end], netloc[end:]
    else:
        host, colon, rest = netloc.partition(":")
        port_text = colon + rest
    if not _HOST.fullmatch(host) or (port_text and not _PORT.fullmatch(port_text)):
        return None
    port = int(port_text[1:]) if len(port_text) > 1 else None
    if port is not None and port > 65535:
        return None
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    return CanonicalURL(scheme, host, port, parts.path.rstrip("/"), parts.query)
