"""SIGTERM and SIGINT at any moment of a crawl's life: during start-up (imports, settings, the
embedded Redis starting), while it crawls, and after ``Spider closed (finished)``. Each time the
worker exits 0 without a traceback, leaves no embedded redis-server and no temporary directory
behind, and loses nothing: a last, uninterrupted run stores every article, each once.

A real ``newscrawl crawl`` or ``scrapy crawl portal`` on a tiny mock portal (articles answered
0.3 s late, so a run lasts a few seconds); the signal is sent the moment the process first
catches signals, or at a line of its log (the DEBUG log: each phase of start-up names itself).
Each process gets a ``TMPDIR`` of its own, to see what it leaves there."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crawlrun import (
    FAST,
    IN_PROCESS,
    Worker,
    crawl_command,
    crawl_env,
    run_crawl,
    start_crawl,
    stored_urls,
)
from mockportal import Article, MockPortal, Page, list_html
from redisserver import wait_exited

from newscrawl.connection._embedded import EMBEDDED_REGISTRY_NAME

N_ARTICLES = 8
#: (signal, when, command): when is "" for the first instant the process catches signals (in its
#: first imports), else a log line to wait for; command ``newscrawl`` (``newscrawl crawl``, which
#: holds signals from its first line) or ``scrapy`` (``scrapy crawl portal``).
MOMENTS: list[tuple[signal.Signals, str, str]] = [
    (signal.SIGTERM, "", "newscrawl"),  # importing Scrapy
    (signal.SIGINT, "Using AsyncCrawlerProcess", "newscrawl"),  # settings read
    (signal.SIGTERM, "Crawling 1 site(s)", "newscrawl"),  # the spider built, before the reactor
    (signal.SIGINT, "Creating temporary redis directory", "newscrawl"),  # Redis starting
    (signal.SIGTERM, "Using embedded Redis", "scrapy"),  # Redis up, spider opening
    (signal.SIGTERM, "Spider opened", "scrapy"),
    (signal.SIGINT, "Crawled (200) <GET", "scrapy"),  # crawling
    (signal.SIGTERM, "Scraped from <200", "scrapy"),  # articles being stored
    (signal.SIGINT, "Spider closed (finished)", "newscrawl"),  # the embedded Redis stopping
    (signal.SIGTERM, "Spider closed (finished)", "scrapy"),
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


@pytest.mark.parametrize(("signum", "when", "command"), MOMENTS,
                         ids=[f"{s.name}-{w or 'imports'}-{c}" for s, w, c in MOMENTS])
def test_a_signal_at_any_moment(tmp_path: Path, portal: MockPortal, signum: signal.Signals,
                                when: str, command: str) -> None:
    paths = build(portal)
    sites_path = sites(tmp_path, portal)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    log = tmp_path / "crawl.log"
    if command == "newscrawl":
        worker = newscrawl_crawl(tmp_path, sites_path, log, tmp)
    else:
        worker = start_crawl(tmp_path, sites_path, *FAST, "LOG_LEVEL=DEBUG", log_path=log,
                             env={"TMPDIR": str(tmp)})
    try:
        if not when:
            assert wait_caught(worker.proc.pid, signum), worker.log()[-3000:]
        else:
            assert wait_log(log, when, lambda: worker.proc.poll() is None), worker.log()[-3000:]
        worker.proc.send_signal(signum)
        result = worker.wait(120)
    finally:
        worker.kill()
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]
    assert "returned a Deferred" not in result.log
    if "Spider closed" not in when:  # handled: not started, or Scrapy's graceful stop
        assert f"Received {signum.name}" in result.log, result.log[-3000:]
    assert server_left(tmp_path / "data") is None
    # the signalled crawl had its worker process; the run that checks nothing was lost needs none
    nothing_left_then_rerun_stores_everything_once(tmp_path, sites_path, tmp, portal, paths,
                                                    IN_PROCESS)


def test_kill_9_of_a_crawl_stops_its_embedded_redis_within_seconds(
        tmp_path: Path, portal: MockPortal) -> None:
    paths = build(portal)
    sites_path = sites(tmp_path, portal)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    log = tmp_path / "crawl.log"
    worker = start_crawl(tmp_path, sites_path, *FAST, "LOG_LEVEL=DEBUG", log_path=log,
                         env={"TMPDIR": str(tmp)})
    try:
        assert wait_log(log, "Scraped from <200", lambda: worker.proc.poll() is None), \
            worker.log()[-3000:]
        pidfile = json.loads((tmp_path / "data" / EMBEDDED_REGISTRY_NAME).read_text())["pidfile"]
        server = int(Path(pidfile).read_text())
    finally:
        worker.kill()  # kill -9 of the crawl (and its process group)
    assert wait_exited(server, 15), "the embedded redis-server outlived its killed crawl"
    nothing_left_then_rerun_stores_everything_once(tmp_path, sites_path, tmp, portal, paths)


def nothing_left_then_rerun_stores_everything_once(tmp_path: Path, sites_path: Path, tmp: Path,
                                                    portal: MockPortal, paths: list[str],
                                                    *settings: str) -> None:
    """No temporary file is left (a watcher may still be removing a dead server's files for a
    moment), and the next run (``FAST`` and ``settings``) stores what is missing, each article
    once, leaving none either."""
    deadline = time.monotonic() + 5
    while list(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp.iterdir()) == []
    again = run_crawl(tmp_path, sites_path, *FAST, *settings, env={"TMPDIR": str(tmp)})
    assert again.returncode == 0, again.log[-3000:]
    stored = stored_urls(tmp_path)
    assert set(stored) == {portal.url(path) for path in paths}
    assert max(stored.values()) == 1
    assert list(tmp.iterdir()) == []
