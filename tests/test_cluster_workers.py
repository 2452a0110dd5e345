"""Several real ``scrapy crawl portal`` workers on one redis-server against the two mock portals.

The portals reprint each other (cross-portal reprints with small edits) and portal a holds an
exact copy under a second URL. Workers share one ``NEWSCRAWL_DATA_DIR`` (JSONL storage), as
workers on one machine may.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from crawlrun import (
    FAST,
    REPO,
    CrawlResult,
    Worker,
    article_hits,
    assert_stored_once,
    crawl_env,
    join_late,
    start_crawl,
    stored_urls,
    url_of,
    wait_for,
)
from mockportal import DailyPortal, Layout, MockPortal
from redisserver import RedisServer


def articles(layout: Layout) -> list[tuple[Any, str]]:
    return layout.all_good_articles()


def slow_articles(layout: Layout, seconds: float) -> None:
    for portal in (layout.a, layout.b):
        portal.delay([path for p, path in articles(layout) if p is portal], seconds)


def duplicates_json(tmp_path: Path, srv: RedisServer) -> list[dict[str, Any]]:
    """``newscrawl duplicates --json`` against the crawl's Redis."""
    script = Path(sys.executable).with_name("newscrawl")  # the installed console script
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "newscrawl.cli"]
    proc = subprocess.run([*cmd, "duplicates", "--json"],
                          cwd=REPO, env=crawl_env(tmp_path, srv.url), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def finished(worker: Worker) -> CrawlResult:
    result = worker.wait(timeout=120)
    assert result.returncode == 0, result.log[-4000:]
    assert result.stats.get("finish_reason") == "finished", result.log[-4000:]
    return result


def assert_duplicates_recorded_once(layout: Layout, tmp_path: Path, srv: RedisServer) -> None:
    stored = stored_urls(tmp_path)
    records = duplicates_json(tmp_path, srv)
    assert len(records) == len(layout.reprint_groups), records
    by_url = {rec["url"]: rec for rec in records}
    assert len(by_url) == len(records)  # no pair recorded twice
    for group in layout.reprint_groups:
        urls = [url_of(p, path) for p, path in group]
        (kept,) = [u for u in urls if u in stored]  # no reprint stored
        (dropped,) = set(urls) - {kept}
        assert by_url[dropped]["original_url"] == kept
        assert by_url[dropped]["distance"] <= 3


def start_together(tmp_path: Path, sites: Path, settings: tuple[str, ...], redis_url: str,
                   workers: list[Worker], portals: list[MockPortal], n: int = 3) -> None:
    """Start ``n`` workers; the portals' start pages wait until all of them are in the run (on
    a loaded machine a late start could otherwise find the work done)."""
    for portal in portals:
        portal.hold(["/"])
    try:
        for i in range(n):
            workers.append(start_crawl(tmp_path, sites, *settings, redis_url=redis_url,
                                       log_path=tmp_path / f"w{i}.log"))
        wait_for(lambda: all(any(f"{how} crawl run" in w.log() for how in ("Started", "Joined"))
                             for w in workers[-n:]), timeout=90, what="the workers in the run")
    finally:
        for portal in portals:
            portal.release()


def test_three_workers_share_the_work_and_fetch_every_article_once(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    # Slow article pages and few slots per worker: no worker can take the whole queue alone.
    slow_articles(portals, 0.8)
    settings = (*FAST, "CONCURRENT_REQUESTS=3", "NEWSCRAWL_IDLE_EXIT_SECONDS=3")
    start_together(tmp_path, sites, settings, redis_server.url, workers, [portals.a, portals.b])
    results = [finished(w) for w in workers]
    hits = article_hits(articles(portals))
    assert set(hits.values()) == {1}, {u: n for u, n in hits.items() if n != 1}
    for result in results:  # every worker did part of the work
        assert result.stats.get("newscrawl/scheduler/dequeued", 0) > 0
        assert result.stats.get("newscrawl/pages/article", 0) > 0
    assert sum("Joined crawl run" in r.log for r in results) == 2
    assert portals.a.hit_counts()["/"] == 1 and portals.b.hit_counts()["/"] == 1
    assert_stored_once(portals, stored_urls(tmp_path))
    assert_duplicates_recorded_once(portals, tmp_path, redis_server)
    assert sum(r.stats.get("newscrawl/dedup/near_duplicate", 0) for r in results) == len(
        portals.reprint_groups)


def test_late_cron_worker_joins_the_running_run(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    slow_articles(portals, 0.8)
    settings = (*FAST, "CONCURRENT_REQUESTS=2", "NEWSCRAWL_IDLE_EXIT_SECONDS=2")
    first = start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                        log_path=tmp_path / "first.log")
    workers.append(first)
    wait_for(lambda: sum(article_hits(articles(portals)).values()) >= 3, timeout=60,
             what="the first worker fetching articles")
    # Hold the first worker's next article pages until the late worker has joined, so the
    # queue still has work for it however long a loaded machine takes to start it.
    for portal in (portals.a, portals.b):
        portal.hold(path for p, path in articles(portals) if p is portal)
    try:
        late = join_late(tmp_path, sites, settings, redis_url=redis_server.url,
                         workers=workers)
    finally:
        for portal in (portals.a, portals.b):
            portal.release()
    r_first, r_late = finished(first), finished(late)
    assert "Joined crawl run" in r_late.log and "Joined crawl run" not in r_first.log
    assert r_late.stats.get("newscrawl/scheduler/start_skipped", 0) == 2  # one per portal
    assert r_late.stats.get("newscrawl/pages/article", 0) > 0  # it took work from the queue
    # start pages fetched once in this run; every article once across both workers
    assert portals.a.hit_counts()["/"] == 1 and portals.b.hit_counts()["/"] == 1
    assert set(article_hits(articles(portals)).values()) == {1}
    assert_stored_once(portals, stored_urls(tmp_path))
    assert_duplicates_recorded_once(portals, tmp_path, redis_server)


def test_three_workers_together_keep_each_portals_concurrency_and_delay(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    # Pages answered after 1 s, 4 requests per worker: alone, each worker would keep 2 requests
    # at a portal and start them 0.25-0.75 s apart; three of them would triple both.
    slow_articles(portals, 1.0)
    # portal-b (the file's last site) overrides the concurrency in the sites file
    sites.write_text(sites.read_text(encoding="utf-8") + "concurrency = 1\n", encoding="utf-8")
    settings = (*FAST, "CONCURRENT_REQUESTS=4", "CONCURRENT_REQUESTS_PER_DOMAIN=2",
                "DOWNLOAD_DELAY=0.5", "NEWSCRAWL_IDLE_EXIT_SECONDS=3")
    start_together(tmp_path, sites, settings, redis_server.url, workers, [portals.a, portals.b])
    results = [finished(w) for w in workers]
    assert set(article_hits(articles(portals)).values()) == {1}
    assert sum(r.stats.get("newscrawl/scheduler/dequeued", 0) > 0 for r in results) >= 2
    # robots.txt: fetched once for the three workers (the others read it from Redis), by the
    # middleware, outside the scheduler's grant
    robots = ("/robots.txt",)
    assert portals.a.hit_counts()["/robots.txt"] == 1 and portals.b.hit_counts()["/robots.txt"] == 1
    assert sum(r.stats.get("newscrawl/robots/shared", 0) for r in results) >= 1
    for portal, limit in ((portals.a, 2), (portals.b, 1)):
        assert portal.most_at_once(exclude=robots) == limit
        gaps = portal.arrival_gaps(exclude=robots)
        # DOWNLOAD_DELAY 0.5 s jittered x0.5-1.5 between two grants. The portal sees each gap
        # plus the difference of two requests' way from the grant to it, which a loaded machine
        # stretches: a gap can shrink when the earlier request was late. Without the shared
        # delay every second request would follow the previous at once (half the gaps ~0).
        assert len(gaps) >= 5, gaps
        bunched = [g for g in gaps if g < 0.25 / 5]
        assert len(bunched) <= len(gaps) // 4, sorted(gaps)[:10]
    # a busy portal does not hold the other one back: their pages are fetched side by side
    spans = [(min(s for _, s, _ in p.answers), max(s for _, s, _ in p.answers))
             for p in (portals.a, portals.b)]
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]


# --- list-page walks shared by workers ---------------------------------------------------------


def list_paths(daily: DailyPortal) -> list[str]:
    return [daily.list_path(n) for n in range(1, daily.n_pages + 1)]


def test_two_workers_walk_one_site_together(
    tmp_path: Path, daily: DailyPortal, redis_server: RedisServer, workers: list[Worker],
) -> None:
    sites = tmp_path / "sites.toml"
    settings = (*FAST, "CONCURRENT_REQUESTS=2", "NEWSCRAWL_IDLE_EXIT_SECONDS=3")
    # day 1: 45 articles on 6 list pages, at most 4 list pages per walk
    daily.publish(45)
    daily.portal.delay(list_paths(daily), 0.5)
    sites.write_text(daily.sites_toml(max_list_pages=4), encoding="utf-8")
    for i in range(2):
        workers.append(start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                                   log_path=tmp_path / f"d1w{i}.log"))
    results = [finished(w) for w in workers]
    assert daily.list_hits() == {1: 1, 2: 1, 3: 1, 4: 1, 5: 0, 6: 0}
    assert sum(r.stats.get("newscrawl/sites/daily/pages/list", 0) for r in results) == 4
    assert sum(r.stats.get("newscrawl/lists/cap_reached", 0) for r in results) == 1
    # both workers' summaries give the run's figures, not their own share
    assert sum(r.stats.get("newscrawl/sites/daily/pages/article", 0) for r in results) == 32
    for result in results:
        assert ("Site daily: pages fetched start 1, list 4, sitemap 0, feed 0, article 32;"
                in result.log)
    # day 2: 30 new; both workers again, no cap: the new articles' pages plus one, once each
    workers.clear()
    before = daily.list_hits()
    new = daily.publish(30)
    daily.portal.delay(list_paths(daily), 0.5)
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    for i in range(2):
        workers.append(start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                                   log_path=tmp_path / f"d2w{i}.log"))
    results = [finished(w) for w in workers]
    after = daily.list_hits()
    read = {n for n, hits in after.items() if hits != before.get(n, 0)}
    assert read == {1, 2, 3, 4, 5}
    assert all(after[n] - before.get(n, 0) == 1 for n in read)
    hits = daily.portal.hit_counts()
    assert {p: hits.get(p, 0) for p in new} == {p: 1 for p in new}


def test_two_workers_store_the_originals_of_later_reprints(
    tmp_path: Path, daily: DailyPortal, redis_server: RedisServer, workers: list[Worker],
) -> None:
    from test_crawl_originals import publish_with_reprints

    originals, reprints = publish_with_reprints(daily)
    # list pages answer slowly, so both workers are busy while the walk goes on; article pages
    # in 0.2 s, as a portal's do: articles of one site keep no check order across workers (the
    # queue hands them out oldest first), so a reprint 26 articles later reaches the check
    # first only if a worker holds the original's response that long (a loaded CI host held
    # it for the ~0.3 s 26 loopback answers take)
    daily.portal.delay(list_paths(daily), 0.3)
    daily.portal.delay(daily.paths, 0.2)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    for i in range(2):
        # the default 4 requests per domain and worker (FAST allows 8)
        workers.append(start_crawl(tmp_path, sites, *FAST, "CONCURRENT_REQUESTS_PER_DOMAIN=4",
                                   "NEWSCRAWL_IDLE_EXIT_SECONDS=3", redis_url=redis_server.url,
                                   log_path=tmp_path / f"w{i}.log"))
    results = [finished(w) for w in workers]
    stored = set(stored_urls(tmp_path))
    url = daily.portal.url
    records = {rec["url"]: rec["original_url"] for rec in duplicates_json(tmp_path, redis_server)}
    # (the duplicate log says whether a missing original was dropped as late or lost)
    assert {url(p) for p in originals} <= stored, (records, [r.log[-3000:] for r in results])
    assert not {url(p) for p in reprints} & stored
    assert sum(r.stats.get("newscrawl/dedup/near_duplicate", 0) for r in results) == 4
    assert records == {url(r): url(o) for o, r in zip(originals, reprints, strict=True)}


def test_a_killed_worker_does_not_end_the_walk(
    tmp_path: Path, daily: DailyPortal, redis_server: RedisServer, workers: list[Worker],
) -> None:
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    daily.publish(45)
    daily.portal.delay(list_paths(daily), 2.0)
    settings = (*FAST, "NEWSCRAWL_IDLE_EXIT_SECONDS=2")
    first = start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                        log_path=tmp_path / "first.log")
    workers.append(first)
    # killed while its request for /list/2.html is in flight
    wait_for(lambda: daily.portal.hit_counts().get("/list/2.html", 0) >= 1, timeout=60,
             what="the first worker fetching /list/2.html")
    first.kill()
    daily.portal.delay(list_paths(daily), 0)
    second = start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                         log_path=tmp_path / "second.log")
    workers.append(second)
    result = finished(second)
    # the killed worker is known dead at once (its process is gone): the run is taken over and
    # the request it held goes back to the queue without waiting for its lease to expire
    assert "Took over crawl run" in result.log
    assert result.stats.get("newscrawl/scheduler/requeued_dead_worker", 0) >= 1
    assert result.stats.get("newscrawl/scheduler/requeued_expired", 0) == 0
    hits = daily.list_hits()
    assert all(hits[n] >= 1 for n in range(1, 7)), hits
    assert set(stored_urls(tmp_path)) == {daily.portal.url(p) for p in daily.paths}


def test_three_workers_keep_autothrottles_target_concurrency_together(
    tmp_path: Path, daily: DailyPortal, redis_server: RedisServer, workers: list[Worker],
) -> None:
    # Every page answered after 0.3 s, one request wanted in flight: each worker's own
    # AutoThrottle would ask every 0.3 s, and three of them would keep up to 3 in flight
    # (2.0-2.4 measured); the AutoThrottle delay shared by the grant keeps about 1 (0.97-1.08).
    daily.publish(16)
    daily.portal.delay(["/", *list_paths(daily), *daily.paths], 0.3)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    # 2 requests per worker: no worker takes the whole queue into its own downloader
    settings = (*FAST, "CONCURRENT_REQUESTS=2", "AUTOTHROTTLE_ENABLED=True",
                "AUTOTHROTTLE_TARGET_CONCURRENCY=1", "AUTOTHROTTLE_START_DELAY=0.2",
                "AUTOTHROTTLE_DEBUG=True", "NEWSCRAWL_IDLE_EXIT_SECONDS=1")
    # A worker granted a turn asks again first, the others back off (politeness.wake_for_turn):
    # on a loaded machine one worker can take every turn of a host allowed one request at a
    # time, and the scenario shows nothing shared. It is run afresh then, up to three times.
    for attempt in range(3):
        redis_server.client().flushall()
        daily.portal.forget_requests()
        (tmp_path / f"try{attempt}").mkdir()
        start_together(tmp_path / f"try{attempt}", sites, settings, redis_server.url, workers,
                       [daily.portal])
        results = [finished(w) for w in workers[-3:]]
        if sum(r.stats.get("newscrawl/scheduler/dequeued", 0) > 0 for r in results) >= 2:
            break
    assert sum(r.stats.get("newscrawl/scheduler/dequeued", 0) > 0 for r in results) >= 2
    assert {p: n for p, n in daily.portal.hit_counts().items() if p in daily.paths} == {
        p: 1 for p in daily.paths}
    # time-weighted, from the first article request to the end of the last one
    # (a loaded machine answers later and lowers it; only the upper bound is the limit's)
    mean = daily.portal.mean_at_once(daily.paths, exclude=("/robots.txt",))
    assert 0 < mean <= 1.5, mean
    # AUTOTHROTTLE_DEBUG: each worker logs the moves of the shared delay its responses made
    moves = [line for r in results for line in r.log.splitlines() if "(shared) | delay:" in line]
    assert len(moves) >= len(daily.paths), moves[:3]


def test_a_redis_pause_longer_than_the_heartbeat_declares_no_worker_dead(
    tmp_path: Path, portals: Layout, sites: Path, redis_server: RedisServer,
    workers: list[Worker],
) -> None:
    # Redis stopped (SIGSTOP) for 5 s with a heartbeat of 2 s: every heartbeat runs out in the
    # pause. The first worker back must not take the other, still fetching, for dead: its
    # requests would be fetched twice.
    import os
    import signal
    import time

    slow_articles(portals, 1.0)
    # (leases of 30 s: the pause does not outlast them, as it does not the default 120 s)
    settings = (*FAST, "CONCURRENT_REQUESTS=3", "NEWSCRAWL_IDLE_EXIT_SECONDS=3",
                "NEWSCRAWL_HEARTBEAT_SECONDS=2", "NEWSCRAWL_LEASE_SECONDS=30")
    start_together(tmp_path, sites, settings, redis_server.url, workers, [portals.a, portals.b],
                   n=2)
    wait_for(lambda: sum(article_hits(articles(portals)).values()) >= 4, timeout=60,
             what="both workers fetching articles")
    assert redis_server.proc is not None
    os.kill(redis_server.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(5)
    finally:
        os.kill(redis_server.proc.pid, signal.SIGCONT)
    results = [finished(w) for w in workers]
    hits = article_hits(articles(portals))
    assert set(hits.values()) == {1}, {u: n for u, n in hits.items() if n != 1}
    assert sum(r.stats.get("newscrawl/scheduler/requeued_dead_worker", 0) for r in results) == 0
    assert_stored_once(portals, stored_urls(tmp_path))
