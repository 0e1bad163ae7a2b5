"""DPoP across a fleet: a proof one worker accepted is refused by every other, once claimed in Redis.

Real processes: redis-server, two `mcp-resolve run --http` workers of
tests/servers/dpop_fleet_desk.py (DPoP required, MCP_RESOLVE_REDIS_URL set,
so the replay store is Redis), and nginx with docs/deploy/nginx.conf in
front. nginx passes `Host` without the port, so the workers know the public
URL from their `resource_server_url` (the URL a proof names).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from conftest import SERVERS
from dpop_helpers import mcp_request, proof
from fleet_helpers import Nginx, Worker, wait_healthy
from http_helpers import free_port
from redis_helpers import RedisServer

pytestmark = pytest.mark.slow

ISSUER = "https://issuer.example"


@dataclass
class DPoPFleet:
    signer: RSAKey
    workers: list[Worker]
    nginx: Nginx
    public_url: str

    def token(self, key: ECKey) -> str:
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "sub": "alice",
            "aud": self.public_url,
            "client_id": "c",
            "iat": now,
            "exp": now + 300,
            "cnf": {"jkt": key.thumbprint()},
        }
        return jwt.encode({"alg": "RS256"}, claims, self.signer)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DPoPFleet]:
    directory: Path = tmp_path_factory.mktemp("dpop-fleet")
    signer = RSAKey.generate_key(2048)
    port = free_port()
    public_url = f"http://127.0.0.1:{port}/mcp"
    redis = RedisServer()
    redis.start_fresh()
    env = {
        "MCP_RESOLVE_REDIS_URL": redis.url,
        "MCP_RESOLVE_STATE_KEYS": "dpop-fleet-key-" + "d" * 40,
        "DPOP_ISSUER_PEM": signer.as_pem(private=False).decode(),
        "DPOP_RESOURCE": public_url,
    }
    workers = [Worker(SERVERS / "dpop_fleet_desk.py", env, directory, f"worker{i}") for i in (1, 2)]
    nginx = None
    try:
        for worker in workers:  # protected: the `worker` tool needs a token, so health is enough here
            wait_healthy(f"http://127.0.0.1:{worker.port}/health", worker.process)
        nginx = Nginx([worker.port for worker in workers], port=port)
        yield DPoPFleet(signer, workers, nginx, public_url)
    finally:
        if nginx is not None:
            nginx.close()
        for worker in workers:
            worker.stop()
        redis.stop()


def test_a_proof_one_worker_accepted_is_refused_by_the_other(fleet: DPoPFleet) -> None:
    """Straight to each worker (no nginx): the proof names the public URL, which both accept."""
    key = ECKey.generate_key("P-256")
    token = fleet.token(key)
    first, second = fleet.workers
    once = proof(key, fleet.public_url, token)
    accepted = httpx.post(first.url, **mcp_request(token, once), timeout=10)
    assert accepted.status_code == 200, accepted.text + first.log()
    replayed = httpx.post(second.url, **mcp_request(token, once), timeout=10)
    assert replayed.status_code == 401, replayed.text
    assert 'error="invalid_dpop_proof"' in replayed.headers["www-authenticate"]
    fresh = httpx.post(second.url, **mcp_request(token, proof(key, fleet.public_url, token)), timeout=10)
    assert fresh.status_code == 200, fresh.text + second.log()


def test_behind_nginx_a_proof_is_good_once_whichever_worker_gets_it(fleet: DPoPFleet) -> None:
    key = ECKey.generate_key("P-256")
    token = fleet.token(key)
    with httpx.Client(timeout=10) as http:
        for _ in range(4):  # nginx spreads these over both workers; each new proof is accepted
            fresh = http.post(fleet.public_url, **mcp_request(token, proof(key, fleet.public_url, token)))
            assert fresh.status_code == 200, fresh.text
        captured = proof(key, fleet.public_url, token)
        assert http.post(fleet.public_url, **mcp_request(token, captured)).status_code == 200
        for _ in range(4):  # replayed to the fleet: refused by every worker it lands on
            replayed = http.post(fleet.public_url, **mcp_request(token, captured))
            assert replayed.status_code == 401
            assert 'error="invalid_dpop_proof"' in replayed.headers["www-authenticate"]
