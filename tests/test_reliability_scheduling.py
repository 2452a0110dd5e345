"""Real ``scrapy crawl portal`` workers, a real redis-server and the mock portals.

Each test measures one way scrapy-redis 0.9.1 loses work: killed worker, failed download,
Redis going away (briefly or for good), SIGTERM, a planted pickle. The workers run the real
spider and pipelines (near-duplicate index in the test's redis-server, JSONL storage in a shared
``NEWSCRAWL_DATA_DIR``); the tests assert on the stored files, the mock servers' hit counts, the
duplicate log and exit codes.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crawlrun import (
    FAST,
    CrawlResult,
    Worker,
    article_hits,
    assert_stored_once,
    is_done,
    pass_a_day,
    run_crawl,
    start_crawl,
    stored_urls,
    url_of,
    wait_for,
)
from mockportal import Layout
from redisserver import RedisServer, free_port

from newscrawl.index import DuplicateLog

QUEUE = "newscrawl:portal:requests"
INFLIGHT = "newscrawl:portal:inflight"
DEADLETTER = "newscrawl:portal:deadletter"


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with RedisServer(tmp_path / "redis") as srv:
        yield srv




def run(tmp_path: Path, sites: Path, srv: RedisServer, *settings: str) -> CrawlResult:
    result = run_crawl(tmp_path, sites, *FAST, *settings, redis_url=srv.url, timeout=90)
    assert result.returncode == 0, result.log[-4000:]
    return result


def start(workers: list[Worker], tmp_path: Path, sites: Path, srv: RedisServer, name: str,
          *settings: str) -> Worker:
    worker = start_crawl(tmp_path, sites, *FAST, *settings, redis_url=srv.url,
                         log_path=tmp_path / f"{name}.log")
    workers.append(worker)
    return worker


def articles(layout: Layout) -> list[tuple[Any, str]]:
    """Article pages that must be fetched exactly once, ever."""
    return layout.all_good_articles()


def fetched(layout: Layout) -> int:
    return sum(article_hits(articles(layout)).values())


def slow_articles(layout: Layout, seconds: float) -> None:
    for portal in (layout.a, layout.b):
        portal.delay([path for p, path in articles(layout) if p is portal], seconds)


def test_second_run_fetches_no_article_but_revisits_lists(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer
) -> None:
    run(tmp_path, sites, redis_server)
    assert_stored_once(portals, stored_urls(tmp_path))
    first = article_hits(articles(portals))
    assert set(first.values()) == {1}
    lists = {p: portals.a.hit_counts()[p] for p in portals.a_lists}
    video = article_hits(portals.no_body)
    second = run(tmp_path, sites, redis_server)
    assert article_hits(articles(portals)) == first  # no article fetched again
    # a page without an article body is a failed attempt: tried again by the next run
    assert article_hits(portals.no_body) == {u: n + 1 for u, n in video.items()}
    # the start page and the first list page again; nothing new there: the walk stops
    assert {p: portals.a.hit_counts()[p] for p in portals.a_lists} == {
        "/": lists["/"] + 1, "/list/1.html": lists["/list/1.html"] + 1,
        "/list/2.html": lists["/list/2.html"]}
    assert portals.b.hit_counts()["/"] == 2
    assert second.stats["newscrawl/scheduler/filtered/done"] >= len(articles(portals))
    assert second.stats.get("newscrawl/store/stored", 0) == 0
    assert_stored_once(portals, stored_urls(tmp_path))
    assert redis_server.client().zcard(INFLIGHT) == 0


def test_503_article_is_fetched_and_stored_on_the_next_run(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer
) -> None:
    portal, path = portals.unique[0]
    portal.fail(path, times=2)  # the first run's try and its one retry get 503, then 200
    first = run(tmp_path, sites, redis_server)
    assert url_of(portal, path) not in stored_urls(tmp_path)
    assert portal.hit_counts()[path] == 2
    assert first.stats["newscrawl/download/failed/http_503"] == 1
    assert not is_done(redis_server.client(), url_of(portal, path))
    run(tmp_path, sites, redis_server)
    assert portal.hit_counts()[path] == 3
    assert_stored_once(portals, stored_urls(tmp_path))


def test_gives_up_after_max_attempts(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer
) -> None:
    portal, path = portals.unique[0]
    portal.fail(path)  # 503 for good
    client = redis_server.client()
    for attempt in (1, 2, 3):
        if attempt > 1:
            pass_a_day(client=client)  # one run a day: each failure counts
        result = run(tmp_path, sites, redis_server, "NEWSCRAWL_MAX_ATTEMPTS=2", "RETRY_TIMES=0")
        if attempt == 1:
            assert not is_done(client, url_of(portal, path))
        if attempt == 2:
            assert result.stats["newscrawl/scheduler/gave_up"] >= 1
            assert is_done(client, url_of(portal, path))  # given up: not tried again
    assert portal.hit_counts()[path] == 2
    assert url_of(portal, path) not in stored_urls(tmp_path)


def test_killed_worker_loses_nothing(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    slow_articles(portals, 3.0)
    worker = start(workers, tmp_path, sites, redis_server, "killed")
    wait_for(lambda: fetched(portals) >= 4, what="articles in flight")
    client = redis_server.client()
    in_flight = client.zcard(INFLIGHT)
    worker.kill()  # kill -9, with its fingerprint worker process
    assert in_flight >= 4
    hit_before = {u for u, n in article_hits(articles(portals)).items() if n}
    slow_articles(portals, 0)
    rescuer = run(tmp_path, sites, redis_server)
    # every article stored exactly once; refetched only the ones killed mid-download
    assert_stored_once(portals, stored_urls(tmp_path))
    hits = article_hits(articles(portals))
    assert all(hits.values())
    assert {u for u, n in hits.items() if n > 1} <= hit_before
    assert "Took over crawl run" in rescuer.log
    assert rescuer.stats["newscrawl/scheduler/requeued_dead_worker"] >= 4
    assert client.zcard(INFLIGHT) == 0 and client.zcard(QUEUE) == 0


def test_sigterm_finishes_in_flight_requests(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    slow_articles(portals, 1.0)
    worker = start(workers, tmp_path, sites, redis_server, "term")
    wait_for(lambda: fetched(portals) >= 3, what="articles in flight")
    worker.terminate()
    first = worker.wait()
    assert first.returncode == 0, first.log[-4000:]
    assert first.stats["finish_reason"] == "shutdown"
    client = redis_server.client()
    assert client.zcard(INFLIGHT) == 0  # finished or requeued, none left leased
    stored_first = stored_urls(tmp_path)
    assert stored_first and set(stored_first.values()) == {1}
    slow_articles(portals, 0)
    second = run(tmp_path, sites, redis_server)
    # no worker of the interrupted run is alive: taken over at once, its queue goes on
    assert "Took over crawl run" in second.log
    assert_stored_once(portals, stored_urls(tmp_path))
    assert set(article_hits(articles(portals)).values()) == {1}


def test_redis_restart_mid_crawl_loses_nothing(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    slow_articles(portals, 0.5)
    worker = start(workers, tmp_path, sites, redis_server, "w",
                   "NEWSCRAWL_REDIS_RETRY_SECONDS=30", "CONCURRENT_REQUESTS=2")
    wait_for(lambda: fetched(portals) >= 3, what="articles fetched")
    redis_server.stop()
    slow_articles(portals, 0)
    time.sleep(2)
    redis_server.start()
    result = worker.wait()
    assert result.returncode == 0, result.log[-4000:]
    assert "Redis is back" in result.log
    assert_stored_once(portals, stored_urls(tmp_path))


def killed_mid_crawl(workers: list[Worker], tmp_path: Path, portals: Layout, sites: Path,
                     srv: RedisServer, retry_seconds: float) -> Worker:
    """A worker whose redis-server is killed once it has fetched two (slow) articles."""
    slow_articles(portals, 0.5)
    worker = start(workers, tmp_path, sites, srv, "w",
                   f"NEWSCRAWL_REDIS_RETRY_SECONDS={retry_seconds}", "CONCURRENT_REQUESTS=2")
    wait_for(lambda: fetched(portals) >= 2, what="articles fetched")
    srv.kill()
    return worker


def rerun_stores_each_once(tmp_path: Path, portals: Layout, sites: Path,
                           srv: RedisServer) -> None:
    """Redis back (same data directory: AOF, fsync always), a run stores every article once."""
    if srv.proc is None:
        srv.start()
    slow_articles(portals, 0)
    run(tmp_path, sites, srv)
    assert_stored_once(portals, stored_urls(tmp_path))


def test_redis_gone_for_good_exits_3_and_marks_nothing_done(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    worker = killed_mid_crawl(workers, tmp_path, portals, sites, redis_server, 2)
    result = worker.wait()
    assert result.returncode == 3, result.log[-4000:]
    assert "Redis is unreachable" in result.log
    assert "redis_unavailable" in result.log
    # Nothing recorded as done that was not stored (or dropped as a recorded near-duplicate).
    redis_server.start()  # same data directory (AOF, fsync always)
    client = redis_server.client()
    stored = stored_urls(tmp_path)
    duplicates = {rec.url for rec in DuplicateLog(client).list()}
    done = {url_of(p, path) for p, path in portals.all_good_articles()
            if is_done(client, url_of(p, path))}
    assert done <= set(stored) | duplicates
    rerun_stores_each_once(tmp_path, portals, sites, redis_server)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_redis_outage_stops_the_crawl_at_once(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker], sig: signal.Signals,
) -> None:
    # Ctrl-C (or docker stop) while the crawl waits for Redis: it stops in seconds, not when the
    # 60 s retry window has run out, with exit code 3 (Redis was away); nothing is lost.
    worker = killed_mid_crawl(workers, tmp_path, portals, sites, redis_server, 60)
    wait_for(lambda: "Redis unavailable (" in worker.log(), what="the retry's first warning")
    stopped = time.monotonic()
    worker.proc.send_signal(sig)
    result = worker.wait(timeout=45)
    assert time.monotonic() - stopped < 20, result.log[-4000:]
    assert result.returncode == 3, result.log[-4000:]
    assert f"the wait for it was cut short by {sig.name}" in result.log, result.log[-4000:]
    assert "Traceback" not in result.log, result.log[-4000:]
    rerun_stores_each_once(tmp_path, portals, sites, redis_server)


def test_redis_unreachable_at_start_closes_cleanly(tmp_path: Path, sites: Path) -> None:
    # Nothing listens on the port: the claim of the run gives up after the retry window; the
    # crawl closes with one CRITICAL line, exit code 3, and no traceback from Scrapy's close.
    result = run_crawl(tmp_path, sites, "NEWSCRAWL_REDIS_RETRY_SECONDS=0.5",
                       redis_url=f"redis://127.0.0.1:{free_port()}/0")
    assert result.returncode == 3, result.log[-4000:]
    assert result.stats["finish_reason"] == "redis_unavailable"
    assert "Traceback" not in result.log, result.log[-4000:]
    assert result.log.count("CRITICAL:") == 1
    # the cause again as the last line, after Scrapy's closing lines and stats: the only ERROR
    errors = [line for line in result.log.splitlines() if " ERROR:" in line]
    assert errors == [result.log.strip().splitlines()[-1]], result.log[-4000:]
    assert "The crawl failed: Redis unavailable for " in errors[0]
    assert errors[0].endswith("(exit code 3)")


def test_pickle_in_queue_runs_no_code(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer
) -> None:
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self) -> Any:
            return (os.system, (f"touch {marker}",))

    client = redis_server.client()
    client.zadd(QUEUE, {pickle.dumps(Evil(), protocol=2): -1e15})
    result = run(tmp_path, sites, redis_server)
    assert not marker.exists()
    assert result.stats["newscrawl/scheduler/dead_letter"] == 1
    assert client.llen(DEADLETTER) == 1
    assert_stored_once(portals, stored_urls(tmp_path))


def test_a_rerun_right_after_kill_9_takes_over_at_once_with_the_default_lease(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    # The default lease (120 s) and heartbeat (10 s): the killed worker's requests must not wait
    # for either to expire, and its run must not be joined as if it were alive.
    slow_articles(portals, 3.0)
    worker = start(workers, tmp_path, sites, redis_server, "killed",
                   "NEWSCRAWL_LEASE_SECONDS=120", "NEWSCRAWL_HEARTBEAT_SECONDS=10")
    wait_for(lambda: fetched(portals) >= 4, what="articles in flight")
    worker.kill()
    slow_articles(portals, 0)
    started = time.monotonic()
    rescuer = run_crawl(tmp_path, sites, *FAST, "NEWSCRAWL_LEASE_SECONDS=120",
                        redis_url=redis_server.url, timeout=60)
    assert rescuer.returncode == 0, rescuer.log[-4000:]
    assert time.monotonic() - started < 60
    assert "Joined crawl run" not in rescuer.log and "Took over crawl run" in rescuer.log
    assert_stored_once(portals, stored_urls(tmp_path))
    assert redis_server.client().zcard(INFLIGHT) == 0


def test_a_start_page_left_in_flight_by_a_killed_run_is_fetched_once_by_the_rerun(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    # The killed run's start page goes back to the queue with the take-over; the new run's own
    # start pages must not queue it a second time (it would be fetched twice, and a failing one
    # charged two attempts in one run)
    portals.a.delay(["/"], 5.0)
    worker = start(workers, tmp_path, sites, redis_server, "killed")
    wait_for(lambda: portals.a.hit_counts().get("/", 0) >= 1, what="start page requested")
    worker.kill()
    portals.a.delay(["/"], 0)
    rescuer = run_crawl(tmp_path, sites, *FAST, redis_url=redis_server.url, timeout=60)
    assert rescuer.returncode == 0, rescuer.log[-4000:]
    assert "Took over crawl run" in rescuer.log
    assert portals.a.hit_counts()["/"] == 2, rescuer.log[-4000:]  # once per run
    assert_stored_once(portals, stored_urls(tmp_path))
