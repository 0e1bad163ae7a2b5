"""conformance/run.py's report: the scored verdict first, unscored scenarios labelled apart.

The harness itself is not run here (it takes minutes and Node; `make conformance` runs it). These
tests feed `read_run` the harness's own output layout (a run log naming the unscored scenarios, one
`checks.json` per scenario) and check what `summarize` says about it: a run whose only failures are
extensions our Client does not implement is a PASS that says so, without a "30 failed" beside it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", ROOT / "conformance" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def harness_run(where: Path, results: dict[str, list[str]], unscored: dict[str, str]) -> tuple[Path, Path]:
    """A harness run's log and results directory: `results` maps a scenario to its checks' statuses."""
    out = where / "run-0"
    for index, (scenario, statuses) in enumerate(results.items()):
        folder = out / f"{scenario}-2026-11-26T20-03-{index:02d}-000Z"
        folder.mkdir(parents=True)
        checks = [{"id": f"check-{n}", "name": "c", "status": status} for n, status in enumerate(statuses)]
        (folder / "checks.json").write_text(json.dumps(checks))
    log = where / "run-0.log"
    log.write_text("".join(f"  ✗ {name} ({why})\n" for name, why in unscored.items()))
    return log, out


def client_leg(run: ModuleType) -> Any:
    (leg,) = [leg for leg in run.legs("http://127.0.0.1:1/mcp") if leg.name == "client 2026-07-28"]
    return leg


def tally_of(run: ModuleType, leg: Any, tmp_path: Path, results: dict[str, list[str]]) -> Any:
    tally = run.Tally(not_scored=dict(leg.not_scored))
    log, out = harness_run(tmp_path, results, {"auth/dpop": "extension"})
    run.read_run(tally, log, out)
    tally.exit_codes.append(0)
    return tally


SCORED_GOOD = {"tools_call": ["SUCCESS"] * 4, "auth/metadata-default": ["SUCCESS"] * 12}
DPOP_GOOD = {"auth/dpop": ["SUCCESS"] * 13, "auth/dpop-nonce": ["SUCCESS"] * 15}
ENTERPRISE_GOOD = {
    "auth/enterprise-managed-authorization": ["SUCCESS"] * 8,
    "auth/wif-jwt-bearer": ["SUCCESS"] * 7,
}
IMPLEMENTED_GOOD = {**DPOP_GOOD, **ENTERPRISE_GOOD}
"""Unscored, but implemented: run.py holds both client legs to them passing."""


def test_unimplemented_extensions_do_not_read_as_failures(run: ModuleType, tmp_path: Path) -> None:
    """Every unscored extension is implemented today; the label stays for the next one the harness adds."""
    assert not run.CLIENT_NOT_IMPLEMENTED
    leg = dataclasses.replace(
        client_leg(run),
        not_implemented=frozenset({"auth/wif-jwt-bearer"}),
        enforced={"auth/dpop": 2, "auth/enterprise-managed-authorization": 1},
    )
    results = {
        **SCORED_GOOD,
        **DPOP_GOOD,
        **ENTERPRISE_GOOD,
        "json-schema-2020-12-preservation": ["SUCCESS"] * 3,
        "auth/wif-jwt-bearer": ["FAILURE"] * 15,
    }
    ok, lines = run.summarize(leg, tally_of(run, leg, tmp_path, results), tmp_path)
    assert ok
    assert lines[0] == (
        "PASS  client 2026-07-28, scored: 2/2 scenarios passed; 16/16 checks passed, 0 failed, 0 warnings"
    )
    assert (
        lines[2]
        == "        not implemented here, failing as expected (15 checks): auth/wif-jwt-bearer (extension)"
    )
    assert not any("15 failed" in line for line in lines)


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_a_failing_or_missing_enterprise_scenario_fails_a_client_leg(
    run: ModuleType, tmp_path: Path, version: str
) -> None:
    """DPoP, enterprise sign-in and workload identity are implemented: run.py holds both client legs to them."""
    (leg,) = [leg for leg in run.legs("http://127.0.0.1:1/mcp") if leg.name == f"client {version}"]
    failing = {**SCORED_GOOD, **IMPLEMENTED_GOOD, "auth/wif-jwt-bearer": ["SUCCESS", "FAILURE"]}
    ok, lines = run.summarize(leg, tally_of(run, leg, tmp_path / "failing", failing), tmp_path)
    assert not ok
    assert (
        "        unscored but failing: auth/wif-jwt-bearer (extension): 1 checks failed, 0 warnings" in lines
    )
    missing = {**SCORED_GOOD, **DPOP_GOOD, "auth/wif-jwt-bearer": ENTERPRISE_GOOD["auth/wif-jwt-bearer"]}
    ok, _lines = run.summarize(leg, tally_of(run, leg, tmp_path / "missing", missing), tmp_path)
    assert not ok
    failing_dpop = {**SCORED_GOOD, **IMPLEMENTED_GOOD, "auth/dpop-nonce": ["SUCCESS", "FAILURE"]}
    ok, lines = run.summarize(leg, tally_of(run, leg, tmp_path / "failing-dpop", failing_dpop), tmp_path)
    assert not ok
    assert "        unscored but failing: auth/dpop-nonce (extension): 1 checks failed, 0 warnings" in lines
    missing_dpop = {**SCORED_GOOD, **ENTERPRISE_GOOD, "auth/dpop": DPOP_GOOD["auth/dpop"]}
    ok, _lines = run.summarize(leg, tally_of(run, leg, tmp_path / "missing-dpop", missing_dpop), tmp_path)
    assert not ok


def test_an_unscored_scenario_we_implement_is_still_shown_failing(run: ModuleType, tmp_path: Path) -> None:
    leg = client_leg(run)
    results = {
        **SCORED_GOOD,
        **IMPLEMENTED_GOOD,
        "json-schema-2020-12-preservation": ["SUCCESS", "FAILURE", "WARNING"],
    }
    ok, lines = run.summarize(leg, tally_of(run, leg, tmp_path, results), tmp_path)
    assert ok  # unscored: the verdict is the scored one, as before
    assert (
        "        unscored but failing: json-schema-2020-12-preservation (added after release): "
        "1 checks failed, 1 warnings"
    ) in lines


def test_a_scored_failure_fails_the_leg_and_is_named(run: ModuleType, tmp_path: Path) -> None:
    leg = client_leg(run)
    results = {**SCORED_GOOD, **IMPLEMENTED_GOOD, "tools_call": ["SUCCESS", "FAILURE"]}
    ok, lines = run.summarize(leg, tally_of(run, leg, tmp_path, results), tmp_path)
    assert not ok
    assert lines[0].startswith(
        "FAIL  client 2026-07-28, scored: 1/2 scenarios passed; 13/14 checks passed, 1 failed"
    )
    assert "        tools_call: 1 failed, 0 warnings" in lines
    assert lines[-1] == f"        harness output: {tmp_path}"
