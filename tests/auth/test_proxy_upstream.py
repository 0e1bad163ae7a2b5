"""The proxy's upstream leg against a real provider: oidc-provider set up like Google and like GitHub.

Each test drives a whole login: the authorization URL `UpstreamClient` builds is visited by an HTTP
client that follows redirects and keeps cookies (the upstream's scripted person signs in and
consents), the code it sends back is exchanged, the identity read and the tokens refreshed.
The hostile cases use the same real provider: an ID token for another client, a nonce of another
login, a provider that is down, slow or trickles its answer.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import replace

import anyio
import anyio.abc
import httpx
import pytest

from mcp_resolve.auth.proxy._upstream import UpstreamClient, UpstreamConfig, UpstreamError, UpstreamTokens
from mcp_resolve.auth.proxy.identity import UpstreamIdentity
from upstream_helpers import Upstream, follow_login, upstream_provider

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CALLBACK = "http://127.0.0.1:8123/auth/callback"


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def google_like(upstream: Upstream, **changes: object) -> UpstreamConfig:
    config = UpstreamConfig(
        name="google",
        display_name="Google",
        client_id=upstream.client_id,
        client_secret=upstream.client_secret,
        discovery_url=upstream.discovery_url,
        scopes=("openid", "email", "profile"),
        claim_map={"subject": "sub", "email": "email", "name": "name", "groups": "groups"},
        timeout_s=3,
        allow_http_loopback=True,
    )
    return replace(config, **changes)  # type: ignore[arg-type]


def github_like(upstream: Upstream, **changes: object) -> UpstreamConfig:
    endpoints = upstream.endpoints
    config = UpstreamConfig(
        name="github",
        display_name="GitHub",
        client_id=upstream.client_id,
        client_secret=upstream.client_secret,
        authorization_endpoint=endpoints["authorization_endpoint"],
        token_endpoint=endpoints["token_endpoint"],
        userinfo_endpoint=endpoints["userinfo_endpoint"],
        scopes=("read:user", "user:email"),
        identity_source="userinfo",
        claim_map={"subject": "id", "login": "login", "name": "name", "email": "email"},
        timeout_s=3,
        allow_http_loopback=True,
    )
    return replace(config, **changes)  # type: ignore[arg-type]


async def login(
    client: UpstreamClient, *, nonce: str = "n-0S6_WzA2Mj"
) -> tuple[UpstreamTokens, dict[str, str]]:
    """A whole upstream login; the tokens and the query of the redirect back."""
    verifier, challenge = _pkce()
    state = secrets.token_urlsafe(16)
    url = await client.authorization_url(
        state=state, code_challenge=challenge, redirect_uri=CALLBACK, nonce=nonce
    )
    back = await follow_login(url, CALLBACK)
    assert back["state"] == state
    tokens = await client.exchange_code(code=back["code"], code_verifier=verifier, redirect_uri=CALLBACK)
    return tokens, back


async def test_google_like_login_identity_and_refresh() -> None:
    async with upstream_provider("oidc") as upstream:
        client = UpstreamClient(google_like(upstream))
        try:
            tokens, back = await login(client, nonce="nonce-1")
            assert back["iss"] == upstream.issuer
            assert tokens.id_token and tokens.refresh_token and tokens.access_token
            assert tokens.access_token.count(".") != 2  # opaque, like Google's
            assert tokens.expires_at is not None
            identity = await client.identity(tokens, nonce="nonce-1")
            assert identity == UpstreamIdentity(
                provider="google",
                subject="alice",
                email="alice@example.com",
                name="Alice Liddell",
                groups=("staff",),
                claims=identity.claims,
            )
            assert "nonce" not in identity.claims and identity.claims["email_verified"] is True
            assert UpstreamIdentity.from_claims(identity.to_claims()) == identity.model_copy(
                update={"claims": {}}
            )

            fresh = await client.refresh(tokens.refresh_token)
            assert fresh.access_token != tokens.access_token
            assert fresh.refresh_token  # rotated or kept, never lost
            # The refreshed ID token carries no nonce: checked without one.
            if fresh.id_token:
                assert (await client.identity(fresh, nonce=None)).subject == "alice"
            with pytest.raises(UpstreamError) as used:
                await client.refresh("not-a-refresh-token")
            assert used.value.kind == "refused" and "invalid_grant" in str(used.value)
        finally:
            await client.aclose()


async def test_github_like_login_reads_identity_from_the_user_endpoint() -> None:
    async with upstream_provider("oauth", account="bob") as upstream:
        client = UpstreamClient(github_like(upstream, token_endpoint_auth="client_secret_basic"))
        try:
            verifier, challenge = _pkce()
            url = await client.authorization_url(
                state="s1", code_challenge=challenge, redirect_uri=CALLBACK, nonce="x"
            )
            assert "nonce=" not in url and "openid" not in url  # plain OAuth: no OpenID parameters
            assert "code_challenge_method=S256" in url
            back = await follow_login(url, CALLBACK)
            tokens = await client.exchange_code(
                code=back["code"], code_verifier=verifier, redirect_uri=CALLBACK
            )
            assert tokens.id_token is None and tokens.refresh_token
            identity = await client.identity(tokens, nonce=None)
            assert (identity.provider, identity.subject, identity.login) == ("github", "1002", "bob")
            assert (identity.name, identity.email) == ("Bob Builder", "bob@example.com")

            fresh = await client.refresh(tokens.refresh_token)
            assert (await client.identity(fresh, nonce=None)).subject == "1002"
            with pytest.raises(UpstreamError) as bad:
                await client.identity(replace(fresh, access_token="forged-token"), nonce=None)
            assert bad.value.kind == "refused" and "forged-token" not in str(bad.value)
        finally:
            await client.aclose()


async def test_login_hint_picks_another_account() -> None:
    async with upstream_provider("oidc") as upstream:
        client = UpstreamClient(google_like(upstream, extra_authorize_params={"login_hint": "carol"}))
        try:
            tokens, _ = await login(client, nonce="n")
            identity = await client.identity(tokens, nonce="n")
            assert (identity.subject, identity.email, identity.groups) == ("carol", "carol@example.com", ())
        finally:
            await client.aclose()


async def test_the_code_is_bound_to_the_pkce_verifier() -> None:
    async with upstream_provider("oidc") as upstream:
        client = UpstreamClient(google_like(upstream))
        try:
            _verifier, challenge = _pkce()
            url = await client.authorization_url(
                state="s", code_challenge=challenge, redirect_uri=CALLBACK, nonce="n"
            )
            back = await follow_login(url, CALLBACK)
            with pytest.raises(UpstreamError) as wrong:
                await client.exchange_code(code=back["code"], code_verifier=_pkce()[0], redirect_uri=CALLBACK)
            assert wrong.value.kind == "refused" and "invalid_grant" in str(wrong.value)
            assert back["code"] not in str(wrong.value)
        finally:
            await client.aclose()


async def test_an_id_token_of_another_login_or_client_is_refused() -> None:
    async with upstream_provider(
        "oidc", extra_clients=[("other-app", "other-secret-0123456789")]
    ) as upstream:
        mine = UpstreamClient(google_like(upstream))
        other = UpstreamClient(
            google_like(upstream, client_id="other-app", client_secret="other-secret-0123456789")
        )
        try:
            tokens, _ = await login(mine, nonce="the-nonce")
            with pytest.raises(UpstreamError) as replayed:
                await mine.identity(tokens, nonce="another-login-nonce")
            assert replayed.value.kind == "refused" and "nonce" in str(replayed.value)

            theirs, _ = await login(other, nonce="the-nonce")
            assert (await other.identity(theirs, nonce="the-nonce")).subject == "alice"
            with pytest.raises(UpstreamError) as foreign:
                await mine.identity(theirs, nonce="the-nonce")  # aud = other-app, not us
            assert foreign.value.kind == "refused" and "another client" in str(foreign.value)

            head, payload, signature = tokens.id_token.split(".")  # type: ignore[union-attr]
            tampered = replace(tokens, id_token=f"{head}.{payload}.{signature[::-1]}")
            with pytest.raises(UpstreamError, match="signature"):
                await mine.identity(tampered, nonce="the-nonce")
            with pytest.raises(UpstreamError, match="no ID token"):
                await mine.identity(replace(tokens, id_token=None), nonce="the-nonce")
        finally:
            await mine.aclose()
            await other.aclose()


async def test_an_issuer_other_than_configured_is_refused() -> None:
    async with upstream_provider("oidc") as upstream:
        client = UpstreamClient(google_like(upstream, issuer="https://accounts.example.com"))
        try:
            with pytest.raises(UpstreamError, match="another issuer") as error:
                await client.authorization_url(
                    state="s", code_challenge="c" * 43, redirect_uri=CALLBACK, nonce="n"
                )
            assert error.value.kind == "refused"
        finally:
            await client.aclose()


@pytest.mark.parametrize(
    ("fault", "doing"),
    [({"delay_ms": 10_000}, "exchanging"), ({"drip_ms": 200}, "exchanging"), ({"status": 503}, "HTTP 503")],
)
async def test_a_slow_or_failing_token_endpoint_fails_within_the_deadline(
    fault: dict[str, int], doing: str
) -> None:
    async with upstream_provider("oidc") as upstream:
        client = UpstreamClient(google_like(upstream, timeout_s=1.5))
        try:
            verifier, challenge = _pkce()
            url = await client.authorization_url(
                state="s", code_challenge=challenge, redirect_uri=CALLBACK, nonce="n"
            )
            back = await follow_login(url, CALLBACK)
            await upstream.faults({"/token": fault})
            started = anyio.current_time()
            with anyio.fail_after(6), pytest.raises(UpstreamError) as error:
                await client.exchange_code(code=back["code"], code_verifier=verifier, redirect_uri=CALLBACK)
            assert anyio.current_time() - started < 4  # bounded by the 1.5 s deadline, not by the fault
            assert error.value.kind == "unreachable" and doing in str(error.value)
            assert back["code"] not in str(error.value) and upstream.client_secret not in str(error.value)
        finally:
            await client.aclose()


async def test_a_slow_discovery_or_jwks_is_bounded_too() -> None:
    async with upstream_provider("oidc") as upstream:
        await upstream.faults({"/.well-known/openid-configuration": {"drip_ms": 300}})
        client = UpstreamClient(google_like(upstream, timeout_s=1))
        try:
            with anyio.fail_after(5), pytest.raises(UpstreamError) as error:
                await client.authorization_url(
                    state="s", code_challenge="c" * 43, redirect_uri=CALLBACK, nonce="n"
                )
            assert error.value.kind == "unreachable"
            await upstream.faults({"/jwks": {"delay_ms": 10_000}})
            tokens, _ = await login(client, nonce="n")  # discovery works again: it was not cached as failed
            with anyio.fail_after(5), pytest.raises(UpstreamError) as keys:
                await client.identity(tokens, nonce="n")
            assert keys.value.kind == "unreachable"
        finally:
            await client.aclose()


async def test_an_upstream_that_is_down_is_unreachable() -> None:
    async with upstream_provider("oauth") as upstream:
        config = github_like(upstream, timeout_s=2)
    # The provider has stopped: its port refuses connections.
    client = UpstreamClient(config)
    try:
        with anyio.fail_after(5), pytest.raises(UpstreamError) as error:
            await client.exchange_code(code="some-code", code_verifier="v" * 43, redirect_uri=CALLBACK)
        assert error.value.kind == "unreachable" and "some-code" not in str(error.value)
        with anyio.fail_after(5), pytest.raises(UpstreamError):
            await client.identity(UpstreamTokens(access_token="at"), nonce=None)
    finally:
        await client.aclose()


async def test_redirects_are_not_followed_even_on_a_shared_client() -> None:
    """A token endpoint that redirects would take the code and the secret elsewhere: nothing is sent there."""
    arrived: list[bytes] = []

    async def record(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            arrived.append(await stream.receive(65536))

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, record)
        async with httpx.AsyncClient(follow_redirects=True) as shared, upstream_provider("oauth") as upstream:
            await upstream.faults({"/token": {"redirect": f"http://127.0.0.1:{port}/steal"}})
            client = UpstreamClient(github_like(upstream), http_client=shared)
            with pytest.raises(UpstreamError) as error:
                await client.exchange_code(code="the-code", code_verifier="v" * 43, redirect_uri=CALLBACK)
            assert error.value.kind == "unreachable" and "redirect" in str(error.value)
            await anyio.sleep(0.2)
            assert arrived == []
        group.cancel_scope.cancel()


def test_secrets_stay_out_of_reprs_and_config_is_checked() -> None:
    config = UpstreamConfig(
        name="x",
        client_id="id",
        client_secret="s3cret-value",
        authorization_endpoint="https://idp.example/authorize",
        token_endpoint="https://idp.example/token",
        userinfo_endpoint="https://idp.example/user",
        identity_source="userinfo",
    )
    assert "s3cret-value" not in repr(config)
    tokens = UpstreamTokens(access_token="at-secret", refresh_token="rt-secret", id_token="idt-secret")
    assert "secret" not in repr(tokens)
    with pytest.raises(ValueError, match="https"):
        replace(config, token_endpoint="http://idp.example/token")
    with pytest.raises(ValueError, match="https"):
        replace(config, token_endpoint="http://127.0.0.1:9/token")  # loopback needs allow_http_loopback
    with pytest.raises(ValueError, match="openid"):
        replace(config, identity_source="id_token", discovery_url="https://idp.example/.well-known/x")
    with pytest.raises(ValueError, match="may not set"):
        replace(config, extra_authorize_params={"redirect_uri": "https://evil.example/"})
    with pytest.raises(ValueError, match="client_secret"):
        replace(config, client_secret=None)
