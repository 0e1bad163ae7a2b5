"""The access log never shows the query of a sign-in page (the upstream's code, a sign-in's id)."""

from __future__ import annotations

import logging

import pytest

from mcp_resolve import MCPServer
from mcp_resolve.auth.proxy import OAuthProxy
from proxy_helpers import CORP


def _access_line(caplog: pytest.LogCaptureFixture, path: str) -> str:
    """What uvicorn's access logger prints for a GET of `path` (its own call, as uvicorn makes it)."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", path, "1.1", 302
        )
    return caplog.records[-1].getMessage()


def test_the_sign_in_pages_queries_are_hidden(caplog: pytest.LogCaptureFixture) -> None:
    proxy = OAuthProxy(upstream=CORP, base_url="https://desk.example.com")
    MCPServer("Desk", auth_server_provider=proxy).streamable_http_app()
    callback = _access_line(caplog, "/auth/callback?code=upstream-one-time-code&state=txn-123")
    assert "upstream-one-time-code" not in callback and "txn-123" not in callback
    assert '"GET /auth/callback?… HTTP/1.1" 302' in callback
    assert "txn-9" not in _access_line(caplog, "/consent?txn=txn-9")
    assert "S256" not in _access_line(caplog, "/authorize?client_id=c&code_challenge_method=S256")
    # Everything else is logged as uvicorn wrote it.
    assert "/mcp?x=1" in _access_line(caplog, "/mcp?x=1")
