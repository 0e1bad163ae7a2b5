"""Attack suite: hostile requests to the consent endpoint (GET and POST /consent), over real HTTP.

The consent page is what stands between a client registered a minute ago and a person's upstream
sign-in, so every way of posting a decision without the page's own token, from this browser, is
refused: no cookie, another browser's cookie or token, a malformed or oversized or duplicated
form, another content type, a cross-origin `Sec-Fetch-Site`, a replay after the decision. None of
them decides anything, none gets a 5xx, and no answer echoes a token. A forged remember cookie, or
a remembered one sent by a subresource fetch, does not skip the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette

from consent_helpers import MemoryConsentFlow
from http_helpers import serving
from mcp_resolve.auth.proxy.pages import ConsentGuard, ConsentView, approval_of
from mcp_resolve.transports.http._auth.authorization_server._consent_page import consent_routes

pytestmark = pytest.mark.slow

SECRET = b"attack-tests-consent-secret-0123"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
VIEW = ConsentView(
    client_id="client-1",
    client_name="Desk",
    redirect_uri="http://127.0.0.1:9/cb",
    scopes=("read",),
    resource="https://mcp.example/mcp",
    upstream="GitHub",
)


@dataclass
class Served:
    url: str
    flow: MemoryConsentFlow

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, follow_redirects=False, timeout=10)

    def open_page(self, client: httpx.Client, view: ConsentView = VIEW) -> tuple[str, str]:
        """Start a transaction and load its page in `client` (which keeps the browser cookie):
        the transaction and the page's CSRF token."""
        txn = self.flow.start(view)
        page = client.get("/consent", params={"txn": txn})
        assert page.status_code == 200, page.text
        match = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert match
        return txn, match.group(1)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    flow = MemoryConsentFlow(ConsentGuard(SECRET))
    with serving(Starlette(routes=consent_routes(flow))) as url:
        yield Served(url, flow)


def _assert_hardened(response: httpx.Response) -> None:
    assert response.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["referrer-policy"] == "no-referrer"


def _refused(served: Served, response: httpx.Response, status: int, txn: str, *secrets: str) -> None:
    assert response.status_code == status, response.text
    _assert_hardened(response)
    assert all(t != txn for t, _ in served.flow.decided)
    for secret in secrets:
        assert secret not in response.text


def test_the_real_thing_works(served: Served) -> None:
    """The baseline the refusals below differ from in one thing each."""
    with served.client() as client:
        txn, token = served.open_page(client)
        response = client.post("/consent", data={"txn": txn, "csrf": token, "decision": "approve"})
    assert response.status_code == 303
    assert response.headers["location"].endswith(f"/upstream/authorize?state={txn}")
    _assert_hardened(response)
    assert served.flow.decided[-1] == (txn, True)
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("mcp_consent=") and "HttpOnly" in cookie and "SameSite=lax" in cookie


def test_no_cookie_or_another_browsers_cookie_is_refused(served: Served) -> None:
    with served.client() as victim, served.client() as attacker:
        txn, token = served.open_page(victim)
        form = {"txn": txn, "csrf": token, "decision": "approve"}
        _refused(served, attacker.post("/consent", data=form), 403, txn, token)  # no cookie at all
        served.open_page(attacker)  # the attacker's own browser cookie
        _refused(served, attacker.post("/consent", data=form), 403, txn, token)
        for cookie in ("", "x", "A" * 43 + "=", "A" * 4000):
            response = httpx.post(
                f"{served.url}/consent", data=form, headers={"Cookie": f"mcp_consent_browser={cookie}"}
            )
            _refused(served, response, 403, txn, token)
        # A token computed for another transaction of the same browser does not carry over.
        other_txn, other_token = served.open_page(victim)
        _refused(served, victim.post("/consent", data={**form, "csrf": other_token}), 403, txn, token)
        _refused(served, victim.post("/consent", data={**form, "txn": other_txn}), 403, other_txn, token)
        assert victim.post("/consent", data=form).status_code == 303  # the real one still works


@pytest.mark.parametrize("site", ["cross-site", "same-site", "none", "garbage"])
def test_a_form_from_another_origin_is_refused_even_with_the_right_token(served: Served, site: str) -> None:
    with served.client() as client:
        txn, token = served.open_page(client)
        form = {"txn": txn, "csrf": token, "decision": "approve"}
        _refused(
            served, client.post("/consent", data=form, headers={"Sec-Fetch-Site": site}), 403, txn, token
        )
        assert (
            client.post("/consent", data=form, headers={"Sec-Fetch-Site": "same-origin"}).status_code == 303
        )


@pytest.mark.parametrize(
    "body",
    [
        "txn={txn}&txn={txn}&csrf={csrf}&decision=approve",
        "txn={txn}&csrf={csrf}&csrf={csrf}&decision=approve",
        "txn={txn}&csrf={csrf}&decision=approve&decision=deny",
        "txn={txn}&csrf={csrf}",
        "txn={txn}&csrf={csrf}&decision=APPROVE",
        "txn={txn}&csrf={csrf}&decision=yes",
        "csrf={csrf}&decision=approve",
        "txn=&csrf={csrf}&decision=approve",
        "txn={txn}%00&csrf={csrf}&decision=approve",
        "txn=%C3%A9{txn}&csrf={csrf}&decision=approve",
        "txn={txn}&csrf={csrf}&decision=approve&" + "&".join(f"f{i}=1" for i in range(20)),
        "txn={txn}&csrf={csrf}&decision=approve&&&==",
        "\u00e9txn={txn}&csrf={csrf}&decision=approve",
        "{{}}",
    ],
)
def test_malformed_forms_are_refused(served: Served, body: str) -> None:
    with served.client() as client:
        txn, token = served.open_page(client)
        content = body.format(txn=txn, csrf=token).encode()
        _refused(served, client.post("/consent", content=content, headers=FORM), 400, txn, token)


def test_a_long_transaction_id_is_refused(served: Served) -> None:
    with served.client() as client:
        served.open_page(client)
        long_txn = "t" * 600
        _refused(served, client.get("/consent", params={"txn": long_txn}), 400, long_txn)
        token = served.flow.consent.csrf(long_txn, client.cookies["mcp_consent_browser"])
        response = client.post("/consent", data={"txn": long_txn, "csrf": token, "decision": "approve"})
        _refused(served, response, 400, long_txn, token)


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "application/json",
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencodedx",
    ],
)
def test_only_urlencoded_forms_are_read(served: Served, content_type: str | None) -> None:
    with served.client() as client:
        txn, token = served.open_page(client)
        headers = {"Content-Type": content_type} if content_type else {}
        body = f"txn={txn}&csrf={token}&decision=approve".encode()
        _refused(served, client.post("/consent", content=body, headers=headers), 415, txn, token)


def test_an_oversized_body_is_refused_whole_or_streamed(served: Served) -> None:
    with served.client() as client:
        txn, token = served.open_page(client)
        padding = "x" * 10_000
        body = f"txn={txn}&csrf={token}&decision=approve&pad={padding}".encode()
        _refused(served, client.post("/consent", content=body, headers=FORM), 413, txn, token)

        def chunks() -> Iterator[bytes]:
            yield f"txn={txn}&csrf={token}&decision=approve&pad=".encode()
            for _ in range(100):
                yield b"y" * 1000

        _refused(served, client.post("/consent", content=chunks(), headers=FORM), 413, txn, token)
        assert (
            client.post("/consent", data={"txn": txn, "csrf": token, "decision": "deny"}).status_code == 303
        )


def test_a_decision_cannot_be_replayed(served: Served) -> None:
    with served.client() as client:
        txn, token = served.open_page(client)
        form = {"txn": txn, "csrf": token, "decision": "approve"}
        assert client.post("/consent", data=form).status_code == 303
        for decision in ("approve", "deny"):
            response = client.post("/consent", data={**form, "decision": decision})
            assert response.status_code == 404 and "expired" in response.text
            assert token not in response.text
        assert client.get("/consent", params={"txn": txn}).status_code == 404
    assert [d for d in served.flow.decided if d[0] == txn] == [(txn, True)]


def test_unknown_transactions_and_methods(served: Served) -> None:
    with served.client() as client:
        for params in ({}, {"txn": ""}, {"txn": "\u00e9"}):
            response = client.get("/consent", params=params)
            assert response.status_code == 400
            _assert_hardened(response)
        response = client.get("/consent", params={"txn": "never-started"})
        assert response.status_code == 404 and "expired" in response.text
        _assert_hardened(response)
        for method in ("PUT", "DELETE", "PATCH"):
            assert client.request(method, "/consent").status_code == 405


def test_a_forged_remember_cookie_or_a_subresource_fetch_does_not_skip_the_page(served: Served) -> None:
    guard = served.flow.consent
    with served.client() as client:
        valid = guard.remember(None, VIEW.client_id, approval_of(VIEW))
        forged = ConsentGuard(b"someone-elses-secret-123").remember(None, VIEW.client_id, approval_of(VIEW))
        for cookie in (forged, valid[:-3] + "AAA", valid.split(".")[0] + ".", "garbage"):
            txn = served.flow.start(VIEW)
            response = client.get("/consent", params={"txn": txn}, cookies={"mcp_consent": cookie})
            assert response.status_code == 200 and txn in served.flow.pending
        # Remembered, but asked for by an <img> or fetch() of another page: the page, not a decision.
        txn = served.flow.start(VIEW)
        for mode in ("no-cors", "cors", "same-origin"):
            response = client.get(
                "/consent",
                params={"txn": txn},
                cookies={"mcp_consent": valid},
                headers={"Sec-Fetch-Mode": mode},
            )
            assert response.status_code == 200 and txn in served.flow.pending
        response = client.get("/consent", params={"txn": txn}, cookies={"mcp_consent": valid})
        assert response.status_code == 303 and served.flow.decided[-1] == (txn, True)
        _assert_hardened(response)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fields=st.lists(
        st.tuples(st.sampled_from(["txn", "csrf", "decision", "x"]), st.text(max_size=60)), max_size=6
    ),
    raw=st.binary(max_size=200),
    use_raw=st.booleans(),
)
def test_fuzzed_posts_never_decide_or_fail(
    served: Served, fields: list[tuple[str, str]], raw: bytes, use_raw: bool
) -> None:
    before = len(served.flow.decided)
    content: Any = raw if use_raw else httpx.QueryParams(fields).__str__().encode()
    with served.client() as client:
        served.open_page(client)
        response = client.post("/consent", content=content, headers=FORM)
    assert response.status_code in (400, 403, 404, 413)
    _assert_hardened(response)
    assert len(served.flow.decided) == before
