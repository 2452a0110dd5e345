"""Run real ``scrapy crawl portal`` processes for tests and read their stats from the log.

``run_crawl`` runs one crawl to its end (embedded Redis in ``workdir/data`` unless ``redis_url``);
``start_crawl`` starts a worker in the background (its own process group, so a ``kill -9`` takes
its fingerprint worker process too) for the reliability and cluster tests.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

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


def crawl_command(sites: Path | None, settings: tuple[str, ...]) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "portal"]  # INFO: the default LOG_LEVEL
    if sites is not None:
        cmd += ["-a", f"sites={sites}"]
    # Tests end a worker soon after its queue is drained (the default waits 10 s for other workers).
    cmd += ["-s", "NEWSCRAWL_IDLE_EXIT_SECONDS=0.5"]
    for setting in settings:
        cmd += ["-s", setting]
    return cmd


def crawl_env(workdir: Path, redis_url: str | None,
              env: dict[str, str] | None = None) -> dict[str, str]:
    full_env = dict(os.environ)
    full_env.update({
        "SCRAPY_SETTINGS_MODULE": "newscrawl.settings",
        "NEWSCRAWL_DATA_DIR": str(workdir / "data"),
        "PYTHONPATH": str(REPO) + os.pathsep + full_env.get("PYTHONPATH", ""),
    })
    full_env.pop("REDIS_URL", None)
    if redis_url:
        full_env["REDIS_URL"] = redis_url
    if env:
        full_env.update(env)
    return full_env


def run_crawl(workdir: Path, sites: Path | None, *settings: str, timeout: float = 120,
              env: dict[str, str] | None = None, redis_url: str | None = None) -> CrawlResult:
    """``scrapy crawl portal`` in ``workdir`` (data in ``workdir/data``), run to its end."""
    proc = subprocess.run(crawl_command(sites, settings), cwd=workdir,
                          env=crawl_env(workdir, redis_url, env), capture_output=True, text=True,
                          timeout=timeout)
    log = proc.stdout + proc.stderr
    return CrawlResult(proc.returncode, log, parse_stats(log))


class Worker:
    """A ``scrapy crawl portal`` process running in the background, logging to ``log_path``."""

    def __init__(self, workdir: Path, sites: Path | None, settings: tuple[str, ...],
                 redis_url: str | None, log_path: Path,
                 env: dict[str, str] | None = None) -> None:
        self.log_path = log_path
        with open(log_path, "wb") as out:
            self.proc = subprocess.Popen(
                crawl_command(sites, settings), cwd=workdir, env=crawl_env(workdir, redis_url, env),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait(self, timeout: float = 90) -> CrawlResult:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"worker did not finish in {timeout} s:\n{self.log()[-4000:]}") from None
        log = self.log()
        return CrawlResult(code, log, parse_stats(log))

    def kill(self) -> None:
        """``kill -9`` the worker and its children (fingerprint worker process)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        try:  # children left behind once the leader is gone
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def terminate(self) -> None:
        """SIGTERM to the worker process itself (what ``docker stop`` sends)."""
        self.proc.send_signal(signal.SIGTERM)


def start_crawl(workdir: Path, sites: Path | None, *settings: str, log_path: Path,
                redis_url: str | None = None, env: dict[str, str] | None = None) -> Worker:
    return Worker(workdir, sites, settings, redis_url, log_path, env)


def join_late(workdir: Path, sites: Path | None, settings: tuple[str, ...], *, redis_url: str,
              workers: list[Worker]) -> Worker:
    """Start another worker of the crawl running in ``workdir`` (logging to ``late.log``) and
    wait until it has joined the run."""
    late = start_crawl(workdir, sites, *settings, redis_url=redis_url,
                       log_path=workdir / "late.log")
    workers.append(late)
    wait_for(lambda: "Joined crawl run" in late.log(), timeout=90,
             what="the late worker joining the run")
    return late


def once_per_session(tmp_path_factory: pytest.TempPathFactory, name: str,
                     compute: Callable[[], Any]) -> Any:
    """``compute()`` (JSON-able) run once for the whole test session, ``pytest -n`` included.

    pytest-xdist hands a module's tests to whichever worker is free, and a module fixture runs
    on each worker that got one of them: a fixture that crawls a lot computes its results here
    instead. The first worker computes them while the others wait on a lock, then read them."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's directory, shared by its workers
    path = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            path.write_text(json.dumps(compute(), default=str), encoding="utf-8")
        return json.loads(path.read_text(encoding="utf-8"))


def wait_for(cond: Callable[[], bool], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def stored_urls(workdir: Path) -> Counter[str]:
    """How often each URL was stored in the JSONL files of ``workdir/data``."""
    from newscrawl.storage import iter_articles

    return Counter(str(item["url"]) for item in iter_articles(workdir / "data" / "articles"))


# --- assertions on a crawl of the mock portals (tests/mockportal.py) --------------------------

#: Extraction and fingerprints in the crawl process (``NEWSCRAWL_FINGERPRINT_WORKERS=0``): no
#: worker process to start, importing extraction and the segmenter again (a spawned process).
#: For the tests that check something else; the e2e, fault, signal, worker, reliability and
#: cluster tests keep the default worker process, so its path stays covered.
IN_PROCESS = "NEWSCRAWL_FINGERPRINT_WORKERS=0"

#: Worker settings for the reliability/cluster tests: no AutoThrottle, short leases and retry
#: windows, one Scrapy retry, pages up to 200 kB (the mock's oversize page is over it).
FAST = (
    "AUTOTHROTTLE_ENABLED=False",
    "DOWNLOAD_MAXSIZE=200000",
    "CONCURRENT_REQUESTS_PER_DOMAIN=8",
    "RETRY_TIMES=1",
    "NEWSCRAWL_LEASE_SECONDS=3",
    "NEWSCRAWL_REDIS_RETRY_SECONDS=10",
)


def url_of(portal: Any, path: str) -> str:
    return str(portal.url(path))


def article_hits(pages: list[tuple[Any, str]]) -> dict[str, int]:
    """Server-side hit count of each (portal, path)."""
    return {url_of(p, path): p.hit_counts().get(path, 0) for p, path in pages}


def assert_stored_once(layout: Any, stored: Counter[str]) -> None:
    """Every distinct article stored exactly once, one of each reprint group, nothing else."""
    twice = {u: n for u, n in stored.items() if n > 1}
    assert not twice, f"stored more than once: {twice}"
    unique = {url_of(p, path) for p, path in layout.unique}
    missing = unique - set(stored)
    assert not missing, f"not stored: {sorted(missing)}"
    expected = set(unique)
    for group in layout.reprint_groups:
        urls = [url_of(p, path) for p, path in group]
        kept = [u for u in urls if u in stored]
        assert len(kept) == 1, f"reprint group {urls}: stored {kept}"
        expected.add(kept[0])
    assert set(stored) == expected, f"unexpected: {sorted(set(stored) - expected)}"


def is_done(client: Any, url: str, spider: str = "portal", prefix: str = "newscrawl") -> bool:
    """Whether the scheduler recorded ``url`` as done (docs/redis-keys.md, "seen")."""
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    fp = RequestFingerprinter().fingerprint(Request(url))[:8]
    return client.zscore(f"{prefix}:{spider}:seen:{fp[:2].hex()}", fp[2:]) is not None


#: Moves the day of every failed attempt on record one day back (docs/redis-keys.md, "failures").
_PASS_A_DAY = """
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local n, day = string.match(all[i + 1], '^(%d+):(%-?%d+)$')
  if n then redis.call('HSET', KEYS[1], all[i], n .. ':' .. (tonumber(day) - 1)) end
end
return #all / 2
"""


def pass_a_day(workdir: Path | None = None, *, client: Any = None, spider: str = "portal",
               prefix: str = "newscrawl") -> None:
    """As if the failed attempts on record had been made a day earlier: failed attempts count
    once a day (ack.lua), so a test that runs several crawls in one day calls this between them
    to have each run's failure count. ``workdir``: the crawl's embedded Redis (``run_crawl``'s
    ``workdir/data``); ``client``: another Redis."""
    from newscrawl.connection import close_embedded, get_client

    own = client is None
    if own:
        assert workdir is not None
        client = get_client(None, data_dir=workdir / "data")
    try:
        client.eval(_PASS_A_DAY, 1, f"{prefix}:{spider}:failures")
    finally:
        if own:
            close_embedded(client)
