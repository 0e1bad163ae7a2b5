"""What a production deployment adds to a bench server, chosen by the driver through the environment.

`benchmarks/production.py` launches the same server modules as `run.py`, with
these variables set; unset, a server is exactly the one `run.py` measures:

* `BENCH_JWKS`, `BENCH_ISSUER`, `BENCH_RESOURCE`: every request must carry an
  RS256 JWT from that issuer for that resource, checked against the JWKS
  (fetched once, then cached). Ours uses `JWTVerifier`; the official SDK, which
  ships the `TokenVerifier` protocol but no JWT verifier, gets one written
  with joserfc the way its docs show (keys fetched once, every token checked).
* `BENCH_REDIS`: every store on that Redis (`redis_url=`: sessions, events,
  single-use claims). The official SDK has no Redis store of its own.
* `BENCH_TRACING`: `api` instruments the server with no SDK configured (spans
  are the API's no-ops); `sdk` also configures the OpenTelemetry SDK with a
  batch processor and an exporter that drops what it is given.
* `BENCH_STREAMS`: ours lets that many long-lived streams be open at once,
  from one client, with as many handshake sessions (the idle-streams leg
  opens thousands from one load process).

Imported by the server modules only when one of these is set.
"""

from __future__ import annotations

import os
from typing import Any

import httpx


def jwt_settings() -> tuple[str, str, str] | None:
    jwks = os.environ.get("BENCH_JWKS")
    if not jwks:
        return None
    return jwks, os.environ["BENCH_ISSUER"], os.environ["BENCH_RESOURCE"]


def ours_options() -> dict[str, Any]:
    options: dict[str, Any] = {}
    settings = jwt_settings()
    if settings is not None:
        from mcp_resolve.auth import AuthSettings, JWTVerifier

        jwks, issuer, resource = settings
        options["token_verifier"] = JWTVerifier(jwks_uri=jwks, algorithms=["RS256"])
        options["auth"] = AuthSettings(issuer_url=issuer, resource_server_url=resource)
    if os.environ.get("BENCH_REDIS"):
        options["redis_url"] = os.environ["BENCH_REDIS"]
    return options


def ours_http_app(server: Any) -> Any:
    """`server.streamable_http_app`, with room for $BENCH_STREAMS streams from one client when set."""
    streams = int(os.environ.get("BENCH_STREAMS") or 0)
    if not streams:
        return server.streamable_http_app
    server.notifications.max_streams = streams  # the process-wide cap on listen streams
    options = {
        "max_streams": streams,
        "max_streams_per_client": streams,
        "max_sessions": streams + 100,
        "max_sessions_per_client": streams + 100,
    }
    return lambda: server.streamable_http_app(**options)


def ours_tracing(server: Any) -> None:
    mode = os.environ.get("BENCH_TRACING")
    if not mode:
        return
    from mcp_resolve.telemetry import instrument

    if mode == "sdk":
        _configure_sdk()
    instrument(server)


def _configure_sdk() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)


class OfficialJWTVerifier:
    """The official SDK's `TokenVerifier` for RS256 JWTs: JWKS fetched once, each token's signature,
    issuer, audience and expiry checked (no cache of verified tokens: the SDK has none)."""

    def __init__(self, jwks: str, issuer: str, resource: str) -> None:
        self.jwks, self.issuer, self.resource = jwks, issuer, resource
        self._keys: Any = None

    async def verify_token(self, token: str) -> Any:
        import time

        from joserfc import jwt
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet
        from mcp.server.auth.provider import AccessToken

        if self._keys is None:
            async with httpx.AsyncClient(timeout=5) as client:
                self._keys = KeySet.import_key_set((await client.get(self.jwks)).json())
        try:
            claims = jwt.decode(token, self._keys, algorithms=["RS256"]).claims
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer}, aud={"essential": True, "value": self.resource}
            ).validate(claims)
        except JoseError:
            return None
        if claims.get("exp", 0) <= time.time():
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.resource,
        )


def official_options() -> dict[str, Any]:
    settings = jwt_settings()
    if settings is None:
        return {}
    from mcp.server.auth.settings import AuthSettings

    jwks, issuer, resource = settings
    return {
        "token_verifier": OfficialJWTVerifier(jwks, issuer, resource),
        "auth": AuthSettings(issuer_url=issuer, resource_server_url=resource),
    }
