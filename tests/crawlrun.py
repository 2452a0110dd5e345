"""Run a real ``scrapy crawl portal`` subprocess for tests and read its stats from the log."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@dataclass
class CrawlResult:
    returncode: int
    log: str
    stats: dict[str, Any]


def parse_stats(log: str) -> dict[str, Any]:
    """The dict Scrapy logs after "Dumping Scrapy stats:" (pprint of ints, strs, datetimes)."""
    match = re.search(r"Dumping Scrapy stats:\n(\{.*?\})\n(?=\d{4}-\d\d-\d\d )", log, re.S)
    if not match:
        return {}
    namespace = {"__builtins__": {}, "datetime": datetime}
    return dict(eval(match.group(1), namespace))  # our own log output, nothing else


def run_crawl(workdir: Path, sites: Path | None, *settings: str, timeout: float = 120,
              env: dict[str, str] | None = None) -> CrawlResult:
    """``scrapy crawl portal`` in ``workdir`` with the embedded Redis in ``workdir/data``."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "portal", "-s", "LOG_LEVEL=INFO"]
    if sites is not None:
        cmd += ["-a", f"sites={sites}"]
    # Tests end a worker soon after its queue is drained (the default waits 10 s for other workers).
    cmd += ["-s", "NEWSCRAWL_IDLE_EXIT_SECONDS=0.5"]
    for setting in settings:
        cmd += ["-s", setting]
    full_env = dict(os.environ)
    full_env.update({
        "SCRAPY_SETTINGS_MODULE": "newscrawl.settings",
        "NEWSCRAWL_DATA_DIR": str(workdir / "data"),
        "PYTHONPATH": str(REPO) + os.pathsep + full_env.get("PYTHONPATH", ""),
    })
    full_env.pop("REDIS_URL", None)
    if env:
        full_env.update(env)
    proc = subprocess.run(cmd, cwd=workdir, env=full_env, capture_output=True, text=True,
                          timeout=timeout)
    log = proc.stdout + proc.stderr
    return CrawlResult(proc.returncode, log, parse_stats(log))
