"""`OAuth`: the authorization code grant with PKCE, where a person logs in once in a browser.

Obtaining a token: pick the client identity (configured, a metadata document
URL, or dynamic registration), send the person to the authorization
endpoint with a PKCE S256 challenge and a fresh `state`, wait for the
redirect back, check it (`state`, then the `iss` of RFC 9207 compared as
plain strings, before anything else in it is acted on), and exchange the
code at the token endpoint. Refresh and step-up are the `Grant`'s.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import anyio
import httpx

from .assertion import JWT_BEARER
from .browser import AuthorizationResponse, CallbackHandler, LoopbackCallback, RedirectHandler, open_browser
from .discovery import ProtectedResource
from .enterprise import EnterpriseIdP, exchange_for_id_jag
from .errors import AuthorizationError, printable
from .grant import Grant, union_scopes
from .registration import (
    HTTP_AUTH_METHODS,
    Registration,
    choose_method,
    register,
    stored_registration,
    valid_metadata_url,
)
from .storage import TokenStorage
from .token_endpoint import record

__all__ = ["OAuth"]

logger = logging.getLogger("mcp_resolve.client.auth")

_UNRESERVED = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
"""The characters of a PKCE code verifier (RFC 7636 §4.1)."""


class OAuth(Grant):
    """The authorization code flow with PKCE: a person logs in once, the client keeps the tokens fresh.

    `Client(url, auth=OAuth())` (or `auth="oauth"`) logs in the first time
    the server answers 401, in the system browser with a listener on
    127.0.0.1 for the redirect back. The client identity comes from, in the
    spec's order of preference:

    1. `client_id` (and `client_secret`) registered in advance: pass `issuer`
       too and they are never offered to another authorization server;
    2. `client_metadata_url`, an https URL where this client's metadata
       document is published (Client ID Metadata Documents), when the
       authorization server supports them;
    3. dynamic client registration (RFC 7591), remembered per authorization
       server in `storage`.

    Tokens are kept in `storage` (memory by default; `FileTokenStorage` for
    command-line tools), refreshed when they expire, and widened when the
    server asks for more scope. `offline_access` is requested when the
    authorization server lists it, so that a refresh token is issued.
    `dpop`: bind tokens to a key of this client (RFC 9449), when the
    authorization server and the MCP server both support it (None, the
    default), always (True) or never (False).
    """

    def __init__(
        self,
        *,
        scopes: Sequence[str] | None = None,
        client_name: str = "mcp-resolve client",
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: Literal["none", "client_secret_basic", "client_secret_post"]
        | None = None,
        issuer: str | None = None,
        client_metadata_url: str | None = None,
        redirect_handler: RedirectHandler | None = None,
        callback_handler: CallbackHandler | None = None,
        storage: TokenStorage | None = None,
        offline_access: bool = True,
        max_step_ups: int = 2,
        login_timeout: float = 300.0,
        client_metadata: dict[str, Any] | None = None,
        http_client: Callable[[], httpx.AsyncClient] | None = None,
        dpop: bool | None = None,
        enterprise: EnterpriseIdP | None = None,
    ) -> None:
        super().__init__(
            scopes=scopes, storage=storage, max_step_ups=max_step_ups, http_client=http_client, dpop=dpop
        )
        if enterprise is not None and client_id is None:
            raise ValueError(
                "enterprise sign-in needs the client_id registered at the MCP authorization server"
            )
        if client_metadata_url is not None and not valid_metadata_url(client_metadata_url):
            raise ValueError(
                "client_metadata_url must be an https URL with a path, e.g. https://app.example/client.json"
            )
        if token_endpoint_auth_method is not None and token_endpoint_auth_method not in HTTP_AUTH_METHODS:
            raise ValueError(f"token_endpoint_auth_method must be one of {HTTP_AUTH_METHODS}")
        self.client_name = client_name
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.issuer = issuer
        self.client_metadata_url = client_metadata_url
        self.redirect_handler: RedirectHandler = redirect_handler or open_browser
        self.callback_handler: CallbackHandler = callback_handler or LoopbackCallback()
        self.offline_access = offline_access
        self.login_timeout = login_timeout
        self.client_metadata = dict(client_metadata or {})
        self.enterprise = enterprise

    def __repr__(self) -> str:
        return f"OAuth(client_id={self.client_id!r}, scopes={self.scopes!r})"

    def _with_extras(self, scopes: list[str], metadata: dict[str, Any]) -> list[str]:
        supported = metadata.get("scopes_supported") or []
        # Enterprise sign-in renews by exchanging the ID token again: no refresh token to ask for.
        if self.offline_access and self.enterprise is None and "offline_access" in supported:
            return union_scopes(scopes, ["offline_access"])
        return scopes

    async def _registration_for(
        self, http: httpx.AsyncClient, issuer: str, metadata: dict[str, Any], *, refreshing: bool = False
    ) -> Registration:
        if self.client_id is not None:
            if self.issuer is not None and self.issuer != issuer:
                raise AuthorizationError(
                    "issuer_changed",
                    f"the pre-registered client belongs to {self.issuer}, but the server now uses {issuer}",
                )
            method = self.token_endpoint_auth_method or choose_method(
                metadata, self.client_secret is not None
            )
            return Registration(self.client_id, self.client_secret, method)
        if (
            self.client_metadata_url is not None
            and metadata.get("client_id_metadata_document_supported") is True
        ):
            return Registration(self.client_metadata_url, None, "none")
        registration = await stored_registration(self.storage, issuer)
        if refreshing and registration is not None:
            return registration  # the redirect URI does not matter to a refresh
        redirect_uri = await self.callback_handler.redirect_uri()
        if (
            registration is not None
            and redirect_uri in registration.redirect_uris
            and (registration.secret_expires_at == 0 or registration.secret_expires_at > time.time() + 60)
        ):
            return registration
        return await register(
            http,
            self.storage,
            issuer,
            metadata,
            redirect_uri,
            client_name=self.client_name,
            client_metadata=self.client_metadata,
        )

    async def _obtain(
        self,
        http: httpx.AsyncClient,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        from authlib.common.security import generate_token
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        if self.enterprise is not None:
            return await self._obtain_enterprise(http, self.enterprise, resource, issuer, metadata, scopes)
        if "S256" not in (metadata.get("code_challenge_methods_supported") or []):
            raise AuthorizationError(
                "pkce_unsupported", f"{issuer} does not advertise PKCE S256; refusing to authorize without it"
            )
        endpoint = metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError("metadata_invalid", f"{issuer} has no authorization_endpoint")
        registration = await self._registration_for(http, issuer, metadata)
        redirect_uri = await self.callback_handler.redirect_uri()
        verifier = generate_token(64, _UNRESERVED)
        dpop = self._uses_dpop(metadata, resource)
        state = secrets.token_urlsafe(32)
        url = prepare_grant_uri(
            endpoint,
            registration.client_id,
            "code",
            redirect_uri=redirect_uri,
            scope=" ".join(scopes) or None,
            state=state,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
            resource=resource.resource,
            prompt="consent" if "offline_access" in scopes else None,
            # RFC 9449 §10: the code can then be redeemed only with this client's key.
            dpop_jkt=(await self._proof_key()).thumbprint if dpop else None,
        )
        async with self._with_person():
            await self._send_person(url)
            answer = await self.callback_handler.wait_for_callback(state, self.login_timeout)
        form = {
            "code": _code_from(answer, state, issuer, metadata),
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": resource.resource,
        }  # client_id goes where the authentication method puts it (Authlib adds it for none and post)
        tokens = await self._token_request(
            http, metadata, registration, issuer, "authorization_code", form, dpop=dpop
        )
        logger.info("authorized for %s at %s", resource.resource, issuer)
        return record(tokens, issuer, resource, scopes)

    async def _obtain_enterprise(
        self,
        http: httpx.AsyncClient,
        idp: EnterpriseIdP,
        resource: ProtectedResource,
        issuer: str,
        metadata: dict[str, Any],
        scopes: list[str],
    ) -> dict[str, Any]:
        """SEP-990: an ID-JAG from the enterprise IdP, then the JWT bearer grant with it at `issuer`."""
        registration = await self._registration_for(http, issuer, metadata)
        idp_metadata = await self._authorization_server(http, idp.issuer) if idp.issuer is not None else {}
        id_jag = await exchange_for_id_jag(
            http, idp, idp_metadata, audience=issuer, resource=resource.resource, scopes=scopes
        )
        form = {"assertion": id_jag, "scope": " ".join(scopes) or None, "resource": resource.resource}
        tokens = await self._token_request(http, metadata, registration, issuer, JWT_BEARER, form, dpop=False)
        logger.info("authorized for %s at %s through the enterprise IdP", resource.resource, issuer)
        return record(tokens, issuer, resource, scopes)

    async def _send_person(self, url: str) -> None:
        """Call the redirect handler, once: its failure ends this login with an AuthorizationError.

        Whatever it raised (a browser that would not start, a test browser's
        httpx error) is the login's failure, not the MCP server's, so the
        Client neither mistakes it for an older server nor sends the person
        to the browser a second time.
        """
        try:
            await self.redirect_handler(url)
        except AuthorizationError:
            await self._release_callback()
            raise
        except Exception as exc:
            await self._release_callback()
            logger.debug("the redirect handler failed", exc_info=True)
            raise AuthorizationError(
                "redirect_failed", f"the redirect handler raised {type(exc).__name__}: {printable(exc, 200)}"
            ) from exc
        except BaseException:
            await self._release_callback()
            raise

    async def _release_callback(self) -> None:
        """Close a callback listener opened for a login that will not happen (the redirect failed).

        `wait_for_callback` closes it on every other path; a handler of your
        own that holds nothing has no `aclose` and needs none.
        """
        close = getattr(self.callback_handler, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await close()


def _code_from(answer: AuthorizationResponse, state: str, issuer: str, metadata: dict[str, Any]) -> str:
    """The authorization code in the redirect back, once it is shown to answer our request, from `issuer`."""
    if answer.duplicated:
        raise AuthorizationError("invalid_response", f"repeated parameters {sorted(answer.duplicated)}")
    if answer.state is None or not secrets.compare_digest(answer.state, state):
        raise AuthorizationError("state_mismatch", "the authorization response does not carry our state")
    # RFC 9207 §2.4, before anything in the response is acted on (its error included).
    iss = answer.params.get("iss")
    if iss is None and metadata.get("authorization_response_iss_parameter_supported") is True:
        raise AuthorizationError("iss_missing", f"{issuer} promised an iss parameter and sent none")
    if iss is not None and iss != issuer:
        raise AuthorizationError("iss_mismatch", "the authorization response comes from another issuer")
    if "error" in answer.params:
        raise AuthorizationError(
            printable(answer.params["error"], 80),
            printable(answer.params.get("error_description") or "refused"),
        )
    code = answer.params.get("code")
    if not code:
        raise AuthorizationError("invalid_response", "the authorization response carries no code")
    return code
