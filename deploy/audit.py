"""Dependency audit for CI: pip-audit over the installed environment, with an honest verdict.

    python deploy/audit.py                    # what .ci/audit runs (inside the project venv)
    python deploy/audit.py --requirements constraints.txt  # the pinned versions the image installs
    python deploy/audit.py --from-json r.json # classify a saved `pip-audit -f json` report

Verdicts (one line starting with ``audit:``) and exit codes:

* ``audit: OK``       every package that could be looked up has no known vulnerability -> 0
* ``audit: FAIL``     known vulnerabilities (not in deploy/audit-ignore.txt) -> 1
* ``audit: WARNING``  no vulnerability service answered for any package, so NOTHING was
  audited -> 0 (CI must not stay red because a host is unreachable), or 1 with ``--strict`` /
  ``NEWSCRAWL_AUDIT_STRICT=1``.
* ``audit: ERROR``    pip-audit itself failed (not a network problem) -> 2.

pip-audit itself prints "No known vulnerabilities found" and exits 0 even when every package was
skipped because the service could not be asked; this script counts skipped packages instead of
trusting that line. Services are tried in order (``pypi``: PyPI's JSON API, then ``osv``:
api.osv.dev) until one of them audits at least one package.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_IGNORE_FILE = HERE / "audit-ignore.txt"
SERVICES = ("pypi", "osv")


@dataclass(frozen=True)
class Finding:
    package: str
    version: str
    vuln_id: str
    fix_versions: tuple[str, ...]
    aliases: tuple[str, ...] = ()

    def line(self) -> str:
        fix = ", ".join(self.fix_versions) if self.fix_versions else "no fixed release yet"
        alias = f" ({', '.join(self.aliases)})" if self.aliases else ""
        return f"{self.package} {self.version}: {self.vuln_id}{alias}; fixed in: {fix}"


@dataclass
class Verdict:
    status: str  # "ok" | "vulnerable" | "unreachable"
    audited: int = 0
    skipped: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    detail: str = ""


def read_ignore_file(path: Path) -> set[str]:
    """Advisory ids to ignore: one per line, ``#`` starts a comment (say why it is ignored)."""
    if not path.exists():
        return set()
    ids = set()
    for raw in path.read_text(encoding="utf-8").splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry:
            ids.add(entry)
    return ids


def classify(report: dict[str, Any] | None, ignore: AbstractSet[str] = frozenset()) -> Verdict:
    """The verdict for one pip-audit JSON report (None: pip-audit produced no report)."""
    if not report or not isinstance(report.get("dependencies"), list):
        return Verdict("unreachable", detail="no report")
    audited = 0
    skipped: list[str] = []
    findings: list[Finding] = []
    for dep in report["dependencies"]:
        name = str(dep.get("name", "?"))
        if dep.get("skip_reason"):
            skipped.append(name)
            continue
        audited += 1
        for vuln in dep.get("vulns") or []:
            vuln_id = str(vuln.get("id", "?"))
            aliases = tuple(str(a) for a in vuln.get("aliases") or ())
            if vuln_id in ignore or any(alias in ignore for alias in aliases):
                continue
            findings.append(
                Finding(
                    package=name,
                    version=str(dep.get("version", "?")),
                    vuln_id=vuln_id,
                    fix_versions=tuple(str(v) for v in vuln.get("fix_versions") or ()),
                    aliases=aliases,
                )
            )
    if findings:
        return Verdict("vulnerable", audited, skipped, findings)
    if audited == 0:
        reason = f"all {len(skipped)} packages skipped" if skipped else "no packages"
        return Verdict("unreachable", 0, skipped, detail=reason)
    return Verdict("ok", audited, skipped)


def audited_set(requirements: Path | None) -> list[str]:
    """pip-audit's arguments naming what it audits: the installed environment, or a file of exact
    pins (constraints.txt) read as is, without installing or resolving anything."""
    if requirements is None:
        return ["--local"]
    return ["--requirement", str(requirements), "--no-deps", "--disable-pip"]


def run_pip_audit(
    service: str, timeout: float, requirements: Path | None = None
) -> tuple[dict[str, Any] | None, str]:
    """Run pip-audit on the current environment or *requirements*; (report or None, error)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        cmd = [
            sys.executable, "-m", "pip_audit",
            *audited_set(requirements),
            "--vulnerability-service", service,
            "--format", "json",
            "--output", str(out),
            "--progress-spinner", "off",
            "--desc", "off",
            "--timeout", "15",
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"pip-audit --service {service} took longer than {timeout:.0f} s"
        except OSError as exc:
            return None, f"cannot run pip-audit: {exc}"
        if out.exists() and out.stat().st_size:
            try:
                return json.loads(out.read_text(encoding="utf-8")), ""
            except json.JSONDecodeError as exc:
                return None, f"unreadable pip-audit report: {exc}"
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return None, lines[-1] if lines else f"pip-audit exited with {proc.returncode}"


# What a vulnerability service that cannot be reached looks like in pip-audit's error output.
_NETWORK_MARKERS = (
    "ConnectionError",
    "NameResolutionError",
    "Max retries exceeded",
    "Failed to resolve",
    "Connection refused",
    "timed out",
    "Timeout",
    "ProxyError",
    "SSLError",
    "Temporary failure in name resolution",
    "Network is unreachable",
)


def is_network_error(error: str) -> bool:
    return any(marker in error for marker in _NETWORK_MARKERS)


def report_verdict(verdict: Verdict, service: str, strict: bool, seconds: float) -> int:
    where = f"service {service}, {seconds:.1f} s"
    if verdict.status == "vulnerable":
        print(f"audit: FAIL: {len(verdict.findings)} known vulnerabilities ({where}):")
        for finding in verdict.findings:
            print(f"  {finding.line()}")
        print("  Upgrade (raise the lower bound in pyproject.toml), or if an advisory does not")
        print("  apply, add its id with the reason to deploy/audit-ignore.txt.")
        return 1
    if verdict.status == "ok":
        note = f"; not on the index, not audited: {', '.join(verdict.skipped)}"
        print(
            f"audit: OK: {verdict.audited} packages audited, no known vulnerabilities ({where})"
            + (note if verdict.skipped else "")
        )
        return 0
    message = (
        "audit: WARNING: dependency audit NOT performed: no vulnerability service could be "
        f"asked ({verdict.detail}; {where}). Run .ci/audit where pypi.org's JSON API or "
        "api.osv.dev is reachable."
    )
    print(message)
    return 1 if strict else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-json", type=Path, help="classify a saved pip-audit JSON report")
    parser.add_argument("--ignore-file", type=Path, default=DEFAULT_IGNORE_FILE)
    parser.add_argument(
        "--strict",
        action="store_true",
        default=os.environ.get("NEWSCRAWL_AUDIT_STRICT", "") not in ("", "0"),
        help="fail when no service could be asked (default: warn)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="per service, seconds")
    parser.add_argument(
        "--requirements",
        type=Path,
        help="audit this file of exact pins (constraints.txt) instead of the installed packages",
    )
    args = parser.parse_args(argv)
    ignore = read_ignore_file(args.ignore_file)

    if args.from_json is not None:
        report = json.loads(args.from_json.read_text(encoding="utf-8"))
        return report_verdict(classify(report, ignore), "from file", args.strict, 0.0)

    start = time.monotonic()
    errors: list[str] = []
    verdict = Verdict("unreachable")
    for service in SERVICES:
        report, error = run_pip_audit(service, args.timeout, args.requirements)
        if report is None and not is_network_error(error):
            # pip-audit itself is broken (bad option, crash): that must never pass quietly.
            print(f"audit: ERROR: pip-audit --vulnerability-service {service} failed: {error}")
            return 2
        verdict = classify(report, ignore)
        if verdict.status != "unreachable":
            return report_verdict(verdict, service, args.strict, time.monotonic() - start)
        errors.append(f"{service}: {error or verdict.detail}")
    verdict.detail = "; ".join(errors)
    return report_verdict(verdict, "+".join(SERVICES), args.strict, time.monotonic() - start)


if __name__ == "__main__":
    sys.exit(main())
