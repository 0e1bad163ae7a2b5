"""`WorkloadIdentity`: the JWT bearer grant (RFC 7523 §2.1), for a workload signing in as itself.

A CI job, a Kubernetes pod or a cloud function already holds a JWT its
platform issued (a projected service-account token, an OIDC token from the
CI provider, a cloud metadata token). Workload identity federation (SEP-1933)
lets it present that JWT to the MCP server's authorization server as an
authorization grant, instead of keeping a client secret: the grant type is
`urn:ietf:params:oauth:grant-type:jwt-bearer` and the JWT travels as
`assertion`.

The assertion is read again each time a token is obtained (the platform
rotates it). A refusal (`invalid_grant`, `invalid_scope`,
`unauthorized_client`) ends the attempt with an `AuthorizationError`: the
same assertion would be refused again, and no other grant is tried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx

from .assertion import JWT_BEARER, AssertionSource, read_assertion
from .discovery import ProtectedResource, deadline_s
from .errors import AuthorizationError
from .grant import Grant
from .registration import Registration, choose_method
from .storage import TokenStorage
from .token_endpoint import record

__all__ = ["WorkloadIdentity"]


class WorkloadIdentity(Grant):
    """The JWT bearer grant with a platform-issued assertion (workload identity federation).

    `assertion` is the JWT itself, a path to a file holding it (read again
    on every use, as Kubernetes rotates it), or a function (sync or async)
    returning it. `client_id` is sent when given (with `client_secret`, the
    client authenticates as the authorization server supports; without, the
    `none` method). `issuer` pins the authorization server the assertion may
    be shown to: it is never offered to another.
    """

    grant_type = JWT_BEARER

    def __init__(
        self,
        assertion: AssertionSource,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        scopes: Sequence[str] | None = None,
        storage: TokenStorage | None = None,
        max_step_ups: int = 2,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
    ) -> None:
        super().__init__(scopes=scopes, storage=storage, max_step_ups=max_step_ups, http_client=http_client)
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs a client_id")
        self.assertion = assertion
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = issuer

    def __repr__(self) -> str:
        return f"WorkloadIdentity(client_id={self.client_id!r})"

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> Registration:
        if self.issuer is not None and self.issuer != issuer:
            raise AuthorizationError(
                "issuer_changed",
                f"the workload identity is for {self.issuer}, but the server now uses {issuer}",
            )
        if self.client_id is None:
            return Registration("", None, "none")
        return Registration(
            self.client_id, self.client_secret, choose_method(metadata, self.client_secret is not None)
        )

    def _client_auth(self, registration: Registration, issuer: str) -> Any:
        if not registration.client_id:
            from authlib.oauth2.auth import ClientAuth

            return ClientAuth("", None, _no_client_auth)
        return super()._client_auth(registration, issuer)

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        registration = await self._registration_for(http, issuer, metadata)
        assertion = await read_assertion(self.assertion, "the workload assertion", deadline_s(http))
        form = {"assertion": assertion, "scope": " ".join(scopes) or None, "resource": resource.resource}
        tokens = await self._token_request(http, metadata, registration, issuer, JWT_BEARER, form, dpop=False)
        tokens.pop("refresh_token", None)  # a fresh assertion is as good as a refresh
        return record(tokens, issuer, resource, scopes)


def _no_client_auth(_auth: Any, method: str, uri: str, headers: Any, body: str) -> tuple[str, Any, str]:
    """No client authentication at all: an anonymous workload (the assertion alone says who it is)."""
    return uri, headers, body
