"""The consent step of the proxy: the page a person sees before being sent upstream, and its guards.

The proxy signs in at the upstream provider (GitHub, Google ...) as ONE client of its own, for
every MCP client that registered with it. Without a step of its own, a client registered a minute
ago by anyone could ride on a person's earlier upstream approval and receive a code for them: the
confused deputy the MCP security guidance describes. So before the person is sent upstream, the
proxy shows which client asks (its name, which the client chose itself, and its id), where the
answer will be sent (the redirect host, prominently: the one fact a lying client cannot fake),
the scopes, the resource and the upstream, and waits for a form POST.

The page is plain server-rendered HTML: every value escaped, no script, so it works without
JavaScript and a hostile client name cannot run anything. The POST carries a CSRF token bound to
both the transaction and a random per-browser cookie (HMAC, compared in constant time), so a form
on another site, or another browser holding a copied token, is refused.

A person's approval can be remembered for the client and exactly what it covered
(`approval_of`: redirect URI, scopes, resource) in a signed cookie with an expiry, bounded in size (the oldest entries go first); the operator turns that off with
`remember=False`, and every sign-in then shows the page.

Nothing here speaks HTTP: the endpoint is `transports/http/_auth/authorization_server/_consent_page.py`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

__all__ = [
    "BROWSER_COOKIE",
    "REMEMBER_COOKIE",
    "ConsentFlow",
    "ConsentGuard",
    "ConsentView",
    "redirect_target",
    "render_consent",
    "render_error",
]

BROWSER_COOKIE = "mcp_consent_browser"
"""The per-browser cookie the CSRF token is bound to (random, HttpOnly, SameSite=Lax)."""
REMEMBER_COOKIE = "mcp_consent"
"""The signed list of approved (client id, redirect URI) pairs."""

_MAX_REMEMBERED = 20
"""Approvals one browser's cookie keeps; the oldest go first (a cookie stays well under 4 KB)."""
_MAX_COOKIE_CHARS = 3000
_MAX_NAME = 80
_MAX_URI = 300
_MAX_SCOPES = 50
_BROWSER_BYTES = 32


@dataclass(frozen=True)
class ConsentView:
    """What the consent page shows about one pending sign-in (a transaction of the proxy)."""

    client_id: str
    client_name: str | None
    """As the client registered it: the client's own claim, shown with its id and redirect host."""
    redirect_uri: str
    scopes: tuple[str, ...]
    resource: str | None
    upstream: str
    """The upstream provider's display name ("GitHub")."""


# ---------------------------------------------------------------------------------------------
# The pages
# ---------------------------------------------------------------------------------------------


def _clean(text: str, limit: int) -> str:
    """`text` safe to show: control and format characters (bidi overrides that reorder a host
    name, zero-width characters) replaced, and cut to `limit` characters. Not escaped yet."""
    shown = "".join("\ufffd" if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs") else ch for ch in text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "\u2026"


def _e(text: str, limit: int = _MAX_URI) -> str:
    return html.escape(_clean(text, limit), quote=True)


def redirect_target(redirect_uri: str) -> str:
    """Where an answer sent to `redirect_uri` lands, as a person should read it: the host (with its
    port), or for a private-scheme URI (`cursor://...`, `com.example.app:/cb`) the scheme and host."""
    try:
        parts = urlsplit(redirect_uri)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return redirect_uri
    if parts.scheme in ("http", "https") and host:
        host = f"[{host}]" if ":" in host else host
        return f"{host}:{port}" if port is not None else host
    if host:
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}:" if parts.scheme else redirect_uri


_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1d2330;margin:0}
main{max-width:34rem;margin:3rem auto;background:#fff;border-radius:10px;padding:2rem;
box-shadow:0 1px 4px rgba(0,0,0,.12)}
h1{font-size:1.35rem;margin:0 0 1rem}
.target{border:2px solid #c47f00;background:#fff8e6;border-radius:8px;padding:.75rem 1rem;margin:1rem 0}
.target strong{font-size:1.2rem;word-break:break-all}
.small{color:#5a6270;font-size:.85rem;word-break:break-all}
dl{margin:1rem 0}dt{font-weight:600;margin-top:.6rem}dd{margin:.2rem 0 0}
ul{margin:.2rem 0;padding-left:1.2rem}code{word-break:break-all}
.buttons{display:flex;gap:.75rem;margin-top:1.5rem}
button{font-size:1rem;padding:.6rem 1.4rem;border-radius:6px;border:1px solid #8a93a3;background:#fff;cursor:pointer}
button.approve{background:#1f6feb;border-color:#1f6feb;color:#fff}
"""


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title, _MAX_NAME * 2)}</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def render_consent(view: ConsentView, *, txn: str, csrf: str, action: str) -> str:
    """The consent page for one transaction: who asks, where the answer goes, for what; Approve and
    Deny in one POST form to `action` carrying `txn` and `csrf`. Every value is escaped."""
    name = view.client_name.strip() if view.client_name and view.client_name.strip() else None
    who = _e(name, _MAX_NAME) if name else _e(view.client_id, _MAX_NAME)
    upstream = _e(view.upstream, _MAX_NAME)
    target = _e(redirect_target(view.redirect_uri))
    scopes = view.scopes[:_MAX_SCOPES]
    scope_items = "".join(f"<li><code>{_e(scope, _MAX_NAME)}</code></li>" for scope in scopes)
    if len(view.scopes) > _MAX_SCOPES:
        scope_items += f"<li>and {len(view.scopes) - _MAX_SCOPES} more</li>"
    scope_text = f"<ul>{scope_items}</ul>" if scopes else "<p>No particular scope (the server's default).</p>"
    resource = f"<dt>For the server</dt><dd><code>{_e(view.resource)}</code></dd>" if view.resource else ""
    named = (
        f'<p class="small">The name &ldquo;{who}&rdquo; is the application&rsquo;s own claim; '
        f"its client id is <code>{_e(view.client_id)}</code>.</p>"
        if name
        else ""
    )
    body = (
        f"<h1>{who} wants to sign you in with {upstream}</h1>"
        f"{named}"
        '<div class="target">If you approve, your sign-in is sent to<br>'
        f"<strong>{target}</strong>"
        f'<div class="small">{_e(view.redirect_uri)}</div></div>'
        "<p>Approve only if you started this sign-in from that application and you expect it "
        "to receive the answer at this address.</p>"
        f"<dl><dt>Access asked for</dt><dd>{scope_text}</dd>{resource}"
        f"<dt>Next step</dt><dd>You will sign in at {upstream}.</dd></dl>"
        f'<form method="post" action="{html.escape(action, quote=True)}">'
        f'<input type="hidden" name="txn" value="{html.escape(txn, quote=True)}">'
        f'<input type="hidden" name="csrf" value="{html.escape(csrf, quote=True)}">'
        '<div class="buttons">'
        '<button class="approve" type="submit" name="decision" value="approve">Approve</button>'
        '<button type="submit" name="decision" value="deny">Deny</button>'
        "</div></form>"
    )
    return _page(f"Sign in with {view.upstream}", body)


def render_error(title: str, message: str) -> str:
    """A page for a refused or expired step: `title` and `message`, escaped; no detail of why
    beyond what the person can act on."""
    return _page(title, f"<h1>{_e(title, _MAX_NAME * 2)}</h1><p>{_e(message, 1000)}</p>")


# ---------------------------------------------------------------------------------------------
# CSRF and remembered approvals
# ---------------------------------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None


def _framed(*parts: str) -> bytes:
    """Length-prefixed parts: ("ab", "c") and ("a", "bc") never sign the same bytes."""
    return b"".join(
        len(raw).to_bytes(4, "big") + raw for raw in (p.encode("utf-8", "surrogatepass") for p in parts)
    )


def approval_of(view: ConsentView) -> str:
    """What a remembered approval of `view`'s client covers: the redirect URI, the scopes and the
    resource, exactly. A client asking for more (a step-up) or for something else is asked again."""
    return "\n".join((view.redirect_uri, " ".join(sorted(set(view.scopes))), view.resource or ""))


class ConsentGuard:
    """CSRF tokens for the consent form and the signed cookie of remembered approvals.

    `secret` (at least 16 bytes; the proxy derives it from its own secret) keys two HMAC-SHA256
    keys, one per purpose. Every worker of a fleet given the same secret accepts the others' tokens
    and cookies. `remember=False` (the operator's switch) makes `remembered` always False.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        remember: bool = True,
        remember_s: float = 30 * 86400,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if len(secret) < 16:
            raise ValueError("ConsentGuard needs a secret of at least 16 bytes")
        if remember_s <= 0:
            raise ValueError("remember_s must be positive")
        self._csrf_key = hmac.new(secret, b"mcp-resolve consent csrf v1", hashlib.sha256).digest()
        self._remember_key = hmac.new(secret, b"mcp-resolve consent remember v1", hashlib.sha256).digest()
        self._remember = remember
        self.remember_s = remember_s
        self._clock = clock

    @property
    def remembers(self) -> bool:
        """Whether approvals are remembered (the `remember=` switch)."""
        return self._remember

    # -- the per-browser cookie and CSRF ---------------------------------------------------------

    @staticmethod
    def new_browser() -> str:
        """A fresh random value for the per-browser cookie."""
        return secrets.token_urlsafe(_BROWSER_BYTES)

    @staticmethod
    def is_browser(value: str | None) -> bool:
        """Whether a cookie value has the shape `new_browser` gives (anything else is replaced)."""
        return (
            value is not None
            and len(value) == 43
            and all(c.isascii() and (c.isalnum() or c in "-_") for c in value)
        )

    def csrf(self, txn: str, browser: str) -> str:
        """The token the form carries: HMAC of the transaction and the browser cookie."""
        return _b64(hmac.new(self._csrf_key, _framed("csrf", txn, browser), hashlib.sha256).digest())

    def check_csrf(self, txn: str, browser: str, token: str) -> bool:
        """Whether `token` is this transaction's token for this browser (constant-time compare)."""
        if not (txn and token and self.is_browser(browser)):
            return False
        expected = self.csrf(txn, browser).encode("ascii")
        return hmac.compare_digest(expected, token.encode("utf-8", "surrogatepass"))

    # -- remembered approvals --------------------------------------------------------------------

    @staticmethod
    def _pair(client_id: str, approval: str) -> str:
        """The cookie's name for an approval: a digest, so the cookie shows no client or URI."""
        return _b64(hashlib.sha256(_framed("pair", client_id, approval)).digest()[:16])

    def _sign(self, payload: bytes) -> str:
        return _b64(hmac.new(self._remember_key, payload, hashlib.sha256).digest())

    def _entries(self, cookie: str | None) -> list[tuple[str, float]]:
        """The unexpired approvals of a cookie this guard signed; [] for a missing, tampered,
        oversized or malformed one."""
        if not cookie or len(cookie) > _MAX_COOKIE_CHARS or cookie.count(".") != 1:
            return []
        body, signature = cookie.split(".")
        payload = _unb64(body)
        if payload is None or not hmac.compare_digest(self._sign(payload).encode(), signature.encode()):
            return []
        try:
            raw = json.loads(payload)
        except ValueError:
            return []
        now = self._clock()
        entries: list[tuple[str, float]] = []
        if isinstance(raw, list):
            for item in raw[:_MAX_REMEMBERED]:
                if (
                    isinstance(item, list)
                    and len(item) == 2
                    and isinstance(item[0], str)
                    and isinstance(item[1], (int, float))
                    and item[1] > now
                ):
                    entries.append((item[0], float(item[1])))
        return entries

    def remembered(self, cookie: str | None, client_id: str, approval: str) -> bool:
        """Whether this browser gave this client this approval (`approval_of`: redirect URI, scopes,
        resource), and it has not expired."""
        if not self._remember:
            return False
        pair = self._pair(client_id, approval)
        return any(hmac.compare_digest(name, pair) for name, _ in self._entries(cookie))

    def remember(self, cookie: str | None, client_id: str, approval: str) -> str:
        """The new cookie value: the old one's live approvals plus this one (renewed), newest last,
        at most `_MAX_REMEMBERED` (the oldest dropped)."""
        pair = self._pair(client_id, approval)
        entries = [entry for entry in self._entries(cookie) if entry[0] != pair]
        entries.append((pair, round(self._clock() + self.remember_s)))
        entries = entries[-_MAX_REMEMBERED:]
        payload = json.dumps([list(entry) for entry in entries], separators=(",", ":")).encode()
        return f"{_b64(payload)}.{self._sign(payload)}"


class ConsentFlow(Protocol):
    """What the consent endpoint calls; `OAuthProxy` implements it.

    `decide` raises `LookupError` (the endpoint shows an "expired" page) or `PageError` (shown as
    it says) for a transaction that is unknown, expired, or approved in another browser.
    """

    consent: ConsentGuard

    async def consent_view(self, txn: str) -> ConsentView | None: ...

    async def decide(self, txn: str, approve: bool, *, browser: str | None = None) -> str:
        """The URL to send the browser to: upstream's authorize URL, or the client's redirect URI
        with an `access_denied` error. `browser` is the deciding browser's cookie, so that only
        this browser can finish the sign-in (the upstream's answer comes back through it)."""
        ...
