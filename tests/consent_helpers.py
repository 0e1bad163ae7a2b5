"""A `ConsentFlow` in memory for the consent endpoint's tests: what the proxy does around the page,
reduced to its outcome.

Pending transactions live in a dict; `decide` takes one (once: a second decision raises
`LookupError`, as the proxy's does) and answers the URL the proxy would: upstream's authorize URL
(here a page under `landing`) on approval, the client's redirect URI with `access_denied` on denial.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from urllib.parse import urlencode

from mcp_resolve.auth.proxy.pages import ConsentGuard, ConsentView

__all__ = ["MemoryConsentFlow"]


@dataclass
class MemoryConsentFlow:
    consent: ConsentGuard
    landing: str = "http://127.0.0.1:9"
    pending: dict[str, ConsentView] = field(default_factory=dict)
    decided: list[tuple[str, bool]] = field(default_factory=list)

    def start(self, view: ConsentView) -> str:
        """A new pending transaction for `view`: its id, as `/consent?txn=` carries it."""
        txn = secrets.token_urlsafe(16)
        self.pending[txn] = view
        return txn

    async def consent_view(self, txn: str) -> ConsentView | None:
        return self.pending.get(txn)

    async def decide(self, txn: str, approve: bool, *, browser: str | None = None) -> str:
        view = self.pending.pop(txn, None)
        if view is None:
            raise LookupError(txn)
        self.decided.append((txn, approve))
        if approve:
            return f"{self.landing}/upstream/authorize?{urlencode({'state': txn})}"
        return f"{view.redirect_uri}?{urlencode({'error': 'access_denied', 'state': 'client-state'})}"
