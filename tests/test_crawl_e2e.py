"""Three real ``scrapy crawl portal`` runs against the mock portals, embedded Redis, temp data dir.

1. First crawl: every distinct article stored once, reprints/exact copies dropped and recorded,
   every troublesome page a counted outcome, robots.txt and list depth respected.
2. Unchanged second run: start pages and the first list page (nothing new on it: the walk stops,
   ``stop_after_known = 1``) visited again, no article page fetched.
3. After adding two articles: exactly those two article pages fetched and stored.

The three runs happen once for the module (``runs``); each test checks one thing of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from crawlrun import CrawlResult, run_crawl
from mockportal import INVALID_LINKS, Article, Layout, MockPortal, build_portals, sites_toml
from redisserver import embedded_servers

from newscrawl.connection import get_client
from newscrawl.index import DuplicateLog
from newscrawl.storage import iter_articles

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "DOWNLOAD_MAXSIZE=200000",
            "CONCURRENT_REQUESTS_PER_DOMAIN=8")
NEW = ("/a/501.html", "/a/502.html")  # added before run 3: one on each portal


def key(portal: MockPortal, path: str) -> str:
    return portal.url(path)


def stored(workdir: Path) -> list[dict[str, Any]]:
    return list(iter_articles(workdir / "data" / "articles"))


def article_hits(paths: list[tuple[MockPortal, str]]) -> dict[str, int]:
    return {key(p, path): p.hit_counts().get(path, 0) for p, path in paths}


@dataclass
class Runs:
    layout: Layout
    results: list[CrawlResult] = field(default_factory=list)
    redis_left: list[int] = field(default_factory=list)  # embedded redis-servers after run 1
    items: list[dict[str, Any]] = field(default_factory=list)  # stored after run 1
    records: dict[str, Any] = field(default_factory=dict)  # duplicate records after run 1
    hits_a: dict[str, int] = field(default_factory=dict)  # portal a's hits after run 1
    articles_1: dict[str, int] = field(default_factory=dict)  # article hits after run 1
    articles_2: dict[str, int] = field(default_factory=dict)
    articles_3: dict[str, int] = field(default_factory=dict)
    lists_1: dict[str, int] = field(default_factory=dict)  # portal a's list hits after run 1
    lists_2: dict[str, int] = field(default_factory=dict)
    stored_2: int = 0
    stored_3: list[str] = field(default_factory=list)

    @property
    def by_url(self) -> dict[str, dict[str, Any]]:
        return {str(item["url"]): item for item in self.items}

    @property
    def expected(self) -> set[str]:
        """What run 1 should store: the distinct articles and one copy of each reprint."""
        by_url = self.by_url
        return {key(p, path) for p, path in self.layout.unique} | {
            u for g in self.layout.reprint_groups for u in (key(p, path) for p, path in g)
            if u in by_url}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    a, b = MockPortal("127.0.0.1").start(), MockPortal("127.0.0.2").start()
    try:
        layout = build_portals(a, b)
        work = tmp_path_factory.mktemp("e2e")
        sites = work / "sites.toml"
        sites.write_text(sites_toml(a, b, max_list_depth=2), encoding="utf-8")
        out = Runs(layout)
        good = layout.all_good_articles()
        new = [(a, NEW[0]), (b, NEW[1])]
        # run 1, every warning shown (Python hides DeprecationWarning outside __main__)
        out.results.append(run_crawl(work, sites, *SETTINGS, env={"PYTHONWARNINGS": "default"}))
        out.redis_left = embedded_servers(work / "data")
        out.items = stored(work)
        client = get_client(data_dir=work / "data")
        try:
            out.records = {rec.url: rec for rec in DuplicateLog(client).list()}
        finally:
            client.connection_pool.disconnect()
        out.hits_a = a.hit_counts()
        out.articles_1 = article_hits(good)
        out.lists_1 = {p: a.hit_counts().get(p, 0) for p in layout.a_lists}
        # run 2: nothing changed
        out.results.append(run_crawl(work, sites, *SETTINGS))
        out.articles_2 = article_hits(good)
        out.lists_2 = {p: a.hit_counts().get(p, 0) for p in layout.a_lists}
        out.stored_2 = len(stored(work))
        # run 3: two new articles
        a.add_article(NEW[0], Article.generate("new-501"))
        a.add_link("/list/1.html", NEW[0])
        b.add_article(NEW[1], Article.generate("new-502"))
        b.add_link("/", NEW[1])
        out.results.append(run_crawl(work, sites, *SETTINGS))
        out.articles_3 = article_hits(good + new)
        out.stored_3 = [str(item["url"]) for item in stored(work)]
        yield out
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("run", [1, 2, 3])
def test_each_run_finishes_and_exits_0(runs: Runs, run: int) -> None:
    result = runs.results[run - 1]
    assert result.returncode == 0, result.log[-4000:]
    assert "Spider closed (finished)" in result.log


def test_first_run_logs_no_deprecation_warning_of_ours_or_scrapys(runs: Runs) -> None:
    deprecations = [line for line in runs.results[0].log.splitlines()
                    if "DeprecationWarning" in line
                    and ("/newscrawl/" in line or "ScrapyDeprecationWarning" in line)]
    assert not deprecations, deprecations


def test_first_run_stops_its_embedded_redis(runs: Runs) -> None:
    # the index's connection did not keep it running
    assert runs.redis_left == []


def test_first_run_stores_each_distinct_article_once_decoded(runs: Runs) -> None:
    layout, by_url = runs.layout, runs.by_url
    urls = [str(item["url"]) for item in runs.items]
    assert len(urls) == len(set(urls)), "an article was stored twice"
    for portal, path in layout.unique:
        item = by_url[key(portal, path)]
        article = portal.articles[path]
        assert item["title"] == article.title
        assert article.paragraphs[1] in str(item["text"])  # decoded right (GBK pages too)
        assert isinstance(item["simhash"], str) and len(item["simhash"]) == 16
        assert item["site"] == ("portal-a" if portal is layout.a else "portal-b")
    # nothing else stored (no_body, PDF, 404, loop, oversize)
    assert set(by_url) == runs.expected
    assert key(layout.a, "/a/205.html") not in by_url  # no encoding reads it: not mojibake


def test_first_run_keeps_one_copy_of_each_reprint_and_records_the_other(runs: Runs) -> None:
    by_url, records = runs.by_url, runs.records
    for group in runs.layout.reprint_groups:
        group_urls = [key(p, path) for p, path in group]
        kept = [u for u in group_urls if u in by_url]
        assert len(kept) == 1, (group_urls, kept)
        (dropped,) = set(group_urls) - set(kept)
        assert records[dropped].original_url == kept[0]
        assert records[dropped].distance <= 3
    assert len(records) == len(runs.layout.reprint_groups)
    stats = runs.results[0].stats
    assert stats["newscrawl/dedup/near_duplicate"] == len(runs.layout.reprint_groups)
    assert stats["newscrawl/dedup/unique"] == len(runs.expected)
    assert stats["newscrawl/store/stored"] == len(runs.expected)


def test_first_run_obeys_robots_and_the_list_depth(runs: Runs) -> None:
    assert all(runs.hits_a.get(path, 0) == 0 for _, path in runs.layout.disallowed)
    assert all(runs.hits_a.get(path, 0) == 0 for _, path in runs.layout.too_deep)
    stats = runs.results[0].stats
    assert stats["newscrawl/download/robots_forbidden"] == len(runs.layout.disallowed)


def test_first_run_counts_each_troublesome_page(runs: Runs) -> None:
    stats, layout = runs.results[0].stats, runs.layout
    # the start page's unparsable links were skipped and counted, the links after them followed
    assert stats["newscrawl/links/invalid"] == len(INVALID_LINKS)
    assert stats["newscrawl/extract/no_body"] == len(layout.no_body)
    assert stats["newscrawl/extract/not_html"] == 1
    # and the site's summary line says so (else its links "new" would not add up)
    assert ", not HTML (skipped) 1" in runs.results[0].log
    assert stats["newscrawl/extract/mojibake"] == len(layout.mojibake)
    assert stats["newscrawl/download/failed/http_404"] == 1
    assert stats["newscrawl/download/failed/redirect_loop"] == 1
    assert stats["newscrawl/download/failed/too_large"] == 1
    # one WARNING for it (ours, with what follows), not Scrapy's beside it
    sized = [line for line in runs.results[0].log.splitlines()
             if "larger than download max size" in line]
    assert len(sized) == 1 and "counted as a failed attempt" in sized[0], sized


def test_first_run_per_site_figures_match_the_summary_line(runs: Runs) -> None:
    r1, a = runs.results[0], runs.layout.a
    site_a = {k.removeprefix("newscrawl/sites/portal-a/"): v for k, v in r1.stats.items()
              if k.startswith("newscrawl/sites/portal-a/")}
    a_stored = sum(1 for u in runs.expected if u.startswith(a.base))
    assert site_a["pages/start"] == 1 and site_a["pages/list"] == 2
    assert site_a["stored"] == a_stored
    # which copy of a cross-portal reprint is kept depends on the fetch order
    a_dropped = sum(1 for u in runs.records if u.startswith(a.base))
    assert site_a["near_duplicate"] == a_dropped >= 1  # at least the exact copy /a/104.html
    assert r1.stats.get("newscrawl/sites/portal-b/near_duplicate", 0) == \
        len(runs.records) - a_dropped
    # 404, redirect loop, oversize; the video page without a body (retried by later runs)
    assert site_a["failed"] == site_a["failed/article"] == 4
    assert site_a["failed_by/download"] == 3 and site_a["failed_by/extraction"] == 1
    assert (f"Site portal-a: pages fetched start 1, list 2, sitemap 0, feed 0,"
            f" article {site_a['pages/article']}; article links seen {site_a['links/seen']},"
            f" new {site_a['links/new']}; stored {a_stored}, near-duplicates dropped"
            f" (not stored) {a_dropped}") in r1.log
    # and one line adds the sites up
    [total] = [line for line in r1.log.splitlines() if "INFO: All 2 sites: " in line]
    assert f"; stored {len(runs.expected)}, near-duplicates dropped (not stored)" \
        f" {len(runs.records)}," in total, total
    assert "fetched nothing" not in total


def test_first_run_logs_drops_at_info_and_no_debug(runs: Runs) -> None:
    log = runs.results[0].log
    # no DEBUG lines by default, no embedded Redis configuration, near-duplicates at INFO
    assert " DEBUG: " not in log
    assert "Using configuration" not in log
    dropped = [line for line in log.splitlines() if "Dropped " in line]
    assert len(dropped) == len(runs.layout.reprint_groups)
    assert all("INFO: Dropped http" in line and "near-duplicate of" in line for line in dropped)


def test_unchanged_second_run_fetches_no_article_and_stops_at_a_known_list(runs: Runs) -> None:
    assert runs.articles_2 == runs.articles_1, "an article page was fetched again"
    # /list/1.html showed nothing new: its link to /list/2.html is not followed
    before = runs.lists_1
    assert runs.lists_2 == {
        "/": before["/"] + 1, "/list/1.html": before["/list/1.html"] + 1,
        "/list/2.html": before["/list/2.html"],
    }
    r2 = runs.results[1]
    assert r2.stats["newscrawl/lists/stopped_at_known"] >= 1
    assert ("Site portal-a: pages fetched start 1, list 1, sitemap 0, feed 0, article 1;"
            in r2.log)
    assert runs.stored_2 == len(runs.expected)


def test_second_run_retries_the_pages_that_failed_before(runs: Runs) -> None:
    # the 404, the redirect loop (under the URL as linked), the oversize page and the video page
    # without a body, wherever they sit
    log = runs.results[1].log
    assert "Queued 4 requests that failed in earlier runs" in log
    assert "failed 4 (article 4; download 3, extraction 1)" in log
    loops = [line for line in log.splitlines() if "failed: redirect_loop" in line]
    assert len(loops) == 1 and "/a/303.html failed" in loops[0], loops


def test_third_run_fetches_and_stores_only_the_new_articles(runs: Runs) -> None:
    layout = runs.layout
    new = {key(layout.a, NEW[0]), key(layout.b, NEW[1])}
    fetched = {u for u, n in runs.articles_3.items() if n != runs.articles_1.get(u, 0)}
    assert fetched == new
    assert all(runs.articles_3[u] == 1 for u in new)
    assert len(runs.stored_3) == len(set(runs.stored_3)) == len(runs.expected) + 2
    assert runs.results[2].stats["newscrawl/dedup/unique"] == 2
