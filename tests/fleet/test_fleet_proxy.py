"""The OAuth proxy in a fleet: two workers behind nginx (docs/deploy/nginx.conf), one Redis, a real upstream.

Every part is a separate real process: oidc-provider as a Google-like upstream
(tests/upstream_helpers.py), redis-server, two `mcp-resolve run
tests/servers/fleet_proxy_desk.py --http` workers configured only from the
environment (the same on both: base URL = nginx's, store = the Redis URL, one
encryption key), and nginx in front.

The person's browser and the client's token requests go to the public origin
(nginx's URL, which is also the issuer), but a transport sends each request
for that origin to worker 1, then worker 2, then worker 1 ... so every step of
a sign-in (register, authorize, the consent page, its form, the upstream's
callback, the token, the refresh) is served by the other worker than the step
before it. Then the login through nginx itself with our Client, and Redis
stopped in the middle of a sign-in: every step refuses clearly and at once,
never with a token, a trace or a secret, and the sign-in goes on once Redis is
back.
"""

from __future__ import annotations

import base64
import hashlib
import queue
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import anyio
import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from conftest import SERVERS
from fleet_helpers import Nginx, Worker, wait_healthy
from http_helpers import free_port
from mcp_resolve import Client
from mcp_resolve.client.auth import OAuth
from proxy_helpers import READ, WRITE, ConsentForm, ConsentingBrowser
from redis_helpers import RedisServer
from upstream_helpers import Upstream, upstream_provider

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TARGET = SERVERS / "fleet_proxy_desk.py"
ENCRYPTION_KEY = "fleet-proxy-key-" + "e" * 40
REDIRECT = "http://127.0.0.1:47823/callback"
TRACE_MARKERS = ("Traceback", 'File "', "StoreUnavailable", "redis", "Redis")


def _text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


# ---------------------------------------------------------------------------------------------
# The fleet
# ---------------------------------------------------------------------------------------------


@dataclass
class Fleet:
    upstream: Upstream
    redis: RedisServer
    workers: list[Worker]
    nginx: Nginx

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.nginx.port}"

    def worker_base(self, index: int) -> str:
        return f"http://127.0.0.1:{self.workers[index].port}"

    def secrets(self) -> list[str]:
        return [ENCRYPTION_KEY, self.upstream.client_secret]


@contextmanager
def upstream_in_a_thread() -> Iterator[Upstream]:
    """`upstream_provider("oidc")` on an event loop of its own, for a module-wide fixture."""
    ready: queue.Queue[Upstream | BaseException] = queue.Queue()
    stop = threading.Event()

    async def serve() -> None:
        try:
            async with upstream_provider("oidc") as upstream:
                ready.put(upstream)
                while not stop.is_set():
                    await anyio.sleep(0.05)
        except BaseException as exc:
            ready.put(exc)
            raise

    thread = threading.Thread(target=anyio.run, args=(serve,), daemon=True)
    thread.start()
    started = ready.get(timeout=60)
    if isinstance(started, BaseException):
        raise started
    try:
        yield started
    finally:
        stop.set()
        thread.join(15)


def _wait_for(worker: Worker, issuer: str) -> None:
    """Healthy, and ours: its process is alive and it announces the fleet's issuer."""
    wait_healthy(f"http://127.0.0.1:{worker.port}/health", worker.process)
    metadata = httpx.get(f"http://127.0.0.1:{worker.port}/.well-known/oauth-authorization-server", timeout=5)
    if worker.process.poll() is not None or metadata.json().get("issuer") != issuer:
        raise RuntimeError(f"{worker.name} on port {worker.port} is not ours\n{worker.log()}")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    directory = tmp_path_factory.mktemp("proxy-fleet")
    with upstream_in_a_thread() as upstream:
        redis = RedisServer(extra=("--appendonly", "yes", "--appendfsync", "always"))
        redis.start_fresh()
        public = free_port()
        issuer = f"http://127.0.0.1:{public}"
        env = {
            "FLEET_PROXY_DISCOVERY_URL": upstream.discovery_url,
            "FLEET_PROXY_CLIENT_ID": upstream.client_id,
            "FLEET_PROXY_CLIENT_SECRET": upstream.client_secret,
            "FLEET_PROXY_BASE_URL": issuer,
            "FLEET_PROXY_STORE": redis.url,
            "FLEET_PROXY_ENCRYPTION_KEY": ENCRYPTION_KEY,
            "FLEET_PROXY_USERINFO_URL": upstream.endpoints["userinfo_endpoint"],
            "MCP_RESOLVE_REDIS_URL": redis.url,
            "MCP_RESOLVE_STATE_KEYS": "fleet-proxy-state-" + "s" * 40,
        }
        workers = [Worker(TARGET, env, directory, f"worker{i}") for i in (1, 2)]
        nginx = None
        try:
            for worker in workers:
                _wait_for(worker, issuer)
            nginx = Nginx([worker.port for worker in workers], port=public)
            yield Fleet(upstream, redis, workers, nginx)
        finally:
            if nginx is not None:
                nginx.close()
            for worker in workers:
                worker.stop()
            redis.close()


class Alternating(httpx.AsyncBaseTransport):
    """Sends each request for the public origin to the next worker in turn (1, 2, 1, ...), unchanged
    otherwise (its Host header still names the public origin, as behind nginx); anything else as is."""

    def __init__(self, fleet: Fleet) -> None:
        self.public = urlsplit(fleet.base).netloc
        self.ports = [worker.port for worker in fleet.workers]
        self.served: list[tuple[str, str, int]] = []
        """(method, path, worker index) of every request sent to a worker, in order."""
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.netloc.decode() == self.public:
            index = len(self.served) % len(self.ports)
            self.served.append((request.method, request.url.path, index))
            request.url = request.url.copy_with(port=self.ports[index])
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:  # shared by several clients: closed once, by its owner
        pass

    async def close_for_good(self) -> None:
        await self.inner.aclose()


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    return verifier, challenge.decode()


async def _register(http: httpx.AsyncClient, base: str) -> str:
    answer = await http.post(
        f"{base}/register",
        json={
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": "Fleet client",
        },
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def _authorize_url(base: str, client_id: str, challenge: str, state: str) -> str:
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "scope": f"{READ} {WRITE}",
            "resource": f"{base}/mcp",
        }
    )
    return f"{base}/authorize?{query}"


async def _token(http: httpx.AsyncClient, base: str, **form: str) -> httpx.Response:
    return await http.post(f"{base}/token", data=form)


# ---------------------------------------------------------------------------------------------
# (a) every step on the other worker
# ---------------------------------------------------------------------------------------------


async def test_a_sign_in_whose_steps_alternate_between_workers(fleet: Fleet) -> None:
    base = fleet.base
    transport = Alternating(fleet)
    try:
        async with httpx.AsyncClient(transport=transport, timeout=30) as http:
            client_id = await _register(http, base)
            verifier, challenge = _pkce()
            browser = ConsentingBrowser(REDIRECT, transport=transport)
            back = await browser.visit(_authorize_url(base, client_id, challenge, "s-1"))
            query = {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}
            assert query["state"] == "s-1" and query["iss"] == base and browser.consent_pages == 1
            issued = await _token(
                http,
                base,
                grant_type="authorization_code",
                code=query["code"],
                redirect_uri=REDIRECT,
                client_id=client_id,
                code_verifier=verifier,
                resource=f"{base}/mcp",
            )
            assert issued.status_code == 200, issued.text
            tokens = issued.json()
            refreshed = await _token(
                http,
                base,
                grant_type="refresh_token",
                refresh_token=tokens["refresh_token"],
                client_id=client_id,
            )
            assert refreshed.status_code == 200, refreshed.text
            fresh = refreshed.json()
            ours = [(method, path) for method, path, _ in transport.served]
            assert ours == [
                ("POST", "/register"),
                ("GET", "/authorize"),
                ("GET", "/consent"),
                ("POST", "/consent"),
                ("GET", "/auth/callback"),
                ("POST", "/token"),
                ("POST", "/token"),
            ], transport.served
            assert [index for *_, index in transport.served] == [0, 1, 0, 1, 0, 1, 0]

            # The access token worker 2 signed works on both workers and through nginx; each worker
            # reads the person's upstream token (sealed in Redis by worker 1, at the callback).
            for access in (tokens["access_token"], fresh["access_token"]):
                async with Client(fleet.nginx.url, auth=access) as client:
                    for _ in range(2):
                        assert _text(await client.call_tool("whoami", {})).startswith("google:alice")
            for index, worker in enumerate(fleet.workers):
                async with Client(worker.url, auth=fresh["access_token"]) as client:
                    assert (await client.call_tool("worker", {})).structured_content == {
                        "result": worker.process.pid
                    }
                    me = _text(await client.call_tool("upstream_me", {}))
                    assert me.startswith("200 ") and "alice" in me, (index, me)

            # A refresh token used twice, the second time on the other worker: the family is revoked
            # fleet-wide, and the access token refreshed from it stops working on both workers.
            reused = await _token(
                http,
                base,
                grant_type="refresh_token",
                refresh_token=tokens["refresh_token"],
                client_id=client_id,
            )
            assert transport.served[-1][2] == 1
            assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
            for worker in fleet.workers:
                answer = await http.post(
                    worker.url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    headers={"Authorization": f"Bearer {fresh['access_token']}"},
                )
                assert answer.status_code == 401, answer.text
    finally:
        await transport.close_for_good()


async def test_both_workers_publish_the_same_keys_and_verify_each_others_tokens(fleet: Fleet) -> None:
    """The signing key of the epoch is made once for the fleet (in Redis); either worker's JWKS
    verifies a token the other one signed."""
    transport = Alternating(fleet)
    try:
        async with httpx.AsyncClient(transport=transport, timeout=30) as http:
            client_id = await _register(http, fleet.base)  # worker 1
            verifier, challenge = _pkce()
            browser = ConsentingBrowser(REDIRECT, transport=transport)
            back = await browser.visit(_authorize_url(fleet.base, client_id, challenge, "s-2"))
            code = parse_qs(urlsplit(back).query)["code"][0]
            issued = await _token(
                http,
                fleet.base,
                grant_type="authorization_code",
                code=code,
                redirect_uri=REDIRECT,
                client_id=client_id,
                code_verifier=verifier,
            )
            assert transport.served[-1] == ("POST", "/token", 1)  # signed by worker 2
            access = issued.json()["access_token"]
        async with httpx.AsyncClient(timeout=10) as plain:
            sets = [(await plain.get(f"{fleet.worker_base(i)}/.well-known/jwks.json")).json() for i in (0, 1)]
        assert sets[0] == sets[1] and sets[0]["keys"]
        verified = jwt.decode(access, KeySet.import_key_set(sets[0]), algorithms=["ES256"])
        assert verified.header["kid"] in {key["kid"] for key in sets[0]["keys"]}
        assert verified.claims["aud"] == f"{fleet.base}/mcp" and verified.claims["iss"] == fleet.base
        async with Client(fleet.workers[0].url, auth=access) as client:  # verified by worker 1
            assert (await client.call_tool("worker", {})).structured_content == {
                "result": fleet.workers[0].process.pid
            }
    finally:
        await transport.close_for_good()


# ---------------------------------------------------------------------------------------------
# (b) the whole sign-in through nginx, with our Client
# ---------------------------------------------------------------------------------------------


async def test_our_client_signs_in_and_refreshes_through_nginx(fleet: Fleet) -> None:
    person = ConsentingBrowser()
    auth = OAuth(redirect_handler=person, callback_handler=person)
    async with Client(fleet.nginx.url, auth=auth) as client:
        answered_by = set()
        for _ in range(4):
            answered_by.add((await client.call_tool("worker", {})).structured_content["result"])
        assert answered_by == {worker.process.pid for worker in fleet.workers}  # round-robin
        assert _text(await client.call_tool("whoami", {})).startswith("google:alice")
        me = _text(await client.call_tool("upstream_me", {}))
        assert me.startswith("200 ") and "alice" in me, me
        assert _text(await client.call_tool("refund", {})) == "refunded for alice"  # a step-up: asked again
        assert person.sign_ins == 2 and person.consent_pages == 2

        auth._tokens[fleet.nginx.url]["access_token"] = "spoiled"  # type: ignore[index]
        assert _text(await client.call_tool("whoami", {})).startswith("google:alice")
        assert person.sign_ins == 2 and person.consent_pages == 2  # refreshed, no new sign-in


# ---------------------------------------------------------------------------------------------
# (c) Redis down in the middle of a sign-in
# ---------------------------------------------------------------------------------------------


def _clean(body: str, fleet: Fleet, *held: str) -> None:
    """No stack trace, no backend detail, no secret and no credential the request carried."""
    for marker in TRACE_MARKERS:
        assert marker not in body, (marker, body[:500])
    for secret in (*fleet.secrets(), *held):
        assert secret not in body, body[:500]
    assert "access_token" not in body and "refresh_token" not in body, body[:500]


async def test_redis_down_mid_sign_in_fails_closed_and_the_sign_in_goes_on_after(fleet: Fleet) -> None:
    base = fleet.base
    async with httpx.AsyncClient(timeout=10, follow_redirects=False) as http:
        # A signed-in client (tokens), and a second sign-in stopped on its consent page.
        client_id = await _register(http, base)
        verifier, challenge = _pkce()
        browser = ConsentingBrowser(REDIRECT)
        back = await browser.visit(_authorize_url(base, client_id, challenge, "s-3"))
        tokens = (
            await _token(
                http,
                base,
                grant_type="authorization_code",
                code=parse_qs(urlsplit(back).query)["code"][0],
                redirect_uri=REDIRECT,
                client_id=client_id,
                code_verifier=verifier,
            )
        ).json()
        verifier, challenge = _pkce()
        authorize = _authorize_url(base, client_id, challenge, "s-4")
        consent = await http.get(authorize)
        assert consent.status_code == 302
        page_url = urljoin(authorize, consent.headers["location"])
        page = await http.get(page_url)
        form = ConsentForm.read(page.text)
        assert form.action and "txn" in form.fields
        txn = form.fields["txn"]
        submit = {**form.fields, "decision": "approve"}
        held = (tokens["access_token"], tokens["refresh_token"], txn, form.fields.get("csrf", "x"))

        fleet.redis.stop(kill=True)
        try:
            for index in (0, 1):
                origin = fleet.worker_base(index)
                with anyio.fail_after(15):  # every refusal comes at once, never a hang
                    answers = {
                        "consent POST": await http.post(origin + form.action, data=submit),
                        "consent GET": await http.get(f"{origin}/consent?{urlencode({'txn': txn})}"),
                        "callback": await http.get(
                            f"{origin}/auth/callback?{urlencode({'state': txn, 'code': 'upstream-code'})}"
                        ),
                        "authorize": await http.get(authorize.replace(base, origin)),
                        "register": await http.post(f"{origin}/register", json={"redirect_uris": [REDIRECT]}),
                        "token": await _token(
                            http,
                            origin,
                            grant_type="refresh_token",
                            refresh_token=tokens["refresh_token"],
                            client_id=client_id,
                        ),
                    }
                    mcp = await http.post(
                        f"{origin}/mcp",
                        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"Authorization": f"Bearer {tokens['access_token']}"},
                    )
                for step, answer in answers.items():
                    assert answer.status_code == 503, (index, step, answer.status_code, answer.text[:300])
                    assert "location" not in answer.headers, (index, step)
                    _clean(answer.text, fleet, *held)
                for page_step in ("consent POST", "consent GET", "callback"):
                    assert "text/html" in answers[page_step].headers["content-type"]
                    assert "try again" in answers[page_step].text.lower()
                for json_step in ("authorize", "register", "token"):
                    assert answers[json_step].json()["error"] == "temporarily_unavailable"
                assert mcp.status_code == 401 and 'error="invalid_token"' in mcp.headers["www-authenticate"]
                _clean(mcp.text, fleet, *held)
        finally:
            fleet.redis.start()

        # Redis is back (with its data): the same form, pressed again, goes on to the upstream, and the
        # sign-in completes; the tokens issued before work again.
        for worker in fleet.workers:  # the workers said what failed (the store), and nothing more
            log = worker.log()
            assert "Traceback" not in log and 'File "' not in log, log[-2000:]
            assert not any(secret in log for secret in (*fleet.secrets(), *held[:2])), log[-2000:]
        approved = await http.post(urljoin(page_url, form.action), data=submit)
        assert approved.status_code == 303, approved.text
        browser.cookies = http.cookies  # the upstream's answer must come back through the approving browser
        back = await browser.visit(approved.headers["location"])
        finished = await _token(
            http,
            base,
            grant_type="authorization_code",
            code=parse_qs(urlsplit(back).query)["code"][0],
            redirect_uri=REDIRECT,
            client_id=client_id,
            code_verifier=verifier,
        )
        assert finished.status_code == 200, finished.text
        for access in (tokens["access_token"], finished.json()["access_token"]):
            async with Client(fleet.nginx.url, auth=access) as client:
                assert _text(await client.call_tool("whoami", {})).startswith("google:alice")
