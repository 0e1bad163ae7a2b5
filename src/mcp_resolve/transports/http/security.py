"""`TransportSecuritySettings`: the official SDK's DNS-rebinding settings, mapped onto ours.

A server ported from the official SDK passes `transport_security=` to
`streamable_http_app()`, `sse_app()` or `run()`; it becomes the apps'
`allowed_hosts`/`allowed_origins` (`HttpOptions`), which do the checking.
`enable_dns_rebinding_protection=False` accepts any Host and Origin. The
official's `name:*` and `scheme://name:*` entries (any port) are honoured.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["TransportSecuritySettings", "with_transport_security"]


class TransportSecuritySettings(BaseModel):
    """Which `Host` and `Origin` headers an HTTP app accepts (the official SDK's fields).

    With protection on, a `Host` must be on `allowed_hosts` and an `Origin`
    (when sent) on `allowed_origins`: empty lists accept none.
    """

    enable_dns_rebinding_protection: bool = True
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)

    def http_options(self) -> dict[str, list[str]]:
        """The `allowed_hosts`/`allowed_origins` options these settings mean here."""
        if not self.enable_dns_rebinding_protection:
            return {"allowed_hosts": ["*"], "allowed_origins": ["*"]}
        hosts = [host[:-2] if host.endswith(":*") else host for host in self.allowed_hosts]
        return {"allowed_hosts": hosts, "allowed_origins": list(self.allowed_origins)}


def with_transport_security(options: dict[str, Any]) -> dict[str, Any]:
    """`options` with a `transport_security=` (settings, a dict of them, or None) turned into ours."""
    if "transport_security" not in options:
        return options
    options = dict(options)
    security = options.pop("transport_security")
    if security is None:
        return options
    security = TransportSecuritySettings.model_validate(security)
    given = [name for name in ("allowed_hosts", "allowed_origins") if options.get(name) is not None]
    if given:
        raise ValueError(f"pass transport_security= or {' and '.join(given)}=, not both")
    return {**options, **security.http_options()}
