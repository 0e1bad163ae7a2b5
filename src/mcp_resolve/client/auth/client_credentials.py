"""`ClientCredentials`: the client credentials grant, for a machine acting on its own behalf.

No person and no browser: the client authenticates at the token endpoint
with a secret or a signed JWT assertion and gets a token at once. There is
no refresh token to keep (a new assertion is as good), so an expired token
is simply obtained again after the server's 401.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx

from .discovery import ProtectedResource
from .errors import AuthorizationError
from .grant import Grant
from .registration import Registration, choose_method
from .storage import TokenStorage
from .token_endpoint import record

__all__ = ["ClientCredentials"]


class ClientCredentials(Grant):
    """The client credentials grant (the MCP extension for machines acting on their own behalf).

    Authenticates with a secret (`client_secret_basic` or `_post`, as the
    authorization server supports) or with a signed JWT (`private_key_jwt`,
    RFC 7523: pass `private_key` as PEM or a joserfc key; the assertion's
    audience is the issuer). No person and no browser; a 403
    `insufficient_scope` asks for a token with the union of the scopes.
    `dpop` as for `OAuth`.
    """

    grant_type = "client_credentials"

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key: Any = None,
        signing_algorithm: str = "ES256",
        issuer: str | None = None,
        scopes: Sequence[str] | None = None,
        storage: TokenStorage | None = None,
        max_step_ups: int = 2,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
        dpop: bool | None = None,
    ) -> None:
        super().__init__(
            scopes=scopes, storage=storage, max_step_ups=max_step_ups, http_client=http_client, dpop=dpop
        )
        if (client_secret is None) == (private_key is None):
            raise ValueError("pass exactly one of client_secret and private_key")
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = issuer
        self.signing_algorithm = signing_algorithm
        self._key = _import_private_key(private_key) if private_key is not None else None

    def __repr__(self) -> str:
        return f"ClientCredentials(client_id={self.client_id!r})"

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> Registration:
        if self.issuer is not None and self.issuer != issuer:
            raise AuthorizationError(
                "issuer_changed",
                f"these credentials belong to {self.issuer}, but the server now uses {issuer}",
            )
        if self._key is not None:
            return Registration(self.client_id, None, "private_key_jwt")
        return Registration(self.client_id, self.client_secret, choose_method(metadata, True))

    def _client_auth(self, registration: Registration, issuer: str) -> Any:
        if registration.method != "private_key_jwt":
            return super()._client_auth(registration, issuer)
        from authlib.oauth2.auth import ClientAuth
        from authlib.oauth2.rfc7523 import PrivateKeyJWT

        # The audience is the issuer identifier (RFC 7523bis), which every server accepts today.
        signer = PrivateKeyJWT(token_endpoint=issuer, alg=self.signing_algorithm)
        return ClientAuth(registration.client_id, self._key, signer)

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        registration = await self._registration_for(http, issuer, metadata)
        form = {"scope": " ".join(scopes) or None, "resource": resource.resource}
        if registration.method == "private_key_jwt":
            form["client_id"] = registration.client_id
        tokens = await self._token_request(
            http,
            metadata,
            registration,
            issuer,
            "client_credentials",
            form,
            dpop=self._uses_dpop(metadata, resource),
        )
        tokens.pop("refresh_token", None)  # a new assertion is as good as a refresh (RFC 6749 §4.4.3)
        return record(tokens, issuer, resource, scopes)


def _import_private_key(key: Any) -> Any:
    from joserfc.jwk import ECKey, OKPKey, RSAKey

    if isinstance(key, (ECKey, RSAKey, OKPKey)):
        return key
    data = key.encode() if isinstance(key, str) else key
    for kind in (ECKey, RSAKey, OKPKey):
        try:
            return kind.import_key(data)
        except Exception:  # joserfc raises several types for "not this kind of key"
            continue
    raise ValueError("private_key is not a PEM or JWK private key joserfc can read")
