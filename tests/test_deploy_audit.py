"""deploy/audit.py (the CI dependency audit, run by .ci/audit): verdicts on pip-audit reports.

The reports are built here in pip-audit's JSON shape (``pip-audit -f json``); the "all skipped"
one is what pip-audit writes when its vulnerability service cannot be asked about any package.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
AUDIT = ROOT / "deploy" / "audit.py"


def load_audit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("newscrawl_deploy_audit", AUDIT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while building classes
    spec.loader.exec_module(module)
    return module


audit = load_audit()

SKIP = "Dependency not found on PyPI and could not be audited: {name} ({version})"


def dep(name: str, version: str, *vulns: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "version": version, "vulns": list(vulns)}


def skipped(name: str, version: str) -> dict[str, Any]:
    return {"name": name, "skip_reason": SKIP.format(name=name, version=version)}


def vuln(vid: str, fix: list[str], aliases: list[str] | None = None) -> dict[str, Any]:
    return {"id": vid, "fix_versions": fix, "aliases": aliases or [], "description": "..."}


CLEAN = {
    "dependencies": [dep("scrapy", "2.19.0"), dep("redis", "8.1.0"), skipped("newscrawl", "0.1")],
    "fixes": [],
}
VULNERABLE = {
    "dependencies": [
        dep("scrapy", "2.13.0", vuln("GHSA-cwxj-rr6w-m6w7", ["2.14.2"], ["CVE-2026-105782"])),
        dep("redis", "8.1.0"),
    ],
    "fixes": [],
}
ALL_SKIPPED = {
    "dependencies": [skipped("scrapy", "2.19.0"), skipped("redis", "8.1.0")],
    "fixes": [],
}


def test_clean_report_is_ok_and_names_what_was_not_audited() -> None:
    verdict = audit.classify(CLEAN)
    assert verdict.status == "ok"
    assert verdict.audited == 2
    assert verdict.skipped == ["newscrawl"]


def test_vulnerability_fails_with_id_and_fix() -> None:
    verdict = audit.classify(VULNERABLE)
    assert verdict.status == "vulnerable"
    [finding] = verdict.findings
    assert (finding.package, finding.version, finding.vuln_id) == (
        "scrapy",
        "2.13.0",
        "GHSA-cwxj-rr6w-m6w7",
    )
    assert "fixed in: 2.14.2" in finding.line()


@pytest.mark.parametrize("ignored", ["GHSA-cwxj-rr6w-m6w7", "CVE-2026-105782"])
def test_ignored_advisory_by_id_or_alias(ignored: str) -> None:
    assert audit.classify(VULNERABLE, {ignored}).status == "ok"


def test_everything_skipped_means_not_audited_not_clean() -> None:
    # pip-audit says "No known vulnerabilities found" and exits 0 here; we must not.
    verdict = audit.classify(ALL_SKIPPED)
    assert verdict.status == "unreachable"
    assert verdict.audited == 0
    assert audit.classify(None).status == "unreachable"
    assert audit.classify({"dependencies": []}).status == "unreachable"


def test_network_errors_are_told_from_broken_tool() -> None:
    osv_down = (
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.osv.dev', port=443): "
        "Max retries exceeded with url: /v1/query (Caused by NameResolutionError(...))"
    )
    assert audit.is_network_error(osv_down)
    assert not audit.is_network_error("pip-audit: error: unrecognized arguments: --service")


def test_ignore_file_reading(tmp_path: Path) -> None:
    path = tmp_path / "ignore.txt"
    path.write_text("# header\n\nGHSA-aaaa-bbbb-cccc  # does not apply: ...\n  PYSEC-1 \n")
    assert audit.read_ignore_file(path) == {"GHSA-aaaa-bbbb-cccc", "PYSEC-1"}
    assert audit.read_ignore_file(tmp_path / "missing.txt") == set()


def test_shipped_ignore_file_gives_a_reason_for_every_entry() -> None:
    for raw in (ROOT / "deploy" / "audit-ignore.txt").read_text(encoding="utf-8").splitlines():
        if raw.split("#", 1)[0].strip():
            assert "#" in raw and raw.split("#", 1)[1].strip(), f"no reason given: {raw!r}"


def run_cli(tmp_path: Path, report: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    empty = tmp_path / "no-ignores.txt"
    empty.write_text("")
    cmd = [sys.executable, str(AUDIT), "--from-json", str(path), "--ignore-file", str(empty)]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}
    )


def test_cli_exit_codes(tmp_path: Path) -> None:
    ok = run_cli(tmp_path, CLEAN)
    assert ok.returncode == 0 and ok.stdout.startswith("audit: OK: 2 packages audited")

    bad = run_cli(tmp_path, VULNERABLE)
    assert bad.returncode == 1
    assert bad.stdout.startswith("audit: FAIL: 1 known vulnerabilities")
    assert "scrapy 2.13.0: GHSA-cwxj-rr6w-m6w7" in bad.stdout

    unreachable = run_cli(tmp_path, ALL_SKIPPED)
    assert unreachable.returncode == 0
    assert unreachable.stdout.startswith("audit: WARNING: dependency audit NOT performed")

    strict = run_cli(tmp_path, ALL_SKIPPED, "--strict")
    assert strict.returncode == 1
    assert strict.stdout.startswith("audit: WARNING")


def test_ci_audit_script_runs_this_module() -> None:
    script = (ROOT / ".ci" / "audit").read_text(encoding="utf-8")
    assert "python deploy/audit.py" in script
    assert "set -euo pipefail" in script


def test_requirements_option_audits_exactly_the_pinned_versions() -> None:
    # `--requirements constraints.txt` audits the versions the Docker image installs, read from
    # the file without installing or resolving anything (pip-audit's dry run counts them).
    pytest.importorskip("pip_audit")
    constraints = ROOT / "constraints.txt"
    pins = [
        line for line in constraints.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]  # fmt: skip
    cmd = [sys.executable, "-m", "pip_audit", *audit.audited_set(constraints)]
    cmd += ["--dry-run", "--progress-spinner", "off"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-2000:]
    assert f"would have audited {len(pins)} packages" in out, out[-2000:]
    assert audit.audited_set(None) == ["--local"]  # what .ci/audit runs by default
