"""What DPoP costs a protected server: its CPU per call with a DPoP-bound token against a bearer token.

One mcp-resolve server (`echo`, protected by a JWTVerifier with a fixed RS256
key, DPoP accepted, replay claims in memory) under uvicorn in its own
process; one driver sends raw 2026-07-28 `tools/call` requests over one
HTTP connection, in blocks that alternate bearer and DPoP within each
repetition, and reads the server's CPU clock around every block. The DPoP
calls carry a fresh ES256 proof each (made by our client's `DPoPKey`, in the
driver, so its cost is not the server's). The row printed is the server's
CPU per call for each, and the difference: what checking a proof (its
signature, the key thumbprint, the claims, the replay claim) adds.

    python benchmarks/dpop.py [--calls N] [--reps N] [--quick] [--out DIR]

`make bench` runs it after benchmarks/run.py. Compare the two figures of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from benchmarks import harness

ISSUER = "https://issuer.bench"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


def serve(port: int) -> None:
    """The server process: our protected echo under uvicorn (httptools on uvloop, as in run.py)."""
    import uvicorn

    from mcp_resolve import MCPServer
    from mcp_resolve.auth import AuthSettings, JWTVerifier

    resource = f"http://127.0.0.1:{port}/mcp"
    mcp = MCPServer(
        "dpop-bench",
        token_verifier=JWTVerifier(public_key=os.environ["BENCH_ISSUER_PEM"]),
        auth=AuthSettings(issuer_url=ISSUER, resource_server_url=resource),
    )

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    uvicorn.run(
        mcp.streamable_http_app(),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        loop="uvloop",
        http="httptools",
    )


def _token(signer: Any, resource: str, jkt: str | None) -> str:
    from joserfc import jwt

    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "bench",
        "aud": resource,
        "client_id": "bench",
        "iat": now,
    }
    claims["exp"] = now + 3600
    if jkt is not None:
        claims["cnf"] = {"jkt": jkt}
    return jwt.encode({"alg": "RS256"}, claims, signer)


def _block(http: httpx.Client, url: str, pid: int, calls: int, token: str, key: Any) -> float:
    """Server CPU seconds per call over `calls` calls (DPoP when `key`, else bearer)."""
    scheme = "DPoP" if key is not None else "Bearer"
    headers = {**HEADERS, "authorization": f"{scheme} {token}"}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": META},
    }
    before = harness.process_cpu(pid)
    for _ in range(calls):
        if key is not None:
            headers["dpop"] = key.proof("POST", url, access_token=token)
        response = http.post(url, json=body, headers=headers)
        if response.status_code != 200 or '"hi"' not in response.text:
            raise RuntimeError(f"{scheme} call refused: {response.status_code} {response.text[:200]}")
    return (harness.process_cpu(pid) - before) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per block (default 2000)")
    parser.add_argument("--reps", type=int, default=3, help="bearer/DPoP block pairs (default 3)")
    parser.add_argument(
        "--quick", action="store_true", help="a few calls: proves it runs; figures mean nothing"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    options = parser.parse_args(argv)
    calls, reps = (20, 1) if options.quick else (options.calls, options.reps)
    from joserfc.jwk import RSAKey

    from mcp_resolve.client.auth.dpop import DPoPKey

    signer = RSAKey.generate_key(2048)
    port = harness.free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "BENCH_ISSUER_PEM": signer.as_pem(private=False).decode()}
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "serve", str(port)],
        cwd=harness.ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    samples: dict[str, list[float]] = {"bearer": [], "dpop": []}
    try:
        _wait(url, process)
        key = DPoPKey.generate()
        bearer, bound = _token(signer, url, None), _token(signer, url, key.thumbprint)
        with httpx.Client(timeout=30) as http:
            _block(http, url, process.pid, min(calls, 50), bearer, None)  # warm both paths once
            _block(http, url, process.pid, min(calls, 50), bound, key)
            for _ in range(reps):
                samples["bearer"].append(_block(http, url, process.pid, calls, bearer, None))
                samples["dpop"].append(_block(http, url, process.pid, calls, bound, key))
    finally:
        process.terminate()
        process.wait(10)
    medians = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    print(
        f"DPoP, server CPU per call (http 2026-07-28, W1 echo, {calls} calls x {reps}): "
        f"bearer {medians['bearer']:.0f} us, DPoP {medians['dpop']:.0f} us, "
        f"+{medians['dpop'] - medians['bearer']:.0f} us ({medians['dpop'] / medians['bearer']:.2f}x)"
    )
    options.out.mkdir(parents=True, exist_ok=True)
    result = options.out / f"dpop-{time.strftime('%Y%m%dT%H%M%S')}.json"
    result.write_text(
        json.dumps({"calls": calls, "reps": reps, "cpu_s_per_call": samples, "median_us": medians})
    )
    print(f"written to {result}")
    return 0


def _wait(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the DPoP bench server exited with {process.returncode}")
        try:
            httpx.post(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("the DPoP bench server never answered")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
