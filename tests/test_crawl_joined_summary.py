"""The summary of a worker that joined a running run: the run's figures (start pages included,
which that worker skipped), under a header that says it joined and who queued the start pages.
Two real ``scrapy crawl portal`` workers on one redis-server against a mock portal."""

from __future__ import annotations

from pathlib import Path

from crawlrun import FAST, IN_PROCESS, Worker, join_late, start_crawl, wait_for
from mockportal import DailyPortal, MockPortal
from redisserver import RedisServer

JOINED = "; this worker joined the run, whose first worker queued the start pages):"


def test_a_joined_workers_summary_says_it_joined(
    tmp_path: Path, portal: MockPortal, redis_server: RedisServer, workers: list[Worker],
) -> None:
    daily = DailyPortal(portal, per_page=8, home=5)
    daily.publish(10)
    portal.delay(daily.paths, 0.3)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    settings = (*FAST, IN_PROCESS, "CONCURRENT_REQUESTS=2", "NEWSCRAWL_IDLE_EXIT_SECONDS=2")
    first = start_crawl(tmp_path, sites, *settings, redis_url=redis_server.url,
                        log_path=tmp_path / "first.log")
    workers.append(first)
    wait_for(lambda: sum(portal.hit_counts().get(p, 0) for p in daily.paths) >= 2, timeout=60,
             what="the first worker fetching articles")
    portal.hold(daily.paths)  # the run stays open however slow the late start is
    try:
        late = join_late(tmp_path, sites, settings, redis_url=redis_server.url,
                         workers=workers)
    finally:
        portal.release()
    r_first, r_late = first.wait(), late.wait()
    assert r_first.returncode == 0 and r_late.returncode == 0, r_late.log[-3000:]
    assert r_late.stats.get("newscrawl/scheduler/start_skipped", 0) == 1
    assert portal.hit_counts()["/"] == 1
    headers = {name: [line for line in result.log.splitlines() if "Summary of run" in line]
               for name, result in (("first", r_first), ("late", r_late))}
    assert len(headers["late"]) == 1 and headers["late"][0].endswith(
        "(the run's figures so far, all workers" + JOINED), headers
    assert len(headers["first"]) == 1 and headers["first"][0].endswith(
        "(the run's figures so far, all workers):"), headers
    # the site line itself is unchanged: the run's figures, its one start page included
    assert "Site daily: pages fetched start 1, list " in r_late.log
