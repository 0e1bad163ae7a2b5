"""The proxy's consent step without HTTP: the page's escaping, the CSRF binding, remembered approvals.

The page is what stops a confused deputy (a freshly registered client riding on a person's upstream
approval), so what it shows must be what the client registered, escaped, with the redirect host
where a person reads it; the guards must refuse every token and cookie they did not make.
"""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import pytest

from mcp_resolve.auth.proxy._consent import redirect_target
from mcp_resolve.auth.proxy.pages import ConsentGuard, ConsentView, render_consent, render_error

SECRET = b"0123456789abcdef-consent-tests"


class _Page(HTMLParser):
    """The page as a browser parses it: tags, attributes, text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def inputs(self) -> dict[str, str | None]:
        return {a["name"] or "": a.get("value") for t, a in self.tags if t == "input"}

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def _view(**changes: object) -> ConsentView:
    fields: dict[str, object] = {
        "client_id": "c-123",
        "client_name": "Claude Desktop",
        "redirect_uri": "https://claude.example/api/callback",
        "scopes": ("repo:read", "user:email"),
        "resource": "https://mcp.example/mcp",
        "upstream": "GitHub",
    }
    fields.update(changes)
    return ConsentView(**fields)  # type: ignore[arg-type]


def test_the_page_names_the_client_its_redirect_host_the_scopes_resource_and_upstream() -> None:
    page = _Page(render_consent(_view(), txn="t1", csrf="tok", action="/consent"))
    text = page.all_text
    for shown in (
        "Claude Desktop",
        "claude.example",
        "repo:read",
        "user:email",
        "https://mcp.example/mcp",
        "GitHub",
    ):
        assert shown in text
    assert "c-123" in text  # the id next to the self-chosen name
    strong = re.search(
        r"<strong>([^<]*)</strong>", render_consent(_view(), txn="t1", csrf="tok", action="/consent")
    )
    assert strong is not None and strong.group(1) == "claude.example"
    forms = [a for t, a in page.tags if t == "form"]
    assert forms == [{"method": "post", "action": "/consent"}]
    assert page.inputs() == {"txn": "t1", "csrf": "tok"}
    buttons = [(a["name"], a["value"]) for t, a in page.tags if t == "button"]
    assert buttons == [("decision", "approve"), ("decision", "deny")]
    assert not [t for t, _ in page.tags if t in ("script", "img", "iframe", "link", "object")]


def test_without_a_name_the_page_names_the_client_by_its_id() -> None:
    text = _Page(render_consent(_view(client_name=None), txn="t", csrf="c", action="/consent")).all_text
    assert "c-123 wants to sign you in with GitHub" in text
    blank = _Page(render_consent(_view(client_name="   "), txn="t", csrf="c", action="/consent")).all_text
    assert "c-123 wants to sign you in with GitHub" in blank


HOSTILE = "\"><script>alert(1)</script><img src=x onerror=alert(2)>&amp;'<!--"


@pytest.mark.parametrize("field", ["client_name", "client_id", "redirect_uri", "resource", "upstream"])
def test_hostile_values_are_escaped_everywhere(field: str) -> None:
    view = _view(**{field: HOSTILE})
    html = render_consent(view, txn=HOSTILE, csrf=HOSTILE, action="/consent")
    page = _Page(html)
    assert [t for t, _ in page.tags if t in ("script", "img")] == []
    assert "<script>" not in html and "<img" not in html
    # The value reads back as the very text it was (escaped, not dropped), and the hidden fields too.
    assert HOSTILE in page.all_text
    assert page.inputs() == {"txn": HOSTILE, "csrf": HOSTILE}


def test_hostile_scopes_are_escaped() -> None:
    html = render_consent(_view(scopes=(HOSTILE, "ok")), txn="t", csrf="c", action="/consent")
    assert "<script>" not in html and HOSTILE in _Page(html).all_text


def test_bidi_and_control_characters_cannot_disguise_a_name_or_host() -> None:
    # U+202E reverses the text that follows: "evil.example" could read as a trusted name.
    sneaky = "Claude\u202e\u200belpmaxe.live\x07"
    html = render_consent(
        _view(client_name=sneaky, redirect_uri=f"https://a.example/{sneaky}"),
        txn="t",
        csrf="c",
        action="/consent",
    )
    assert "\u202e" not in html and "\u200b" not in html and "\x07" not in html
    assert "Claude\ufffd\ufffdelpmaxe.live\ufffd" in _Page(html).all_text


def test_long_values_are_cut() -> None:
    html = render_consent(
        _view(client_name="N" * 5000, scopes=tuple(f"s{i}" for i in range(500))),
        txn="t",
        csrf="c",
        action="/consent",
    )
    assert "N" * 80 not in html and "N" * 79 + "\u2026" in html
    assert "and 450 more" in _Page(html).all_text
    assert len(html) < 20_000


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("https://claude.example/cb", "claude.example"),
        ("http://127.0.0.1:33418/callback", "127.0.0.1:33418"),
        ("http://[::1]:8080/cb", "[::1]:8080"),
        ("https://user:pw@evil.example:8443/cb", "evil.example:8443"),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", "cursor://anysphere.cursor-retrieval"),
        ("com.example.app:/oauth2redirect", "com.example.app:"),
    ],
)
def test_the_redirect_target_is_the_host_a_person_should_check(uri: str, shown: str) -> None:
    assert redirect_target(uri) == shown


def test_the_error_page_escapes() -> None:
    html = render_error("<b>t</b>", HOSTILE)
    assert "<script>" not in html and "<b>" not in html
    assert HOSTILE in _Page(html).all_text


# -- CSRF ----------------------------------------------------------------------------------------


def test_a_csrf_token_is_bound_to_its_transaction_and_browser() -> None:
    guard = ConsentGuard(SECRET)
    a, b = guard.new_browser(), guard.new_browser()
    assert a != b and guard.is_browser(a)
    token = guard.csrf("txn-1", a)
    assert guard.check_csrf("txn-1", a, token)
    assert not guard.check_csrf("txn-1", b, token)  # another browser
    assert not guard.check_csrf("txn-2", a, token)  # another transaction
    assert not guard.check_csrf("txn-1", a, token[:-1] + ("A" if token[-1] != "A" else "B"))
    assert not guard.check_csrf("txn-1", a, "")
    assert not guard.check_csrf("txn-1", "", guard.csrf("txn-1", ""))  # no cookie, no token
    assert not guard.check_csrf("txn-1", a, "\udcff\u00e9")  # not ASCII: refused, no exception
    assert not ConsentGuard(b"another-secret-of-16+").check_csrf("txn-1", a, token)


def test_framing_keeps_transaction_and_browser_apart() -> None:
    guard = ConsentGuard(SECRET)
    browser = guard.new_browser()
    assert guard.csrf("ab", browser) != guard.csrf("a", "b" + browser)


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        ConsentGuard(b"short")


# -- remembered approvals ------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_an_approval_is_remembered_for_exactly_that_client_and_redirect_uri() -> None:
    guard = ConsentGuard(SECRET)
    cookie = guard.remember(None, "c1", "https://a.example/cb")
    assert guard.remembered(cookie, "c1", "https://a.example/cb")
    assert not guard.remembered(cookie, "c2", "https://a.example/cb")
    assert not guard.remembered(cookie, "c1", "https://evil.example/cb")
    assert not guard.remembered(None, "c1", "https://a.example/cb")
    # The cookie names neither the client nor the URI.
    assert "c1" not in base64.urlsafe_b64decode(cookie.split(".")[0] + "==").decode()
    assert "a.example" not in cookie


def test_a_tampered_or_foreign_cookie_remembers_nothing() -> None:
    guard = ConsentGuard(SECRET)
    cookie = guard.remember(None, "c1", "https://a.example/cb")
    body, signature = cookie.split(".")
    entries = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    entries[0][1] += 10**9  # extend the expiry, keep the signature
    forged = base64.urlsafe_b64encode(json.dumps(entries).encode()).rstrip(b"=").decode() + "." + signature
    assert not guard.remembered(forged, "c1", "https://a.example/cb")
    assert not guard.remembered(body + "." + signature[:-2] + "AA", "c1", "https://a.example/cb")
    assert not guard.remembered(cookie + ".x", "c1", "https://a.example/cb")
    assert not guard.remembered("garbage", "c1", "https://a.example/cb")
    assert not guard.remembered("x" * 10_000, "c1", "https://a.example/cb")
    assert not ConsentGuard(b"another-secret-of-16+").remembered(cookie, "c1", "https://a.example/cb")
    # A signed payload of the wrong shape is ignored, not an error.
    for payload in (b"{}", b"[1,2]", b'[["x"]]', b"not json"):
        odd = base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
        signed = odd + "." + guard._sign(payload)
        assert not guard.remembered(signed, "c1", "https://a.example/cb")
        assert guard.remembered(
            guard.remember(signed, "c1", "https://a.example/cb"), "c1", "https://a.example/cb"
        )


def test_a_remembered_approval_expires() -> None:
    clock = _Clock()
    guard = ConsentGuard(SECRET, remember_s=3600, clock=clock)
    cookie = guard.remember(None, "c1", "https://a.example/cb")
    clock.now += 3599
    assert guard.remembered(cookie, "c1", "https://a.example/cb")
    clock.now += 2
    assert not guard.remembered(cookie, "c1", "https://a.example/cb")
    # Remembering again renews it; expired entries are dropped from the new cookie.
    renewed = guard.remember(cookie, "c2", "https://b.example/cb")
    assert guard.remembered(renewed, "c2", "https://b.example/cb")
    assert not guard.remembered(renewed, "c1", "https://a.example/cb")
    assert len(guard._entries(renewed)) == 1


def test_the_cookie_is_bounded_and_drops_the_oldest() -> None:
    clock = _Clock()
    guard = ConsentGuard(SECRET, clock=clock)
    cookie: str | None = None
    for i in range(50):
        clock.now += 1
        cookie = guard.remember(cookie, f"client-{i}", f"https://c{i}.example/cb")
    assert cookie is not None and len(cookie) < 2000
    assert guard.remembered(cookie, "client-49", "https://c49.example/cb")
    assert guard.remembered(cookie, "client-30", "https://c30.example/cb")
    assert not guard.remembered(cookie, "client-29", "https://c29.example/cb")
    assert not guard.remembered(cookie, "client-0", "https://c0.example/cb")
    # Approving an old pair again moves it to the newest end instead of adding a duplicate.
    again = guard.remember(cookie, "client-30", "https://c30.example/cb")
    assert len(guard._entries(again)) == 20
    clock.now += 1
    assert guard.remembered(
        guard.remember(again, "new", "https://n.example/cb"), "client-30", "https://c30.example/cb"
    )


def test_with_remembering_off_nothing_is_remembered() -> None:
    on = ConsentGuard(SECRET)
    off = ConsentGuard(SECRET, remember=False)
    assert on.remembers and not off.remembers
    cookie = on.remember(None, "c1", "https://a.example/cb")
    assert on.remembered(cookie, "c1", "https://a.example/cb")
    assert not off.remembered(cookie, "c1", "https://a.example/cb")
    assert not off.remembered(off.remember(None, "c1", "https://a.example/cb"), "c1", "https://a.example/cb")
