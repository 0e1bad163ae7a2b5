"""Redirect URIs: which ones a client may register, and when a given one is a registered one.

Codes are sent to a client's redirect URI, so what may be registered there
is the first line of defence against sending them to the wrong place: an
absolute URI without a fragment or user name, fitting the client's
`application_type` (RFC 8252, OpenID Connect Registration). A `native` app
redirects to loopback `http` (any port, RFC 8252 §7.3) or to a private-use
scheme in reverse-domain form (`com.example.app:/callback`, §7.1); a `web`
client to `https` (or loopback `http`, for development); a client that says
neither may use any of these. `javascript:`, `data:` and other schemes that
would run or carry content are refused whatever the type. Dynamic
registration and Client ID Metadata Documents apply the same rules.

Matching is exact (RFC 6749 §3.1.2.3, OAuth 2.1) after the same URL
normalisation on both sides, except that a loopback `http` URI matches with
any port (RFC 8252 §7.3).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from pydantic import AnyUrl, ValidationError

__all__ = [
    "MAX_REDIRECT_URIS",
    "check_redirect_uri",
    "is_loopback_host",
    "normalized",
    "redirect_uri_matches",
]

MAX_REDIRECT_URIS = 10
"""A client registers at most this many."""
MAX_URI_CHARS = 2000
_PRIVATE_SCHEME = re.compile(r"[a-z][a-z0-9+\-]*(\.[a-z0-9+\-]+)+")
"""A reverse-domain scheme (RFC 8252 §7.1): at least one dot, so never `javascript`, `data` or `file`."""
_NEVER = frozenset({"javascript", "data", "vbscript", "file", "blob", "about", "filesystem", "ws", "wss"})


def is_loopback_host(host: str | None) -> bool:
    """`localhost` or a loopback address (127.0.0.0/8, ::1)."""
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _loopback_http(scheme: str, host: str | None) -> bool:
    return scheme == "http" and is_loopback_host(host)


def check_redirect_uri(uri: str, application_type: str | None) -> str | None:
    """Why `uri` cannot be a redirect URI of a client of this `application_type`, or None when it can."""
    if len(uri) > MAX_URI_CHARS or any(c.isspace() or ord(c) < 0x20 or c == "\\" for c in uri):
        return "a redirect URI is malformed"
    if "#" in uri:
        return "a redirect URI must not have a fragment"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return "a redirect URI is malformed"
    scheme = parts.scheme.lower()
    if not scheme or scheme in _NEVER:
        return "a redirect URI has a scheme that cannot receive a code"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI must not carry a user name or password"
    web = scheme == "https" and bool(parts.hostname)
    loopback = _loopback_http(scheme, parts.hostname)
    private = bool(_PRIVATE_SCHEME.fullmatch(scheme)) and not parts.netloc
    if scheme == "http" and not loopback:
        return "a redirect URI may use http only on loopback (127.0.0.1, [::1], localhost)"
    if application_type == "native" and not (loopback or private):
        return "a native client's redirect URIs must be loopback http or a private-use scheme"
    if application_type == "web" and not (web or loopback):
        return "a web client's redirect URIs must use https (http only on loopback)"
    if not (web or loopback or private):
        return "a redirect URI must use https, loopback http, or a private-use scheme (com.example.app:/path)"
    return None


def normalized(uri: str) -> str:
    """`uri` as a URL library writes it (`https://app.example` → `https://app.example/`), so that a
    registered URI and the one a request names compare alike; unchanged when it does not parse."""
    try:
        return str(AnyUrl(uri))
    except ValidationError:
        return uri


def redirect_uri_matches(given: str, registered: str) -> bool:
    """Whether `given` is `registered`: the same URI, or (RFC 8252 §7.3) a loopback `http` URI
    that differs only in its port."""
    given, registered = normalized(given), normalized(registered)
    if given == registered:
        return True
    a, b = urlsplit(given), urlsplit(registered)
    if a.scheme != "http" or b.scheme != "http" or not is_loopback_host(a.hostname):
        return False
    if a.hostname != b.hostname:
        return False
    try:
        a.port, b.port  # noqa: B018 - a malformed port raises here
    except ValueError:
        return False
    return (a.path, a.query, a.fragment, a.username, a.password) == (
        b.path,
        b.query,
        b.fragment,
        b.username,
        b.password,
    )
