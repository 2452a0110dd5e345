"""SIGTERM and SIGINT at any moment of a crawl's life: during start-up (imports, settings, the
embedded Redis starting), while it crawls, and after ``Spider closed (finished)``. Each time the
worker exits 0 without a traceback, leaves no embedded redis-server and no temporary directory
behind, and loses nothing: a last, uninterrupted run stores every article, each once.

A real ``scrapy crawl portal`` on a tiny mock portal (articles answered 0.3 s late, so a run
lasts a few seconds); the signal is sent at fixed delays after the process starts and at points
read from its log. Each process gets a ``TMPDIR`` of its own, to see what it leaves there."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crawlrun import FAST, Worker, crawl_command, crawl_env, run_crawl, start_crawl, stored_urls
from mockportal import Article, MockPortal, Page, list_html
from redisserver import wait_exited

from newscrawl.redis._embedded import EMBEDDED_REGISTRY_NAME

N_ARTICLES = 8
#: (signal, when): seconds after the process first catches signals (``newscrawl crawl``: in its
#: first imports), or a log line to wait for first (``scrapy crawl``)
MOMENTS: list[tuple[signal.Signals, float | str]] = [
    (signal.SIGTERM, 0.0),
    (signal.SIGINT, 0.2),
    (signal.SIGTERM, 0.5),
    (signal.SIGINT, 0.9),
    (signal.SIGTERM, 1.4),
    (signal.SIGTERM, "Spider opened"),
    (signal.SIGINT, "Crawled (200) <GET"),
    (signal.SIGTERM, "Scraped from <200"),
    (signal.SIGINT, "Spider closed (finished)"),
    (signal.SIGTERM, "Spider closed (finished)"),
]


def build(portal: MockPortal) -> list[str]:
    paths = [f"/a/{i}.html" for i in range(N_ARTICLES)]
    for path in paths:
        portal.add_article(path, Article.generate(path))
    portal.set("/", Page(list_html("home", paths).encode()))
    portal.delay(paths, 0.3)
    return paths


def sites(tmp_path: Path, portal: MockPortal) -> Path:
    path = tmp_path / "sites.toml"
    path.write_text(f'[[sites]]\nname = "s"\nstart_urls = ["{portal.url("/")}"]\n'
                    "article_url = '/a/\\d+\\.html$'\n", encoding="utf-8")
    return path


def wait_log(log: Path, needle: str, proc_alive: object, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(encoding="utf-8", errors="replace"):
            return True
        if not proc_alive():  # type: ignore[operator]
            return False
        time.sleep(0.005)
    return False


def wait_caught(pid: int, signum: int, timeout: float = 30) -> bool:
    """Until process ``pid`` catches ``signum`` (``SigCgt`` of /proc/PID/status): the first
    instant a signal can be handled at all, a few milliseconds after the interpreter starts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        caught = int(status.split("SigCgt:")[1].split()[0], 16)
        if caught >> (signum - 1) & 1:
            return True
        time.sleep(0.001)
    return False


def server_left(data: Path) -> int | None:
    """The pid of an embedded redis-server the data dir's registry names, if it still runs."""
    try:
        pidfile = json.loads((data / EMBEDDED_REGISTRY_NAME).read_text())["pidfile"]
        pid = int(Path(pidfile).read_text())
    except (OSError, ValueError, KeyError):
        return None
    return None if wait_exited(pid, 5) else pid


def newscrawl_crawl(tmp_path: Path, sites_path: Path, log: Path, tmp: Path) -> Worker:
    """``newscrawl crawl`` with the arguments crawlrun gives ``scrapy crawl portal``."""
    worker = Worker.__new__(Worker)
    worker.log_path = log
    args = crawl_command(sites_path, (*FAST, "LOG_LEVEL=DEBUG"))[5:]  # after "crawl portal"
    with open(log, "wb") as out:
        worker.proc = subprocess.Popen(
            [sys.executable, "-m", "newscrawl._entry", "crawl", *args], cwd=tmp_path,
            env=crawl_env(tmp_path, None, {"TMPDIR": str(tmp)}), stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
    return worker


@pytest.mark.parametrize(("signum", "when"), MOMENTS,
                         ids=[f"{s.name}-{w}" for s, w in MOMENTS])
def test_a_signal_at_any_moment(tmp_path: Path, portal: MockPortal, signum: signal.Signals,
                                when: float | str) -> None:
    paths = build(portal)
    sites_path = sites(tmp_path, portal)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    log = tmp_path / "crawl.log"
    if isinstance(when, float):  # start-up: `newscrawl crawl`, signals held from its first line
        worker = newscrawl_crawl(tmp_path, sites_path, log, tmp)
    else:  # `scrapy crawl`
        worker = start_crawl(tmp_path, sites_path, *FAST, "LOG_LEVEL=DEBUG", log_path=log,
                             env={"TMPDIR": str(tmp)})
    try:
        if isinstance(when, float):
            assert wait_caught(worker.proc.pid, signum), worker.log()[-3000:]
            time.sleep(when)
        else:
            assert wait_log(log, when, lambda: worker.proc.poll() is None), worker.log()[-3000:]
        worker.proc.send_signal(signum)
        result = worker.wait(120)
    finally:
        worker.kill()
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]
    assert "returned a Deferred" not in result.log
    assert server_left(tmp_path / "data") is None
    deadline = time.monotonic() + 5  # a watcher may still be removing a dead server's files
    while list(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp.iterdir()) == []
    # nothing lost: the next run stores what is missing, each article once
    again = run_crawl(tmp_path, sites_path, *FAST, env={"TMPDIR": str(tmp)})
    assert again.returncode == 0, again.log[-3000:]
    stored = stored_urls(tmp_path)
    assert set(stored) == {portal.url(path) for path in paths}
    assert max(stored.values()) == 1
    assert list(tmp.iterdir()) == []
