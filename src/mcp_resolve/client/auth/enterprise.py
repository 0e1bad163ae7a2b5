"""Enterprise sign-in (SEP-990, enterprise-managed authorization): the company's identity provider decides.

The person signed in once, at the enterprise identity provider (IdP); the
application holds the ID token it got then. To reach an MCP server, the
client:

1. exchanges that ID token at the IdP's token endpoint (RFC 8693 token
   exchange) for an Identity Assertion JWT Authorization Grant, an ID-JAG:
   `requested_token_type=urn:ietf:params:oauth:token-type:id-jag`, with the
   MCP server's authorization server as `audience` and the server's
   protected resource identifier as `resource`. The IdP applies the
   company's policy here (may this person's client reach this server?);
2. presents the ID-JAG to the MCP server's authorization server with the
   JWT bearer grant (RFC 7523), authenticating as the client registered
   there, and gets the access token.

No browser and no consent screen per server. `EnterpriseIdP` is the
configuration of step 1; `OAuth(enterprise=EnterpriseIdP(...))` uses it
instead of the browser login, and keeps, refreshes and widens the tokens as
for any other grant. The ID token and the ID-JAG are never logged, nor put
in an error message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx

from .assertion import AssertionSource, read_assertion
from .discovery import deadline_s, fetch_deadline, is_secure_url, read_json
from .errors import AuthorizationError, printable, refusal
from .registration import Registration, choose_method
from .token_endpoint import MAX_TOKEN_RESPONSE_BYTES, secret_auth

__all__ = ["ID_JAG", "ID_TOKEN", "TOKEN_EXCHANGE", "EnterpriseIdP", "exchange_for_id_jag"]

logger = logging.getLogger("mcp_resolve.client.auth")

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


@dataclass
class EnterpriseIdP:
    """The enterprise identity provider an `OAuth` client signs in through (SEP-990).

    `issuer` is the IdP's issuer URL (its token endpoint is discovered from
    its metadata), or give `token_endpoint` directly. `client_id` and
    `client_secret` are this application's registration at the IdP (the
    secret is optional: a public client sends only its id). `subject_token`
    is the person's ID token from the IdP: the token itself, a path to a
    file holding it (read again on every use), or a function (sync or async)
    returning the current one, which is where an application that refreshes
    its ID token plugs in. `subject_token_type` says what it is (an ID token
    by default; `urn:ietf:params:oauth:token-type:saml2` for a SAML assertion).
    """

    subject_token: AssertionSource
    issuer: str | None = None
    token_endpoint: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    subject_token_type: str = ID_TOKEN

    def __post_init__(self) -> None:
        if (self.issuer is None) == (self.token_endpoint is None):
            raise ValueError("pass exactly one of issuer and token_endpoint")
        for name in ("issuer", "token_endpoint"):
            url = getattr(self, name)
            if url is not None and not is_secure_url(url):
                raise ValueError(f"{name} must be an https URL (or http to this machine)")
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("client_secret needs a client_id")


async def exchange_for_id_jag(
    http: httpx.AsyncClient,
    idp: EnterpriseIdP,
    metadata: dict[str, Any],
    *,
    audience: str,
    resource: str,
    scopes: list[str],
) -> str:
    """An ID-JAG for `resource` at the authorization server `audience`, from the enterprise IdP.

    `metadata` is the IdP's discovered metadata (empty when `token_endpoint` was configured).
    """
    endpoint = idp.token_endpoint or metadata.get("token_endpoint")
    if not isinstance(endpoint, str):
        raise AuthorizationError("metadata_invalid", f"the enterprise IdP {idp.issuer} has no token_endpoint")
    subject_token = await read_assertion(idp.subject_token, "the enterprise ID token", deadline_s(http))
    form: dict[str, str] = {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "subject_token": subject_token,
        "subject_token_type": idp.subject_token_type,
        "audience": audience,
        "resource": resource,
    }
    if scopes:
        form["scope"] = " ".join(scopes)
    registration = Registration(idp.client_id or "", idp.client_secret, _method(idp, metadata))
    headers = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
    body = urlencode(form)
    if registration.client_id:
        _url, headers, body = secret_auth(registration).prepare("POST", endpoint, headers, body)
    async with (
        fetch_deadline(http, endpoint),
        http.stream("POST", endpoint, content=body, headers=headers) as answer,
    ):
        payload = await read_json(answer, MAX_TOKEN_RESPONSE_BYTES)
        status = answer.status_code
    where = printable(idp.issuer or endpoint, 200)
    if status != 200 or not isinstance(payload, dict):
        refused = refusal(payload, status, "token_exchange_failed", "token exchange")
        raise AuthorizationError(refused.error, f"the enterprise IdP {where} refused: {refused.description}")
    return _id_jag_from(payload, where)


def _id_jag_from(payload: Mapping[str, Any], where: str) -> str:
    """The ID-JAG in a token exchange answer, once it is shown to be one (RFC 8693 §2.2.1, SEP-990)."""
    issued = payload.get("issued_token_type")
    if issued != ID_JAG:
        raise AuthorizationError(
            "invalid_token_response",
            f"the enterprise IdP {where} issued {printable(issued, 80)!r}, not an ID-JAG",
        )
    token = payload.get("access_token")
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_RESPONSE_BYTES:
        raise AuthorizationError(
            "invalid_token_response", f"the enterprise IdP {where} sent no usable ID-JAG"
        )
    parts = token.split(".")
    if len(parts) != 3 or not all(parts) or not token.isascii() or not token.isprintable():
        raise AuthorizationError(
            "invalid_token_response", f"the enterprise IdP {where} sent an ID-JAG that is not a JWT"
        )
    return token


def _method(idp: EnterpriseIdP, metadata: dict[str, Any]) -> str:
    if idp.client_id is None:
        return "none"
    return choose_method(metadata, idp.client_secret is not None)
