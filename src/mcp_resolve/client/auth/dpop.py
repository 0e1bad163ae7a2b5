"""DPoP (RFC 9449), client side: proofs that the sender of a token holds the key it is bound to.

A token an authorization server binds to our key (`cnf.jkt`) is useless to
whoever steals it: every request that presents it carries a fresh proof, a
small JWT signed with the private key, naming the request (`htm`, `htu`),
the moment (`iat`), a one-time id (`jti`) and, towards a resource server, a
hash of the token (`ath`).

The key is ES256, one per MCP endpoint, made when the client first asks for
a token there and kept in the token record beside the tokens it is bound to
(a refresh token a public client got with DPoP is bound to it too), so a
`FileTokenStorage` that survives a restart keeps a usable pair.

Servers may demand a nonce of their own making in the proofs (`use_dpop_nonce`
with a `DPoP-Nonce` header): the last one each origin sent is remembered (a
few, bounded) and put in every later proof to it. JOSE is joserfc's: we only
choose the claims.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

__all__ = ["DPOP_ALGORITHM", "DPoPKey", "Nonces", "access_token_hash", "htu", "origin"]

DPOP_ALGORITHM = "ES256"
"""The one proof algorithm the client signs with (what every DPoP server supports)."""
MAX_NONCE_CHARS = 512
MAX_ORIGINS = 32
_NQCHAR = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 9449 §8.1: a nonce is 1*NQCHAR."""


def access_token_hash(access_token: str) -> str:
    """`ath`: base64url (no padding) of the SHA-256 of the token's ASCII bytes."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def htu(url: str | httpx.URL) -> str:
    """The `htu` of a request to `url`: scheme, authority and path, without query and fragment."""
    parts = urlsplit(str(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def origin(url: str | httpx.URL) -> str:
    """Whose nonce applies to a request to `url`: its scheme and authority."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}".lower()


class DPoPKey:
    """An ES256 key pair that signs proofs; its public half's thumbprint (RFC 7638) is what tokens bind to."""

    def __init__(self, key: Any) -> None:
        self._key = key
        self.public_jwk: dict[str, Any] = dict(key.as_dict(private=False))
        self.thumbprint: str = key.thumbprint()

    @classmethod
    def generate(cls) -> DPoPKey:
        from joserfc.jwk import ECKey

        return cls(ECKey.generate_key("P-256"))

    @classmethod
    def from_record(cls, record: Any) -> DPoPKey | None:
        """The key a token record keeps (`dpop_key`, a private JWK), or None when there is none usable."""
        from joserfc.jwk import ECKey

        if not isinstance(record, dict) or record.get("kty") != "EC" or record.get("crv") != "P-256":
            return None
        try:
            key = ECKey.import_key(record)
        except Exception:  # joserfc raises several types for a damaged key: then make a new one
            return None
        return cls(key) if key.is_private else None

    def to_record(self) -> dict[str, Any]:
        """The private JWK, to keep with the tokens (a secret like them)."""
        return dict(self._key.as_dict(private=True))

    def proof(
        self, method: str, url: str | httpx.URL, *, access_token: str | None = None, nonce: str | None = None
    ) -> str:
        """A fresh proof JWT for one request (a new `jti` every time)."""
        from joserfc import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "alg": DPOP_ALGORITHM, "jwk": self.public_jwk}
        return jwt.encode(header, claims, self._key, algorithms=[DPOP_ALGORITHM])

    def __repr__(self) -> str:
        return f"DPoPKey(thumbprint={self.thumbprint!r})"  # never the private half


class Nonces:
    """The latest `DPoP-Nonce` each origin sent, for the next proofs to it (a bounded, recent-first set)."""

    def __init__(self) -> None:
        self._by_origin: OrderedDict[str, str] = OrderedDict()

    def get(self, url: str | httpx.URL) -> str | None:
        return self._by_origin.get(origin(url))

    def learn(self, url: str | httpx.URL, response: httpx.Response) -> bool:
        """Keep the nonce `response` carries, if a well-formed one; whether it is new."""
        value = response.headers.get("dpop-nonce")
        if value is None or len(value) > MAX_NONCE_CHARS or not _NQCHAR.fullmatch(value):
            return False
        key = origin(url)
        changed = self._by_origin.get(key) != value
        self._by_origin[key] = value
        self._by_origin.move_to_end(key)
        while len(self._by_origin) > MAX_ORIGINS:
            self._by_origin.popitem(last=False)
        return changed
