"""The summary of a run that took over a stopped one counts that run's queued articles as new:
after Ctrl-C and a rerun, "article links seen N, new M; stored K" adds up (real ``scrapy crawl
portal`` processes on the embedded Redis, a portal on loopback)."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from crawlrun import FAST, IN_PROCESS, run_crawl, start_crawl, stored_urls, wait_for
from mockportal import DailyPortal


def summary(log: str, site: str = "daily") -> dict[str, int]:
    """The figures of the site's summary line (the run's, all workers)."""
    line = next(ln for ln in log.splitlines() if f"INFO: Site {site}: pages fetched" in ln)
    found = re.search(r"article links seen (\d+), new (\d+); stored (\d+), near-duplicates "
                      r"dropped \(not stored\) "
                      r"(\d+), failed (\d+)", line)
    assert found, line
    seen, new, stored, near, failed = map(int, found.groups())
    return {"seen": seen, "new": new, "stored": stored, "near": near, "failed": failed}


def test_a_run_that_takes_over_counts_the_articles_it_finishes_as_new(
    tmp_path: Path, daily: DailyPortal, workers: list
) -> None:
    daily.publish(20)
    daily.portal.delay(daily.paths, 1.0)
    sites = tmp_path / "sites.toml"
    sites.write_text(daily.sites_toml(), encoding="utf-8")
    first = start_crawl(tmp_path, sites, *FAST, IN_PROCESS, "CONCURRENT_REQUESTS=2",
                        log_path=tmp_path / "first.log")
    workers.append(first)
    hits = lambda: sum(daily.portal.hit_counts().get(p, 0) for p in daily.paths)  # noqa: E731
    wait_for(lambda: hits() >= 3, timeout=60, what="the first articles fetched")
    first.proc.send_signal(signal.SIGINT)  # Ctrl-C: in-flight articles finished, the rest queued
    stopped = first.wait(60)
    assert stopped.stats["finish_reason"] == "shutdown", stopped.log[-3000:]
    stored_first = len(stored_urls(tmp_path))
    assert 0 < stored_first < 20

    daily.portal.delay(daily.paths, 0)
    again = run_crawl(tmp_path, sites, *FAST, IN_PROCESS, timeout=90)
    assert again.returncode == 0, again.log[-4000:]
    assert "Took over crawl run" in again.log, again.log[-4000:]
    figures = summary(again.log)
    # every article stored once over the two runs; the rerun stored the rest
    stored = stored_urls(tmp_path)
    assert len(stored) == 20 and max(stored.values()) == 1
    assert figures["stored"] == 20 - stored_first, figures
    # the articles the stopped run queued are new for the run that finished them
    assert figures["new"] == figures["stored"] + figures["near"] + figures["failed"], figures
    # those it read links to itself are among the links it saw; the rest it took over (its walk
    # stops early when the list pages' links were fetched meanwhile)
    inherited = again.stats.get("newscrawl/sites/daily/links/inherited", 0)
    assert inherited > 0, again.log[-3000:]
    assert figures["seen"] >= figures["new"] - inherited, (figures, inherited)
