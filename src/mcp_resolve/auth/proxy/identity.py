"""Who the person is, as the upstream identity provider said: the proxy's one identity model.

The proxy reads it from an OpenID ID token or from a user-info endpoint
(GitHub has no OpenID), through the operator's claim map, so tools see the
same stable names whatever the provider: `subject` (the provider's own,
never-reassigned user id), `login`, `email`, `name` and `groups`. It travels
inside the proxy's own access tokens as JWT claims (`to_claims`) and is read
back from a verified token (`from_claims`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["UpstreamIdentity"]

_STRINGS = ("login", "email", "name")


class UpstreamIdentity(BaseModel):
    """The upstream user: provider name, subject, and what the claim map picked out."""

    model_config = ConfigDict(frozen=True)

    provider: str
    """The upstream's configured name: "github", "google", "oidc" ..."""
    subject: str
    """The provider's stable user id (GitHub's numeric id as a string, an OIDC `sub`)."""
    login: str | None = None
    email: str | None = None
    name: str | None = None
    groups: tuple[str, ...] = ()
    claims: dict[str, Any] = Field(default_factory=dict)
    """Everything else the provider said about the person (protocol claims such as `nonce` left out).
    Not carried in the proxy's tokens: `to_claims` keeps the stable names only."""

    def to_claims(self) -> dict[str, Any]:
        """JWT claims under stable names: `upstream`, `upstream_sub`, and `login`, `email`, `name`,
        `groups` when known. Never `sub`: that is the proxy's own subject."""
        out: dict[str, Any] = {"upstream": self.provider, "upstream_sub": self.subject}
        for key in _STRINGS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.groups:
            out["groups"] = list(self.groups)
        return out

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> UpstreamIdentity | None:
        """The identity `to_claims` wrote into a token, or None when the claims carry none."""
        provider, subject = claims.get("upstream"), claims.get("upstream_sub")
        if not isinstance(provider, str) or not isinstance(subject, str):
            return None
        fields: dict[str, Any] = {k: claims[k] for k in _STRINGS if isinstance(claims.get(k), str)}
        groups = claims.get("groups")
        if isinstance(groups, list):
            fields["groups"] = tuple(g for g in groups if isinstance(g, str))
        return cls(provider=provider, subject=subject, **fields)
