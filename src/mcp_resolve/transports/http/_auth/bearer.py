"""The bearer check of a protected endpoint: the caller's verified token, or the challenge to answer with.

Every request to a protected MCP endpoint must carry `Authorization: Bearer
<token>` (RFC 6750 §2.1; never the query string). Without one the answer is
401 with `WWW-Authenticate: Bearer resource_metadata="..."`, so a client can
discover the authorization server (RFC 9728 §5.1); with a token the verifier
refuses, the same plus `error="invalid_token"`. A token lacking a scope the
server or the called tool requires gets 403 `error="insufficient_scope"`
naming every scope the operation needs, in one challenge, so the client can
step up once.

DPoP (RFC 9449) rides on the same check: `Authorization: DPoP <token>` with
a `DPoP` proof header. A token bound to a key (`cnf.jkt`) is accepted only
so, with a valid proof for this request (`mcp_resolve.auth.dpop`, loaded on
the first DPoP request); presented as Bearer it is refused. A server whose
`AuthSettings.dpop` requires DPoP refuses bearer tokens, and its challenges
are `DPoP algs="..."` ones. A proof without the nonce the server demands gets
401 `DPoP error="use_dpop_nonce"` with a fresh `DPoP-Nonce` header.

The token is never logged, echoed or put in an error: the challenge texts
are fixed. A verifier that fails in any way refuses (fail closed), logged
without a stack trace, and the client sees a plain 401.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.authentication import BaseUser
from starlette.responses import Response

from ....auth.tokens import (
    DEFAULT_LEEWAY_S,
    AccessToken,
    check_leeway,
    expand_scopes,
    lifetime_refusal,
    principal_of,
    request_copy,
    same_resource,
)
from ....errors import INVALID_REQUEST
from ....protocol.jsonrpc import IncomingRequest, error_message
from .._wire.responses import json_response
from .prm import metadata_url

if TYPE_CHECKING:
    from ....auth.dpop import DPoPProofs
    from ....auth.tokens import AuthSettings, TokenVerifier
    from ....protocol.jsonrpc import Incoming
    from ..._serves import ServedServer

__all__ = ["MAX_AUTHORIZATION_BYTES", "AuthenticatedUser", "BearerCheck", "ProofContext"]

logger = logging.getLogger("mcp_resolve.auth")

MAX_AUTHORIZATION_BYTES = 16 * 1024
"""A longer Authorization header is refused unread (no real access token comes near it)."""
_BEARER = re.compile(rb"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *")
"""RFC 6750 §2.1: the scheme (any case), then one b64token."""
_DPOP = re.compile(rb"[Dd][Pp][Oo][Pp] +([A-Za-z0-9\-._~+/]+=*) *")
"""RFC 9449 §7.1: the same, with the DPoP scheme."""
MEMO_ENTRIES = 256
"""Entries kept at most by each of a bearer check's memos (resource matches, principals); the oldest goes first."""
MEMO_KEY_CHARS = 1024
"""A memo key longer than this (a token's resource, or its issuer, subject and client together) is not kept:
its answer is computed afresh each time, so the memos hold at most ~256 KiB of keys each."""


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    """Keep `value` under `key`, the oldest entry going once `memo` holds MEMO_ENTRIES."""
    if len(memo) >= MEMO_ENTRIES:
        del memo[next(iter(memo))]
    memo[key] = value


@dataclass(frozen=True)
class ProofContext:
    """What a DPoP proof must match: the request's method, its URL as this server may be known by
    (as seen, behind trusted proxies, and the configured resource URL), and its `DPoP` headers."""

    method: str
    urls: tuple[str, ...]
    proofs: Sequence[bytes] = field(default_factory=tuple)


class AuthenticatedUser(BaseUser):
    """The caller, in Starlette's terms (`request.user`), for the app's own routes and middleware.

    `identity` is the principal requestState and handshake sessions are bound
    to (issuer, subject and client together, see `principal_of`).
    """

    def __init__(self, access_token: AccessToken, identity: str | None = None) -> None:
        self.access_token = access_token
        self._identity = principal_of(access_token) if identity is None else identity

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.access_token.subject or self.access_token.client_id

    @property
    def identity(self) -> str:
        return self._identity


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class BearerCheck:
    """Authenticates requests of one protected server and builds its challenges."""

    def __init__(self, server: ServedServer) -> None:
        settings, verifier = server.auth, server.token_verifier
        if settings is None or verifier is None:
            raise ValueError("BearerCheck needs a server built with token_verifier= and auth=")
        self.server = server
        self.settings: AuthSettings = settings
        self.verifier: TokenVerifier = verifier
        self.metadata_url = metadata_url(settings)
        try:
            self.metadata_url.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(
                "resource_server_url must be ASCII (it goes into WWW-Authenticate headers)"
            ) from None
        self.required = tuple(settings.required_scopes or ())
        self._hierarchy = settings.scope_hierarchy
        self.dpop_required = settings.dpop.required
        self.dpop_algs = " ".join(settings.dpop.algorithms)
        self._proofs: DPoPProofs | None = None
        try:  # the expiry check below goes by the verifier's clock-skew allowance, so both agree
            self._leeway_s = check_leeway(getattr(verifier, "leeway_s", DEFAULT_LEEWAY_S))
        except ValueError:
            self._leeway_s = DEFAULT_LEEWAY_S
        # The server's URL is fixed, so whether a token's resource names it is too: each resource a
        # verified token named is matched once (RFC 8707 normalisation of both sides is most of the
        # bearer check otherwise), and each caller's principal encoded once. Both bounded (count, key length).
        self._resource_matches: dict[tuple[str, str], bool] = {}
        self._principals: dict[tuple[str | None, str | None, str], str] = {}

    # -- challenges ----------------------------------------------------------------------
    def challenge(
        self,
        status: int,
        message: str,
        *,
        error: str | None = None,
        description: str | None = None,
        scopes: tuple[str, ...] = (),
        request_id: Any = None,
        dpop: bool = False,
        nonce: str | None = None,
    ) -> Response:
        """A 401 or 403 with its `WWW-Authenticate` header and a JSON-RPC error body (no token in either).

        The challenge is Bearer, or DPoP (with `algs`) when `dpop` or when the server requires DPoP;
        `nonce` goes in a `DPoP-Nonce` header. Every parameter is server-made: fixed texts, validated
        scopes, the configured metadata URL, this server's nonce.
        """
        params = []
        if error is not None:
            params.append(f"error={_quoted(error)}")
        if description is not None:
            params.append(f"error_description={_quoted(description)}")
        if scopes:
            params.append(f"scope={_quoted(' '.join(scopes))}")
        params.append(f"resource_metadata={_quoted(self.metadata_url)}")
        if dpop or self.dpop_required:
            challenge = f"DPoP algs={_quoted(self.dpop_algs)}, " + ", ".join(params)
        else:
            challenge = "Bearer " + ", ".join(params)
        headers = {"www-authenticate": challenge}
        if nonce is not None:
            headers["dpop-nonce"] = nonce
        return json_response(status, error_message(request_id, INVALID_REQUEST, message), headers)

    def _unauthorized(self, invalid: bool, dpop: bool = False) -> Response:
        if not invalid:  # RFC 6750 §3.1: no error code when the request had no credentials at all
            return self.challenge(
                401,
                "Unauthorized: this server needs a bearer token (see WWW-Authenticate)",
                scopes=self.required,
            )
        return self.challenge(
            401,
            "Unauthorized: the bearer token is invalid or expired",
            error="invalid_token",
            description="The access token is invalid, expired, or not for this resource",
            scopes=self.required,
            dpop=dpop,
        )

    # -- the check -----------------------------------------------------------------------
    async def authenticate(
        self, raw_authorization: bytes | None, request: ProofContext | None = None
    ) -> AccessToken | Response:
        """The request's verified token (scopes widened by the hierarchy), or the refusal to send.

        `request` is what a DPoP proof must match; without it, DPoP is refused."""
        if raw_authorization is None:
            return self._unauthorized(invalid=False)
        if len(raw_authorization) > MAX_AUTHORIZATION_BYTES:
            logger.info(
                "refused a request: its Authorization header is over %d bytes", MAX_AUTHORIZATION_BYTES
            )
            return self._unauthorized(invalid=True)
        dpop = _DPOP.fullmatch(raw_authorization)
        match = dpop or _BEARER.fullmatch(raw_authorization)
        if match is None:
            if not raw_authorization.lower().startswith((b"bearer", b"dpop")):
                return self._unauthorized(invalid=False)  # another scheme: as if none was sent
            logger.info("refused a request: its Authorization header is not one bearer or DPoP token")
            return self._unauthorized(invalid=True)
        if dpop is None and self.dpop_required:
            logger.info("refused a bearer token: this server requires DPoP")
            return self._unauthorized(invalid=True)
        access = await self._verify(match.group(1).decode("ascii"))
        if access is None:
            return self._unauthorized(invalid=True, dpop=dpop is not None)
        if dpop is not None:
            refused = await self._check_proof(access, request)
            if refused is not None:
                return refused
        elif access.dpop_jkt is not None:
            logger.info("refused a DPoP-bound access token presented as a bearer token")
            return self._unauthorized(invalid=True, dpop=True)
        missing = self._missing(access, self.required)
        if missing:
            return self.insufficient(self.required, "the server")
        return access

    def _dpop_proofs(self) -> DPoPProofs:
        if self._proofs is None:  # joserfc and the proof checks load with the first DPoP request
            from ....auth.dpop import DPoPProofs

            self._proofs = DPoPProofs(self.settings.dpop, self.server.deployment.replay_store)
        return self._proofs

    async def _check_proof(self, access: AccessToken, request: ProofContext | None) -> Response | None:
        """None when the request's DPoP proof is valid for `access`; the refusal otherwise."""
        from ....auth.dpop import ProofRefused

        jkt = access.dpop_jkt
        if jkt is None or request is None:
            logger.info("refused a DPoP request: its access token is not bound to a key")
            return self._unauthorized(invalid=True, dpop=True)
        proofs = self._dpop_proofs()
        try:
            await proofs.check(
                request.proofs, method=request.method, urls=request.urls, access_token=access.token, jkt=jkt
            )
        except ProofRefused as exc:
            logger.info("refused a DPoP proof: %s", exc)
            if exc.error == "use_dpop_nonce":
                return self.challenge(
                    401,
                    "Unauthorized: the DPoP proof must carry this server's nonce (see DPoP-Nonce)",
                    error="use_dpop_nonce",
                    description="Resource server requires nonce in DPoP proof",
                    dpop=True,
                    nonce=proofs.nonce(),
                )
            return self.challenge(
                401,
                "Unauthorized: the DPoP proof is invalid",
                error="invalid_dpop_proof",
                description="The DPoP proof is invalid for this request",
                dpop=True,
                nonce=proofs.nonce() if proofs.options.nonces else None,
            )
        except Exception as exc:  # the replay store failed: the proof could not be claimed, so refuse
            logger.error("could not record a DPoP proof (%s); refusing the request", type(exc).__name__)
            return json_response(
                503,
                error_message(
                    None, INVALID_REQUEST, "Service unavailable: DPoP proofs cannot be checked now"
                ),
                {"retry-after": "1"},
            )
        return None

    async def _verify(self, token: str) -> AccessToken | None:
        try:
            result: Any = await self.verifier.verify_token(token)
        except Exception as exc:  # fail closed, and never a 500: the verifier's failure is ours to log
            logger.error("token verification failed (%s); refusing the request", type(exc).__name__)
            return None
        if result is None:
            return None
        if not isinstance(result, AccessToken):
            try:  # a verifier written against another SDK's AccessToken: same fields
                result = AccessToken.model_validate(result, from_attributes=True)
            except Exception:
                logger.error(
                    "token_verifier returned a %s, not an AccessToken; refusing", type(result).__name__
                )
                return None
        exp = result.expires_at  # re-checked on every request, cached token or not
        # An int expiry still ahead (nearly every request) passes as is; anything else goes through the rule.
        ahead = type(exp) is int and time.time() < exp + self._leeway_s
        if exp is not None and not ahead and lifetime_refusal({"exp": exp}, self._leeway_s) is not None:
            logger.info("refused an access token: the verifier accepted it but it has expired")
            return None
        if not self._resource_ok(result):
            return None
        update = {"scopes": expand_scopes(result.scopes, self._hierarchy)} if self._hierarchy else {}
        try:  # the request's own claims: verifiers hand the same AccessToken to every request with the token
            return request_copy(result, **update)
        except RecursionError:
            logger.info("refused an access token: its claims are nested too deeply to copy")
            return None

    def _resource_ok(self, token: AccessToken) -> bool:
        mode, mine = self.settings.validate_token_resource, self.settings.resource_server_url
        if mode is False:
            return True
        if token.resource is None:
            if mode:
                logger.warning(
                    "refused an access token: its verifier names no resource, and validate_token_resource=True"
                )
                return False
            return True
        if not self._same_resource(token.resource, mine):
            logger.info("refused an access token issued for another resource")
            return False
        return True

    def _same_resource(self, theirs: str, mine: str) -> bool:
        """`same_resource(theirs, mine)`, remembered (`mine` is the one configured URL, so a pair per resource)."""
        key = (theirs, mine)
        matches = self._resource_matches.get(key)
        if matches is None:
            matches = same_resource(theirs, mine)
            if len(theirs) + len(mine) <= MEMO_KEY_CHARS:
                _remember(self._resource_matches, key, matches)
        return matches

    def identity(self, token: AccessToken) -> str:
        """`principal_of(token)`, remembered per (issuer, subject, client)."""
        key = (token.issuer, token.subject, token.client_id)
        principal = self._principals.get(key)
        if principal is None:
            principal = principal_of(token)
            if sum(len(part) for part in key if part is not None) <= MEMO_KEY_CHARS:
                _remember(self._principals, key, principal)
        return principal

    @staticmethod
    def _missing(token: AccessToken, needed: tuple[str, ...]) -> tuple[str, ...]:
        granted = token.scopes
        return tuple(scope for scope in needed if scope not in granted)

    def insufficient(self, scopes: tuple[str, ...], what: str, request_id: Any = None) -> Response:
        """403 naming every scope the operation needs (`what` is for the body, never the header)."""
        return self.challenge(
            403,
            f"Forbidden: the access token lacks a scope {what} requires ({' '.join(scopes)})",
            error="insufficient_scope",
            description="The access token lacks a scope this operation requires",
            scopes=scopes,
            request_id=request_id,
        )

    def scope_refusal(self, token: AccessToken, message: Incoming) -> Response | None:
        """The 403 for a request whose target needs scopes the token lacks; None when it may run.

        The challenge names everything the call needs (the server's scopes and
        the tool's), so one step-up is enough.
        """
        if not isinstance(message, IncomingRequest):
            return None
        declared = self.server.required_scopes(message.method, message.params)
        if not declared or not self._missing(token, declared):
            return None
        needed = tuple(dict.fromkeys((*self.required, *declared)))
        name = message.params.get("name")
        logger.info("refused %s %r: the access token lacks scopes it requires", message.method, name)
        return self.insufficient(needed, f"the tool {name}", message.id)
