"""Run the official MCP conformance harness against examples/everything (server) and conformance/client.py.

Starts the everything server on a free loopback port, waits until it answers
a real `server/discover`, runs every leg one after another, stops the server
and prints, per leg, the scenarios and checks that passed. Exits non-zero if
any leg fails, if the server died while being tested, or if a leg produced no
checks at all (a dead URL still scores a few "passes", so counts are only
trusted from a server that answered).

    python conformance/run.py [--keep DIR] [--leg NAME ...] [--proxied]

With --proxied the everything server is served through `mcp-resolve proxy`
(its HTTP endpoint as the target) and the `--suite all` legs run at the proxy:
whatever the server passes, its proxy must pass too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NODE = HERE / "node_modules" / ".bin" / "node"
HARNESS = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SERVER = ROOT / "examples" / "everything" / "server.py"
CLIENT = HERE / "client.py"
MODERN, LEGACY = "2026-07-28", "2025-11-25"

AUTH_SCENARIOS_2025 = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
)
"""The OAuth client scenarios both revisions score."""
CLIENT_SCENARIOS = {
    # Every client scenario the 2026-07-28 requirements score.
    MODERN: (
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
        *AUTH_SCENARIOS_2025,
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
    ),
    # Every client scenario the 2025-11-25 requirements score.
    LEGACY: (
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        *AUTH_SCENARIOS_2025,
    ),
}
CLIENT_NOT_SCORED = {
    "json-schema-2020-12-preservation": "added after release",
    "auth/client-credentials-jwt": "extension",
    "auth/client-credentials-basic": "extension",
    "auth/enterprise-managed-authorization": "extension",
    "auth/dpop": "extension",
    "auth/dpop-nonce": "extension",
    "auth/wif-jwt-bearer": "extension",
}
"""Client scenarios both requirement sets run without scoring; run here too, reported apart."""
CLIENT_NOT_IMPLEMENTED: frozenset[str] = frozenset()
"""Unscored extensions our Client does not implement: they fail, and are reported as not implemented
(not as failures) so that a good run does not read as a broken one. Any other unscored scenario that
fails is printed as failing."""
LEG_TIMEOUT = 240.0
_RESULT_DIR = re.compile(r"^(?:server-)?(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
_NOT_SCORED = re.compile(r"^\s+[✓✗] (?P<scenario>\S+) \((?P<why>[^)]+)\)$")


@dataclass
class Leg:
    name: str
    args: list[str]
    strict: bool = False
    """Warnings fail the leg too (the harness's rule for --expected-failures runs)."""
    runs: list[list[str]] = field(default_factory=list)
    """Several harness runs forming one leg (client scenarios run one at a time)."""
    not_scored: dict[str, str] = field(default_factory=dict)
    not_implemented: frozenset[str] = frozenset()
    """Unscored scenarios expected to fail because we do not implement them: labelled so, not as failures."""
    enforced: dict[str, int] = field(default_factory=dict)
    """Unscored scenarios held to passing anyway: name prefix -> how many of them must have run."""


ENFORCED_EXTENSIONS = {"tasks-": 10}
"""The tasks extension is implemented (docs/tasks.md): the harness runs its 10 scenarios unscored in
--requirements 2026-07-28, and a failure there, or fewer of them, fails the leg all the same."""
ENFORCED_CLIENT_EXTENSIONS = {
    "auth/dpop": 2,
    "auth/enterprise-managed-authorization": 1,
    "auth/wif-jwt-bearer": 1,
}
"""DPoP (docs/auth.md, "Sender-constrained tokens"), enterprise sign-in and workload identity ("Enterprise
sign-in") are implemented: the harness runs them unscored in both client legs, and a failure there, or
fewer of them, fails the leg all the same."""


@dataclass
class Tally:
    scenarios: dict[str, dict[str, int]] = field(default_factory=dict)
    exit_codes: list[int] = field(default_factory=list)
    not_scored: dict[str, str] = field(default_factory=dict)
    """Requirements runs also run scenarios the revision does not score (name -> why); the harness ignores them."""

    def add(self, scenario: str, checks: list[dict[str, object]]) -> None:
        counts = self.scenarios.setdefault(scenario, {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0})
        for check in checks:
            status = str(check.get("status"))
            if status in counts:
                counts[status] += 1

    def scored(self) -> dict[str, dict[str, int]]:
        return {name: counts for name, counts in self.scenarios.items() if name not in self.not_scored}

    def passed(self, strict: bool, scenarios: dict[str, dict[str, int]]) -> list[str]:
        return [
            name
            for name, counts in scenarios.items()
            if counts["FAILURE"] == 0 and not (strict and counts["WARNING"])
        ]


def _total(scenarios: dict[str, dict[str, int]], status: str) -> int:
    return sum(counts[status] for counts in scenarios.values())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def discover(url: str) -> dict[str, object] | None:
    """One real 2026-07-28 request; its result, or None if the server does not answer it properly."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "conformance-runner", "version": "1"},
            }
        },
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "server/discover",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    for line in text.splitlines():
        payload = line.removeprefix("data:").strip()
        if payload.startswith("{"):
            result = json.loads(payload).get("result")
            if isinstance(result, dict) and result.get("supportedVersions"):
                return result
    return None


def start_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    url = f"http://127.0.0.1:{port}/mcp"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, str(SERVER), "--port", str(port)],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the everything server exited with {process.returncode}; see {log}")
        if discover(url) is not None:
            return process
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the everything server did not answer server/discover at {url} within 30 s; see {log}")


def start_proxy(target: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`mcp-resolve proxy --http` in front of `target` on `port`, once it answers `server/discover`."""
    url = f"http://127.0.0.1:{port}/mcp"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_resolve", "proxy", "--http", "--port", str(port), target],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the proxy exited with {process.returncode}; see {log}")
        if discover(url) is not None:
            return process
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the proxy did not answer server/discover at {url} within 30 s; see {log}")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def legs(url: str) -> list[Leg]:
    baseline = {version: HERE / f"expected-failures-{version}.yaml" for version in (MODERN, LEGACY)}
    client = f"{sys.executable} {CLIENT}"
    if " " in sys.executable or " " in str(CLIENT):
        raise SystemExit("the harness splits --command on spaces: run from a path without spaces")
    found = [
        Leg(
            f"server --requirements {v}",
            ["server", "--url", url, "--requirements", v],
            enforced=dict(ENFORCED_EXTENSIONS) if v == MODERN else {},
        )
        for v in (MODERN, LEGACY)
    ]
    found += [
        Leg(
            f"server --suite all --spec-version {v}",
            [
                "server",
                "--url",
                url,
                "--suite",
                "all",
                "--spec-version",
                v,
                "--expected-failures",
                str(baseline[v]),
            ],
            strict=True,
        )
        for v in (MODERN, LEGACY)
    ]
    for version, scenarios in CLIENT_SCENARIOS.items():
        leg = Leg(
            f"client {version}",
            [],
            strict=True,
            not_scored=dict(CLIENT_NOT_SCORED),
            not_implemented=CLIENT_NOT_IMPLEMENTED,
            enforced=dict(ENFORCED_CLIENT_EXTENSIONS),
        )
        # Extensions are on no spec timeline: a lone --scenario runs them only with --force (the
        # requirements runs force them to the revision's wire the same way).
        leg.runs = [
            ["client", "--command", client, "--scenario", name, "--spec-version", version]
            + (["--force"] if CLIENT_NOT_SCORED.get(name) == "extension" else [])
            for name in (*scenarios, *CLIENT_NOT_SCORED)
        ]
        found.append(leg)
    return found


def run_leg(leg: Leg, out: Path, server: subprocess.Popen[bytes] | None) -> Tally:
    tally = Tally(not_scored=dict(leg.not_scored))
    for index, args in enumerate(leg.runs or [leg.args]):
        results = out / f"run-{index}"
        command = [str(NODE), str(HARNESS), *args, "-o", str(results)]
        log_path = out / f"run-{index}.log"
        with log_path.open("wb") as log:
            try:
                completed = subprocess.run(
                    command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=LEG_TIMEOUT
                )
                code = completed.returncode
            except subprocess.TimeoutExpired:
                code = -1
        scenario = args[args.index("--scenario") + 1] if "--scenario" in args else None
        if scenario not in leg.not_scored:
            tally.exit_codes.append(code)
        read_run(tally, log_path, results)
    if server is not None and server.poll() is not None:
        tally.exit_codes.append(-2)
    return tally


def read_run(tally: Tally, log_path: Path, results: Path) -> None:
    """Add one harness run's output to the tally: the unscored scenarios its log names, and every
    scenario's checks.json under `results`."""
    for line in log_path.read_text(errors="replace").splitlines():
        found = _NOT_SCORED.match(line)
        if found:
            tally.not_scored[found.group("scenario")] = found.group("why")
    for checks_file in sorted(results.rglob("checks.json")):
        match = _RESULT_DIR.match(checks_file.parent.name)
        scenario = match.group("scenario") if match else checks_file.parent.name
        if checks_file.parent.parent != results:  # auth/x-<ts> nests one level deeper
            scenario = f"{checks_file.parent.parent.name}/{scenario}"
        tally.add(scenario, json.loads(checks_file.read_text()))


def _summary(scenarios: dict[str, dict[str, int]], passed: list[str]) -> str:
    judged = sum(_total(scenarios, status) for status in ("SUCCESS", "FAILURE", "WARNING"))
    return (
        f"{len(passed)}/{len(scenarios)} scenarios passed; {_total(scenarios, 'SUCCESS')}/{judged} checks "
        f"passed, {_total(scenarios, 'FAILURE')} failed, {_total(scenarios, 'WARNING')} warnings"
    )


def _held(tally: Tally, prefix: str) -> tuple[list[str], list[str]]:
    """The scenarios named `prefix`* that ran, and those of them that passed (warnings allowed)."""
    run = {name: counts for name, counts in tally.scenarios.items() if name.startswith(prefix)}
    return list(run), tally.passed(False, run)


def _unscored(tally: Tally, not_implemented: frozenset[str]) -> list[str]:
    """The scenarios the harness ran without scoring: how many passed, then those that did not,
    split into what we knowingly do not implement and what fails although we do."""
    extra = {name: counts for name, counts in tally.scenarios.items() if name in tally.not_scored}
    passing = tally.passed(False, extra)
    absent = [name for name in extra if name not in passing and name in not_implemented]
    failing = [name for name in extra if name not in passing and name not in not_implemented]
    checks = _total({name: extra[name] for name in passing}, "SUCCESS")
    lines = [
        f"      not scored by the harness (no effect on PASS/FAIL): {len(passing)}/{len(extra)} scenarios "
        f"passed ({checks} checks)"
    ]
    if absent:
        expected = _total({name: extra[name] for name in absent}, "FAILURE")
        lines.append(
            f"        not implemented here, failing as expected ({expected} checks): "
            + ", ".join(f"{name} ({tally.not_scored[name]})" for name in absent)
        )
    for name in failing:
        counts = extra[name]
        lines.append(
            f"        unscored but failing: {name} ({tally.not_scored[name]}): "
            f"{counts['FAILURE']} checks failed, {counts['WARNING']} warnings"
        )
    return lines


def summarize(leg: Leg, tally: Tally, out: Path) -> tuple[bool, list[str]]:
    """The leg's verdict and the lines that report it: first the scored verdict, which alone (with
    run.py's own held-to-passing rule) decides PASS or FAIL, then the unscored scenarios, labelled."""
    scored = tally.scored()
    passed = tally.passed(leg.strict, scored)
    ok = bool(scored) and all(code == 0 for code in tally.exit_codes) and len(passed) == len(scored)
    held = {prefix: _held(tally, prefix) for prefix in leg.enforced}
    ok = ok and all(len(run) >= leg.enforced[prefix] and run == good for prefix, (run, good) in held.items())
    lines = [f"{'PASS' if ok else 'FAIL'}  {leg.name}, scored: {_summary(scored, passed)}"]
    for name, counts in scored.items():
        if name not in passed:
            lines.append(f"        {name}: {counts['FAILURE']} failed, {counts['WARNING']} warnings")
    if tally.not_scored:
        lines += _unscored(tally, leg.not_implemented)
    for prefix, (run, good) in held.items():
        scenarios = {name: tally.scenarios[name] for name in run}
        lines.append(
            f"      unscored but held to passing by run.py ({prefix}*, {leg.enforced[prefix]} expected): "
            f"{_summary(scenarios, good)}"
        )
    if -2 in tally.exit_codes:
        lines.append("        the everything server died during this leg")
    elif not ok:
        lines.append(f"        harness output: {out}")
    return ok, lines


def report(leg: Leg, tally: Tally, out: Path) -> bool:
    ok, lines = summarize(leg, tally, out)
    print("\n".join(lines))
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--keep", type=Path, help="write harness output here (default: a temporary directory)"
    )
    parser.add_argument("--leg", action="append", help="run only legs whose name contains this text")
    parser.add_argument(
        "--proxied",
        action="store_true",
        help="serve the everything server through `mcp-resolve proxy` and run the --suite all legs at the proxy",
    )
    options = parser.parse_args()
    for needed in (NODE, HARNESS):
        if not needed.exists():
            raise SystemExit(f"missing {needed}: run `npm ci` in {HERE}")
    work = options.keep or Path(tempfile.mkdtemp(prefix="mcp-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    started = time.monotonic()
    server = start_server(port, work / "server.log")
    proxy = None
    tested = url
    all_ok = True
    try:
        print(f"everything server answering at {url}")
        if options.proxied:
            proxy_port = free_port()
            proxy = start_proxy(url, proxy_port, work / "proxy.log")
            tested = f"http://127.0.0.1:{proxy_port}/mcp"
            print(f"mcp-resolve proxy of it answering at {tested}")
        for index, leg in enumerate(legs(tested)):
            if options.leg and not any(text in leg.name for text in options.leg):
                continue
            if options.proxied and "--suite all" not in leg.name:
                continue
            out = work / f"leg-{index}"
            out.mkdir(exist_ok=True)
            all_ok &= report(leg, run_leg(leg, out, server if leg.args else None), out)
        if server.poll() is not None or discover(url) is None:
            print("FAIL  the everything server stopped answering")
            all_ok = False
    finally:
        if proxy is not None:
            stop_server(proxy)
        stop_server(server)
    print(f"{'all legs passed' if all_ok else 'conformance FAILED'} in {time.monotonic() - started:.0f} s")
    if all_ok and options.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
