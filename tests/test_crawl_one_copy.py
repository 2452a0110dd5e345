"""One copy of each story, and it is the original: real ``scrapy crawl portal`` runs against two
mock portals on loopback, a news source and a portal that reprints it hours later and whose
walk is shorter (so, walked alone, its reprints would be met first).

Checked after every crawl: no URL is both stored and in the duplicate log, no stored article is
a recorded near-duplicate of another stored one, and every story is stored exactly once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crawlrun import (
    IN_PROCESS,
    REPO,
    CrawlResult,
    Worker,
    crawl_env,
    run_crawl,
    start_crawl,
    stored_urls,
    wait_for,
)
from mockportal import MockPortal, TwoPortals
from redisserver import RedisServer

pytestmark = pytest.mark.slow

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "CONCURRENT_REQUESTS_PER_DOMAIN=8",
            "CONCURRENT_REQUESTS=16", IN_PROCESS)


@pytest.fixture
def portals() -> Iterator[tuple[MockPortal, MockPortal]]:
    src, re = MockPortal("127.0.0.1").start(), MockPortal("127.0.0.2").start()
    try:
        yield src, re
    finally:
        src.stop()
        re.stop()


def newscrawl_json(tmp_path: Path, command: str, redis_url: str | None = None
                   ) -> list[dict[str, Any]]:
    script = Path(sys.executable).with_name("newscrawl")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "newscrawl.cli"]
    proc = subprocess.run([*cmd, command, "--json"], cwd=tmp_path,
                          env=crawl_env(tmp_path, redis_url), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert REPO.exists()
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def check_one_copy(tmp_path: Path, two: TwoPortals, redis_url: str | None = None
                   ) -> tuple[int, int]:
    """Every story stored once, nothing both stored and in the duplicate log, the log's late
    originals exactly the stories whose reprint is stored. Returns (originals kept, stories)."""
    stored = stored_urls(tmp_path)
    twice = {u: n for u, n in stored.items() if n > 1}
    assert not twice, twice
    records = newscrawl_json(tmp_path, "duplicates", redis_url)
    logged = {r["url"] for r in records}
    assert not logged & set(stored), "a URL in the duplicate log is in the store"
    for record in records:
        assert record["original_url"] in stored, record
    kept = 0
    for story in two.stories:
        urls = {two.src.url(story.original)}
        if story.reprint is not None:
            urls.add(two.re.url(story.reprint))
        in_store = urls & set(stored)
        assert len(in_store) == 1, (story, in_store)
        if story.reprint is None:
            continue
        original, reprint = two.src.url(story.original), two.re.url(story.reprint)
        if original in stored:
            kept += 1
            assert logged >= {reprint}
            assert not next(r for r in records if r["url"] == reprint)["late_original"]
        else:
            late = next(r for r in records if r["url"] == original)
            assert late["late_original"] and late["published_first"] == "duplicate", late
    for path in two.own:
        assert two.re.url(path) in stored
    late_count = sum(1 for r in records if r.get("late_original"))
    assert late_count == len(two.reprinted()) - kept
    clusters = newscrawl_json(tmp_path, "clusters", redis_url)
    assert sum(1 for c in clusters if not c["original_stored"]) == late_count
    return kept, len(two.reprinted())


def crawled(result: CrawlResult) -> CrawlResult:
    assert result.returncode == 0, result.log[-4000:]
    assert result.stats.get("finish_reason") == "finished", result.log[-4000:]
    return result


def test_dated_links_fetch_originals_first_across_sites(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """URLs carry the day and list rows the time: the originals are fetched before their
    reprints although the reprinting portal comes first in the file and its walk is shorter."""
    two = TwoPortals(*portals, dated=True, times=True).build()
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml(), encoding="utf-8")
    result = crawled(run_crawl(tmp_path, sites, *SETTINGS))
    kept, total = check_one_copy(tmp_path, two)
    assert kept >= 19, f"{kept} of {total} originals kept"
    assert result.stats["newscrawl/dedup/near_duplicate"] == total - result.stats.get(
        "newscrawl/dedup/late_original", 0)
    assert "Summary of run" in result.log
    assert "near-duplicates dropped (not stored)" in result.log


def test_a_reprint_known_by_its_day_waits_for_a_timed_original_of_that_day(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """The source's list rows print times; the reprinting portal, ranked first, gives only
    the day in its URLs, which counts from 00:00: a same-day reprint comes before its original
    in the run's order, and waits for it at the check."""
    two = TwoPortals(*portals, dated=True, times=True, re_times=False).build()
    same_day = [s for s in two.reprinted() if s.reprinted is not None
                and s.reprinted.date() == s.published.date()]
    assert len(same_day) >= 5, len(same_day)  # the case this test is about
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml(), encoding="utf-8")
    crawled(run_crawl(tmp_path, sites, *SETTINGS))
    kept, total = check_one_copy(tmp_path, two)
    assert kept >= 19, f"{kept} of {total} originals kept"


def test_undated_links_follow_the_sites_rank(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """No date anywhere before fetching: the source portal, ranked first though listed second,
    has its articles fetched first."""
    two = TwoPortals(*portals, dated=False, times=False).build()
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml(src_rank=1), encoding="utf-8")
    crawled(run_crawl(tmp_path, sites, *SETTINGS))
    kept, total = check_one_copy(tmp_path, two)
    assert kept >= 19, f"{kept} of {total} originals kept"


def test_a_sitemaps_dates_order_its_links_among_other_sites(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """The source is read from a sitemap (lastmod times, no list page), the reprinting portal
    from list rows with times: the sitemap's dates put the originals first."""
    two = TwoPortals(*portals, dated=False, times=True).build()
    sitemap = two.sitemap()
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml().replace(
        f'start_urls = ["{two.src.base}/"]', f'sitemap_urls = ["{sitemap}"]'), encoding="utf-8")
    result = crawled(run_crawl(tmp_path, sites, *SETTINGS))
    assert result.stats.get("newscrawl/pages/start", 0) == 1  # the reprinting portal's only
    kept, total = check_one_copy(tmp_path, two)
    assert kept >= 19, f"{kept} of {total} originals kept"


def test_three_workers_store_one_copy_of_each_story(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal],
        redis_server: RedisServer) -> None:
    """Three workers on one redis-server: the run's order holds across them, and the store and
    the duplicate log agree. Day-only dates, the reprinting portal ranked first: a reprint of
    the same day as its original ties on the day, and the reprint, naming its source, waits for
    the other site's articles of that day."""
    two = TwoPortals(*portals, dated=True, times=False).build()
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml(), encoding="utf-8")
    workers: list[Worker] = []
    try:
        for n in range(3):
            workers.append(start_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_IDLE_EXIT_SECONDS=3",
                                       redis_url=redis_server.url,
                                       log_path=tmp_path / f"worker{n}.log"))
        results = [crawled(w.wait(timeout=180)) for w in workers]
    finally:
        for w in workers:
            w.kill()
    hits = {**{two.src.url(p): n for p, n in two.src.hit_counts().items()},
            **{two.re.url(p): n for p, n in two.re.hit_counts().items()}}
    assert all(n == 1 for u, n in hits.items() if "/list/" not in u and u.endswith("html")), hits
    kept, total = check_one_copy(tmp_path, two, redis_server.url)
    assert kept >= 19, f"{kept} of {total} originals kept"
    assert sum(r.stats.get("newscrawl/lists/articles_released", 0) for r in results) == 66


def test_a_kill_during_discovery_loses_no_waiting_link(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """kill -9 while list pages are still being read (article links waiting in Redis), then an
    immediate rerun: every story stored once, originals first."""
    two = TwoPortals(*portals, dated=True, times=True).build()
    two.src.delay([f"/list/{n}.html" for n in range(3, 6)], 1.5)
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml(), encoding="utf-8")
    first = start_crawl(tmp_path, sites, *SETTINGS, log_path=tmp_path / "first.log")
    try:
        wait_for(lambda: two.src.hit_counts().get("/list/3.html", 0) >= 1, timeout=60,
                 what="list page 3 requested")
        time.sleep(0.3)
        assert not any("/doc-" in p for p in two.src.hit_counts()), "articles before discovery"
    finally:
        first.kill()
    rerun = crawled(run_crawl(tmp_path, sites, *SETTINGS))
    assert "took over" in rerun.log.lower() or "Took over" in rerun.log
    kept, total = check_one_copy(tmp_path, two)
    assert kept >= 19, f"{kept} of {total} originals kept"


def test_articles_left_queued_by_a_killed_run_keep_their_order_in_the_rerun(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """kill -9 once the run's article links are queued and the first are in flight; in the
    rerun the source answers slowly and the reprinting portal fast. The links the killed run
    numbered keep their order at the check (the rerun numbers them again, ahead of its own),
    so the reprints wait for their originals: without it they reached the check first."""
    two = TwoPortals(*portals, dated=True, times=True).build()
    src_articles = [story.original for story in two.stories]
    re_articles = [p for story in two.stories if (p := story.reprint) is not None] + two.own
    two.src.hold(src_articles)
    two.re.hold(re_articles)
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml(), encoding="utf-8")
    first = start_crawl(tmp_path, sites, *SETTINGS, log_path=tmp_path / "first.log")
    try:
        wait_for(lambda: sum(two.src.hit_counts().get(p, 0) for p in src_articles)
                 + sum(two.re.hit_counts().get(p, 0) for p in re_articles) >= 4, timeout=60,
                 what="the first articles requested")
    finally:
        first.kill()
        two.src.release()
        two.re.release()
    two.src.delay(src_articles, 0.5)
    rerun = crawled(run_crawl(tmp_path, sites, *SETTINGS))
    assert "keep their order at the near-duplicate check" in rerun.log
    kept, total = check_one_copy(tmp_path, two)
    assert kept >= 19, f"{kept} of {total} originals kept"


def test_a_graceful_stop_keeps_the_turn_of_originals_in_flight_and_says_what_it_cannot_keep(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """SIGTERM while the reprints wait for their originals: the source, one request at a time,
    is answering one original; the others are queued. The stop finishes that download, and the
    reprints wait for it (its reprint is dropped, the original stored); then, with nothing left
    to download, the reprints of originals this run will not fetch are checked out of their
    turn (their pages are here; keeping them for the next run would fetch them again). The log
    says so once, and what it costs: an original met later is recorded as a late original."""
    import signal

    two = TwoPortals(*portals, dated=True, times=True).build()
    src_articles = [story.original for story in two.stories]
    reprints = [p for story in two.stories if (p := story.reprint) is not None]
    two.src.hold(src_articles)
    sites = tmp_path / "sites.toml"
    sites.write_text(two.sites_toml() + "concurrency = 1\n", encoding="utf-8")  # for src
    worker = start_crawl(tmp_path, sites, *SETTINGS, log_path=tmp_path / "crawl.log")
    try:
        wait_for(lambda: sum(two.re.hit_counts().get(p, 0) for p in reprints) >= 3
                 and any(two.src.hit_counts().get(p, 0) for p in src_articles), timeout=60,
                 what="reprints fetched while an original is in flight")
        time.sleep(1.0)  # the fetched reprints reach the check and wait for their originals
        (in_flight,) = [p for p in src_articles if two.src.hit_counts().get(p, 0)]
        worker.proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)  # the reprints wait on: a download is still under way
        assert "out of their turn" not in worker.log()
    finally:
        two.src.release()
    result = worker.wait(90)
    assert result.returncode == 0, result.log[-3000:]
    (warning,) = [line for line in result.log.splitlines() if "out of their turn" in line]
    assert "WARNING" in warning and "records the original as a late original" in warning
    assert result.stats["newscrawl/dedup/order_wait_stopping"] >= 1
    story = next(s for s in two.stories if s.original == in_flight)
    stored = stored_urls(tmp_path)
    assert two.src.url(in_flight) in stored
    assert story.reprint is None or two.re.url(story.reprint) not in stored


def test_a_big_page_waiting_for_its_turn_does_not_stall_the_worker(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """A page larger than Scrapy's scraper slot (SCRAPER_SLOT_MAX_ACTIVE_SIZE, 5 MB) that waits
    for another site's earlier articles stops the worker from fetching any page, those it waits
    for included: it goes through the check at once, and the other articles follow without
    waiting out NEWSCRAWL_CHECK_ORDER_WAIT."""
    from mockportal import Article, Page, html_page, list_html

    src, big = portals
    paths = [f"/a/{n}.html" for n in range(1, 5)]
    for n, path in enumerate(paths):
        src.add_article(path, Article.generate(f"src-{n}"))
    src.set("/", html_page(list_html("首页", paths)))
    src.delay(paths, 1.0)
    article = Article.generate("big-1")
    padding = "<!-- " + "x" * 6_000_000 + " -->"  # 6 MB: the scraper slot's bound is 5 MB
    big.set("/b/1.html", Page(article.html().replace("</body>", padding + "</body>")
                              .encode("utf-8")))
    big.set("/", html_page(list_html("首页", ["/b/1.html"])))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        f'[[sites]]\nname = "src"\nstart_urls = ["{src.url("/")}"]\n'
        "article_url = '/a/\\d+\\.html$'\nconcurrency = 1\n\n"
        f'[[sites]]\nname = "big"\nstart_urls = ["{big.url("/")}"]\n'
        "article_url = '/b/\\d+\\.html$'\n", encoding="utf-8")
    started = time.monotonic()
    # its response over NEWSCRAWL_CHECK_ORDER_MEMORY: counted in the slot while it waits
    result = crawled(run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_CHECK_ORDER_WAIT=30",
                               "NEWSCRAWL_CHECK_ORDER_MEMORY=1000000"))
    elapsed = time.monotonic() - started
    assert set(stored_urls(tmp_path)) == {src.url(p) for p in paths} | {big.url("/b/1.html")}
    assert result.stats.get("newscrawl/dedup/order_wait_expired", 0) == 0, result.log[-3000:]
    assert result.stats["newscrawl/dedup/order_wait_full"] >= 1
    assert "fill Scrapy's scraper slot" in result.log
    assert elapsed < 25, f"{elapsed:.0f} s: the worker waited out NEWSCRAWL_CHECK_ORDER_WAIT"


def test_articles_waiting_for_their_turn_do_not_hold_back_the_downloads(
        tmp_path: Path, portals: tuple[MockPortal, MockPortal]) -> None:
    """A site's articles wait at the check for an earlier site's article that is slow to come;
    their responses together pass Scrapy's scraper slot (5 MB), which would stop every download
    until the slow one came or NEWSCRAWL_CHECK_ORDER_WAIT ran out. Within
    NEWSCRAWL_CHECK_ORDER_MEMORY they are not counted there: the worker fetches all of them
    meanwhile, and they are still checked after the slow article, in the run's order."""
    from mockportal import Article, Page, html_page, list_html

    src, big = portals
    src.add_article("/a/1.html", Article.generate("slow-source-1"))
    src.set("/", html_page(list_html("首页", ["/a/1.html"])))
    src.hold(["/a/1.html"])
    paths = [f"/b/{n}.html" for n in range(1, 21)]
    padding = "<!-- " + "x" * 700_000 + " -->"  # 20 pages of 0.7 MB: 14 MB waiting
    for n, path in enumerate(paths):
        article = Article.generate(f"big-{n}")
        big.articles[path] = article
        big.set(path, Page(article.html().replace("</body>", padding + "</body>")
                           .encode("utf-8")))
    big.set("/", html_page(list_html("首页", paths)))
    sites = tmp_path / "sites.toml"
    sites.write_text(
        f'[[sites]]\nname = "src"\nstart_urls = ["{src.url("/")}"]\n'
        "article_url = '/a/\\d+\\.html$'\n\n"
        f'[[sites]]\nname = "big"\nstart_urls = ["{big.url("/")}"]\n'
        "article_url = '/b/\\d+\\.html$'\n", encoding="utf-8")
    crawl = start_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_CHECK_ORDER_WAIT=60",
                        "CONCURRENT_REQUESTS_PER_DOMAIN=2", log_path=tmp_path / "crawl.log")
    try:
        wait_for(lambda: all(big.hit_counts().get(p, 0) == 1 for p in paths), timeout=40,
                 what="every waiting site's page fetched while the source's article is held")
        assert stored_urls(tmp_path) == {}  # none checked out of its turn
        src.release()
        result = crawled(crawl.wait(timeout=90))
    finally:
        crawl.kill()
    assert set(stored_urls(tmp_path)) == {src.url("/a/1.html")} | {big.url(p) for p in paths}
    assert result.stats.get("newscrawl/dedup/order_wait_expired", 0) == 0
    assert result.stats.get("newscrawl/dedup/order_wait_full", 0) == 0
    # the source's article was checked (and stored) first
    from newscrawl.storage import iter_articles

    order = [str(item["url"]) for item in iter_articles(tmp_path / "data" / "articles")]
    assert order[0] == src.url("/a/1.html"), order

